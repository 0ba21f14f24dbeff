import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { type PriceRates, parsePriceRates } from '../../lambdas/domain';

/**
 * Reads `--price-rates FILE`: the deployment's own rates in the very shape the stack's
 * `priceRates` prop takes (`-c priceRates=…`), e.g.
 * `{ "savings_plans": { "p5.48xlarge": 34.68 }, "spot": { "p5.48xlarge@us-east-1": 21.98 }, "spot_discount": 0.6 }`.
 *
 * @param path - the JSON file; undefined for none
 * @returns the rates (frozen), or undefined when no file was named
 * @throws {Error} naming `--price-rates` and the file when it cannot be read
 * @throws {PriceOverridesError} naming the bad entry (`spot.p5.48xlarge`, `spot_discount`, …) when the document is wrong
 */
export async function loadPriceRates(path: string | undefined): Promise<PriceRates | undefined> {
  if (path === undefined) return undefined;
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new Error(
      `Expected --price-rates to name a readable JSON file of price rates, got ${file}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  return parsePriceRates(text);
}
