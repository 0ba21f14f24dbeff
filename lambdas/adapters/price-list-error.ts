/**
 * The AWS Price List answer cannot become a price table (an entry that is not JSON, two prices for
 * one type and region, nothing at all). The refresh writes nothing, so the bundled table stays whole.
 */
export class PriceListError extends Error {
  override readonly name = 'PriceListError';
}
