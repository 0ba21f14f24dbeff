import { describe, expect, it } from 'vitest';
import { assertCallerIsInstance, claimedSender } from '../../../lambdas/handlers/caller-identity';
import { IngestRequestError } from '../../../lambdas/handlers/errors';

describe('claimedSender', () => {
  it.each<[string, unknown, ReturnType<typeof claimedSender>]>([
    [
      'a well-formed host',
      { host: { instance_id: 'i-0abc12345def67890', region: 'eu-west-1' } },
      { instanceId: 'i-0abc12345def67890', region: 'eu-west-1' },
    ],
    [
      'a malformed instance id',
      { host: { instance_id: 'i-xyz', region: 'eu-west-1' } },
      { region: 'eu-west-1' },
    ],
    [
      'a malformed region',
      { host: { instance_id: 'i-0abc1234', region: 'EU' } },
      { instanceId: 'i-0abc1234' },
    ],
    ['no host', { seq: 1 }, {}],
    ['a host that is not an object', { host: 'i-0abc1234' }, {}],
    ['not an object at all', null, {}],
  ])('reads %s', (_name, json, claim) => {
    expect(claimedSender(json)).toEqual(claim);
  });
});

describe('assertCallerIsInstance', () => {
  it('lets an instance send for itself', () => {
    expect(() =>
      assertCallerIsInstance(
        'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1',
        'i-0a5e00000000000a1',
      ),
    ).not.toThrow();
  });

  it('refuses another instance with IngestRequestError 403 naming host.instance_id', () => {
    try {
      assertCallerIsInstance(
        'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0bbbbbbbbbbbbbbb2',
        'i-0a5e00000000000a1',
      );
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(IngestRequestError);
      expect(err).toMatchObject({ status: 403, path: 'host.instance_id' });
      expect((err as Error).message).toMatch(/may not send for i-0a5e00000000000a1/);
    }
  });
});
