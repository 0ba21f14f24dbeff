import {
  type _InstanceType,
  DescribeSpotPriceHistoryCommand,
  type EC2Client,
  type SpotPrice,
} from '@aws-sdk/client-ec2';
import type { SpotPriceSource } from '../domain/spot-price-source';

/**
 * Spot prices from EC2's spot price history (`DescribeSpotPriceHistory`), one question per
 * instance type, Availability Zone and UTC hour, answered from memory after the first time: a
 * Lambda container prices every batch of a spot host in that hour with one call. The price of an
 * instant is the last price change at or before it (EC2 answers a range with the change in effect
 * at its start too).
 */

/** Hours remembered (type × AZ × hour) before the oldest is forgotten. */
export const SPOT_PRICE_CACHE_ENTRIES = 1024;

/** The product the ledger prices: Linux, as the on-demand list prices (`ProductDescriptions`, EC2 API reference). */
export const SPOT_PRODUCT_DESCRIPTION = 'Linux/UNIX';

const HOUR_MS = 3_600_000;

/** Options of {@link Ec2SpotPrices}. */
export interface Ec2SpotPricesOptions {
  /** EC2 clients by region (`RegionalClients`): each host's spot price is asked in its own region. */
  readonly ec2: { for(region: string): EC2Client };
  /** Hours remembered. @default SPOT_PRICE_CACHE_ENTRIES */
  readonly cacheEntries?: number;
}

/** The last change at or before `atMs`, else the earliest one; USD/hour. */
function priceIn(history: readonly SpotPrice[], atMs: number): number | undefined {
  let best: { ms: number; usd: number } | undefined;
  let earliest: { ms: number; usd: number } | undefined;
  for (const p of history) {
    const ms = p.Timestamp?.getTime();
    const usd = Number(p.SpotPrice);
    if (ms === undefined || !Number.isFinite(usd) || usd < 0) continue;
    if (ms <= atMs && (best === undefined || ms > best.ms)) best = { ms, usd };
    if (earliest === undefined || ms < earliest.ms) earliest = { ms, usd };
  }
  return (best ?? earliest)?.usd;
}

/**
 * The spot price port on EC2 (`ec2:DescribeSpotPriceHistory`, read-only, no resource-level
 * permissions). A failed call answers `undefined` (the host stays unpriced, ingest goes on) and is
 * asked again by the next batch.
 *
 * @example
 * const spot = new Ec2SpotPrices({ ec2: new RegionalClients((region) => new EC2Client({ region })) });
 * await spot.priceAt('p5.48xlarge', 'us-east-1', 'us-east-1a', new Date('2026-03-10T12:00:10Z')); // e.g. 21.98
 */
export class Ec2SpotPrices implements SpotPriceSource {
  readonly #ec2: { for(region: string): EC2Client };
  readonly #entries: number;
  readonly #cache = new Map<string, Promise<readonly SpotPrice[] | undefined>>();

  /**
   * @param options - the EC2 client and the cache size
   */
  constructor(options: Ec2SpotPricesOptions) {
    this.#ec2 = options.ec2;
    this.#entries = options.cacheEntries ?? SPOT_PRICE_CACHE_ENTRIES;
  }

  /** {@inheritDoc SpotPriceSource.priceAt} */
  async priceAt(
    instanceType: string,
    region: string,
    availabilityZone: string,
    at: Date,
  ): Promise<number | undefined> {
    const hourMs = Math.floor(at.getTime() / HOUR_MS) * HOUR_MS;
    if (!Number.isFinite(hourMs)) return undefined;
    const key = `${instanceType}@${availabilityZone}@${hourMs}`;
    let history = this.#cache.get(key);
    if (history === undefined) {
      history = this.#history(this.#ec2.for(region), instanceType, availabilityZone, hourMs);
      this.#cache.set(key, history);
      if (this.#cache.size > this.#entries) this.#cache.delete(this.#cache.keys().next().value as string);
    }
    const answer = await history;
    if (answer === undefined) {
      this.#cache.delete(key);
      return undefined;
    }
    return priceIn(answer, at.getTime());
  }

  /** Every price change of the hour (all pages), or undefined when EC2 could not be asked. */
  async #history(
    client: EC2Client,
    instanceType: string,
    availabilityZone: string,
    hourMs: number,
  ): Promise<readonly SpotPrice[] | undefined> {
    const out: SpotPrice[] = [];
    let NextToken: string | undefined;
    try {
      do {
        const page = await client.send(
          new DescribeSpotPriceHistoryCommand({
            InstanceTypes: [instanceType as _InstanceType],
            AvailabilityZone: availabilityZone,
            ProductDescriptions: [SPOT_PRODUCT_DESCRIPTION],
            StartTime: new Date(hourMs),
            EndTime: new Date(hourMs + HOUR_MS),
            ...(NextToken !== undefined ? { NextToken } : {}),
          }),
        );
        out.push(...(page.SpotPriceHistory ?? []));
        NextToken = page.NextToken === '' ? undefined : page.NextToken;
      } while (NextToken !== undefined);
    } catch {
      return undefined;
    }
    return out;
  }
}
