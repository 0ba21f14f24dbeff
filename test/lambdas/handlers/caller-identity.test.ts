import { describe, expect, it } from 'vitest';
import { assertCallerIsInstance, assumedRoleSessionName } from '../../../lambdas/handlers/caller-identity';
import { IngestRequestError } from '../../../lambdas/handlers/errors';

describe('caller identity', () => {
  it.each([
    ['arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1', 'i-0a5e00000000000a1'],
    ['arn:aws-us-gov:sts::123456789012:assumed-role/R/i-0abc1234', 'i-0abc1234'],
    ['arn:aws:iam::123456789012:user/alice', undefined],
    ['arn:aws:sts::123456789012:federated-user/bob', undefined],
    [null, undefined],
  ])('reads the session name of %s', (arn, session) => {
    expect(assumedRoleSessionName(arn)).toBe(session);
  });

  it('lets an instance send for itself', () => {
    expect(() =>
      assertCallerIsInstance(
        'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1',
        'i-0a5e00000000000a1',
      ),
    ).not.toThrow();
  });

  it.each([
    [
      'another instance',
      'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0bbbbbbbbbbbbbbb2',
      /may not send for i-0a5e00000000000a1/,
    ],
    ['an IAM user', 'arn:aws:iam::123456789012:user/alice', /not an EC2 instance role session/],
    ['an anonymous caller', null, /\(anonymous\)/],
  ])('refuses %s with 403 naming host.instance_id', (_name, arn, message) => {
    try {
      assertCallerIsInstance(arn, 'i-0a5e00000000000a1');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(IngestRequestError);
      expect((err as IngestRequestError).status).toBe(403);
      expect((err as IngestRequestError).path).toBe('host.instance_id');
      expect((err as Error).message).toMatch(message);
    }
  });
});
