import { vi } from 'vitest';

/**
 * Runs `act` and returns the EMF lines (JSON objects with `_aws`) it wrote to stdout, where
 * Powertools Metrics writes them; anything else written meanwhile is let through.
 *
 * @param act - what to run, sync or async
 * @returns the EMF lines, in order
 */
export async function emfLines(act: () => unknown): Promise<string[]> {
  const emf: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string | Uint8Array) => {
    const text = String(chunk);
    for (const line of text.split('\n')) {
      if (line.startsWith('{"_aws":')) emf.push(line);
      else if (line !== '') write(`${line}\n`);
    }
    return true;
  }) as typeof process.stdout.write);
  try {
    await act();
  } finally {
    spy.mockRestore();
  }
  return emf;
}
