import { describe, expect, it, vi } from 'vitest';
import {
  InstanceLookupError,
  PortError,
  StoreQueryError,
  StoreUnavailableError,
} from '../../../lambdas/domain/port-errors';

/** A second, separately evaluated copy of the module: what a bundle file of its own carries. */
async function secondCopy(): Promise<typeof import('../../../lambdas/domain/port-errors')> {
  vi.resetModules();
  return import('../../../lambdas/domain/port-errors');
}

describe('port errors', () => {
  it('match with instanceof across two copies of their module (the ingest bundle ships the EC2 side as its own file)', async () => {
    // Prepare
    const copy = await secondCopy();
    const thrown = new copy.InstanceLookupError('i-0abc12345def67890', 'us-east-1', 'throttled; retry later');

    // Act
    const matches = thrown instanceof InstanceLookupError;

    // Assess
    expect(copy.InstanceLookupError).not.toBe(InstanceLookupError);
    expect(matches).toBe(true);
    expect(thrown instanceof PortError).toBe(true);
    expect(thrown instanceof Error).toBe(true);
  });

  it.each([
    { error: new StoreUnavailableError('write', 'down'), is: StoreUnavailableError, not: StoreQueryError },
    { error: new StoreQueryError('bad range'), is: StoreQueryError, not: StoreUnavailableError },
    {
      error: new InstanceLookupError('i-0abc', 'us-east-1', 'down'),
      is: InstanceLookupError,
      not: StoreUnavailableError,
    },
  ])('a $error.name is itself and not another port error', ({ error, is, not }) => {
    // Assess
    expect(error).toBeInstanceOf(is);
    expect(error).not.toBeInstanceOf(not);
    expect(error.name).toBe(is.name);
  });

  it('matches nothing that is not a port error', async () => {
    // Prepare
    const copy = await secondCopy();
    const plain = Object.assign(new Error('Rate exceeded'), { name: 'StoreUnavailableError' });

    // Assess: a name alone is no brand
    expect(plain instanceof StoreUnavailableError).toBe(false);
    expect(plain instanceof copy.StoreUnavailableError).toBe(false);
    expect(StoreUnavailableError[Symbol.hasInstance](null)).toBe(false);
    expect(StoreUnavailableError[Symbol.hasInstance]('StoreUnavailableError')).toBe(false);
  });

  it('keeps the message, the typed data and the cause', () => {
    // Prepare
    const cause = new Error('ThrottlingException');

    // Act
    const error = new StoreUnavailableError('WriteRecords gpu_windows', 'expected Timestream to answer', {
      cause,
    });

    // Assess
    expect(error.message).toBe('WriteRecords gpu_windows: expected Timestream to answer');
    expect(error.operation).toBe('WriteRecords gpu_windows');
    expect(error.cause).toBe(cause);
  });
});
