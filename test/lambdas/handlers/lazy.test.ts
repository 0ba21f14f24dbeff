import { describe, expect, it } from 'vitest';
import { lazily } from '../../../lambdas/handlers/lazy';

describe('lazily', () => {
  it('makes the value on first use only and shares it', async () => {
    // Prepare
    let made = 0;
    const get = lazily(async () => ({ n: ++made }));
    // Act
    const [a, b] = await Promise.all([get(), get()]);
    const c = await get();
    // Assess
    expect(made).toBe(1);
    expect(a).toBe(b);
    expect(c).toBe(a);
  });

  it('makes it again after a failed make, so one failed cold-start load does not break the warm Lambda', async () => {
    // Prepare
    let calls = 0;
    const get = lazily(async () => {
      calls++;
      if (calls === 1) throw new Error('throttled');
      return 'client';
    });
    // Act
    const first = get();
    // Assess
    await expect(first).rejects.toThrow('throttled');
    await expect(get()).resolves.toBe('client');
    expect(calls).toBe(2);
  });
});
