import { describe, expect, it } from 'vitest';
import { runScenarios } from '../../../bin/scenarios/run-scenarios';
import type { Scenario } from '../../../bin/scenarios/scenario';
import { SILENT_LOG } from '../../../lambdas/handlers/log';

const scenario = (name: string, instance_id: string): Scenario => ({
  name,
  label: name,
  instance_id,
  expect: [],
  play: async () => {
    throw new Error('must not be played');
  },
});

describe('runScenarios', () => {
  it.each([
    [
      'names',
      [scenario('a', 'i-05e00000000000001'), scenario('a', 'i-05e00000000000002')],
      /unique scenario names.*`a`/,
    ],
    [
      'instance ids',
      [scenario('a', 'i-05e00000000000001'), scenario('b', 'i-05e00000000000001')],
      /unique scenario instance_ids.*`i-05e00000000000001`/,
    ],
  ])('refuses a suite whose %s repeat, before starting anything', async (_case, suite, message) => {
    // Act
    const error = await runScenarios(suite, {
      outDir: '/nonexistent',
      log: SILENT_LOG,
      agentVersion: '0',
    }).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toMatch(message);
  });
});
