import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PricingClient } from '@aws-sdk/client-pricing';
import { systemClock } from '../lambdas/adapters/clock';
import {
  fetchOnDemandPrices,
  PRICED_INSTANCE_TYPES,
  renderPriceTableModule,
} from '../lambdas/adapters/price-list';

/**
 * Refreshes the bundled on-demand price table from the AWS Price List Query API:
 * `npx tsx bin/refresh-prices.ts` with AWS credentials allowed `pricing:GetProducts` (the API has no
 * resource-level permissions). Writes `lambdas/domain/on-demand-prices.ts` only when every query
 * succeeded; review the diff and commit it. The endpoint region is us-east-1 whatever the stack's.
 */
async function main(): Promise<void> {
  const today = systemClock().toISOString().slice(0, 10);
  const rows = await fetchOnDemandPrices(
    new PricingClient({ region: 'us-east-1' }),
    PRICED_INSTANCE_TYPES,
    today,
  );
  const target = join(
    dirname(fileURLToPath(import.meta.url)),
    '..',
    'lambdas',
    'domain',
    'on-demand-prices.ts',
  );
  await writeFile(target, renderPriceTableModule(rows, `aws-ec2-on-demand-linux-${today}`));
  process.stdout.write(`wrote ${rows.length} prices to ${target}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`refresh-prices: ${(error as Error).message}\n`);
  process.exitCode = 1;
});
