import { describe, expect, it } from 'vitest';
import { peerStandings } from '../../../../lambdas/domain';

describe('peerStandings', () => {
  it('scores the low outlier with the median and MAD, not the mean it drags down', () => {
    // Act
    const s = peerStandings([0.85, 0.86, 0.84, 0.5, 0.85, 0.87, 0.83, 0.85]);

    // Assess: median 0.85, MAD 0.01 → z = 0.6745 × (0.5 − 0.85) / 0.01 ≈ −23.6
    expect(s[3]?.median).toBeCloseTo(0.85, 10);
    expect(s[3]?.z).toBeCloseTo(-23.6, 1);
    expect(s[3]?.gap).toBeCloseTo(0.35 / 0.85, 10);
    expect(s[0]?.z).toBe(0);
  });

  it('gives −∞ when every peer is equal and one is lower', () => {
    // Act
    const s = peerStandings([0.8, 0.8, 0.8, 0.6]);

    // Assess
    expect(s[3]?.z).toBe(Number.NEGATIVE_INFINITY);
    expect(s[0]?.z).toBe(0);
  });
});
