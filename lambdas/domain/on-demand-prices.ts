import type { OnDemandPriceRow, PriceRowSource } from './price-row';

/**
 * The bundled on-demand price table: EC2 Linux, shared tenancy, USD per instance-hour, one row per
 * instance type and region where a price was found. A type or region without a row is **unpriced**
 * (never guessed): p5e.48xlarge has no on-demand price anywhere (AWS sells it as Capacity Blocks),
 * and g5/g6/g6e outside us-east-1 and GovCloud were not in the sources read. Replace this file with
 * `npx tsx bin/refresh-prices.ts` (AWS Price List Query API), which writes the same shape.
 */

/** Id stored with every ledger row priced from this table (`builtin:<id>`): the date it was compiled. */
export const ON_DEMAND_PRICE_TABLE_ID = 'aws-ec2-on-demand-linux-2026-11-23';

/** AWS Price List API answers for us-east-1, as Karpenter generates and commits them. */
const KARPENTER_AWS: PriceRowSource = {
  name: 'AWS Price List API via aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go',
  url: 'https://github.com/aws/karpenter-provider-aws/blob/6fc13b5236fd04fd16ff3f9dc7490d0813994099/pkg/providers/pricing/zz_generated.pricing_aws.go',
  as_of: '2026-07-20',
};

/** AWS Price List API answers for the GovCloud regions, as Karpenter generates and commits them. */
const KARPENTER_US_GOV: PriceRowSource = {
  name: 'AWS Price List API via aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go',
  url: 'https://github.com/aws/karpenter-provider-aws/blob/6fc13b5236fd04fd16ff3f9dc7490d0813994099/pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go',
  as_of: '2026-07-20',
};

/** SkyPilot's AWS catalog (built from the AWS price list), `Price` column, one value per region. */
const SKYPILOT_CATALOG: PriceRowSource = {
  name: 'skypilot-org/skypilot-catalog catalogs/v9/aws/vms.csv (Price column)',
  url: 'https://github.com/skypilot-org/skypilot-catalog/blob/2c3d7ea7d76bf84cf80d382e946c1609571485fd/catalogs/v9/aws/vms.csv',
  as_of: '2026-11-23',
};

/** The rows, sorted by instance type then region. */
export const ON_DEMAND_PRICES: readonly OnDemandPriceRow[] = [
  { instance_type: 'g5.12xlarge', region: 'us-east-1', usd_per_hour: 5.672, source: KARPENTER_AWS },
  { instance_type: 'g5.16xlarge', region: 'us-east-1', usd_per_hour: 4.096, source: KARPENTER_AWS },
  { instance_type: 'g5.24xlarge', region: 'us-east-1', usd_per_hour: 8.144, source: KARPENTER_AWS },
  { instance_type: 'g5.2xlarge', region: 'us-east-1', usd_per_hour: 1.212, source: KARPENTER_AWS },
  { instance_type: 'g5.48xlarge', region: 'us-east-1', usd_per_hour: 16.288, source: KARPENTER_AWS },
  { instance_type: 'g5.4xlarge', region: 'us-east-1', usd_per_hour: 1.624, source: KARPENTER_AWS },
  { instance_type: 'g5.8xlarge', region: 'us-east-1', usd_per_hour: 2.448, source: KARPENTER_AWS },
  { instance_type: 'g5.xlarge', region: 'us-east-1', usd_per_hour: 1.006, source: KARPENTER_AWS },
  { instance_type: 'g6.12xlarge', region: 'us-east-1', usd_per_hour: 4.6016, source: KARPENTER_AWS },
  { instance_type: 'g6.12xlarge', region: 'us-gov-east-1', usd_per_hour: 5.80003, source: KARPENTER_US_GOV },
  { instance_type: 'g6.12xlarge', region: 'us-gov-west-1', usd_per_hour: 5.80003, source: KARPENTER_US_GOV },
  { instance_type: 'g6.16xlarge', region: 'us-east-1', usd_per_hour: 3.3968, source: KARPENTER_AWS },
  { instance_type: 'g6.16xlarge', region: 'us-gov-east-1', usd_per_hour: 4.28145, source: KARPENTER_US_GOV },
  { instance_type: 'g6.16xlarge', region: 'us-gov-west-1', usd_per_hour: 4.28145, source: KARPENTER_US_GOV },
  { instance_type: 'g6.24xlarge', region: 'us-east-1', usd_per_hour: 6.6752, source: KARPENTER_AWS },
  { instance_type: 'g6.24xlarge', region: 'us-gov-east-1', usd_per_hour: 8.41367, source: KARPENTER_US_GOV },
  { instance_type: 'g6.24xlarge', region: 'us-gov-west-1', usd_per_hour: 8.41367, source: KARPENTER_US_GOV },
  { instance_type: 'g6.2xlarge', region: 'us-east-1', usd_per_hour: 0.9776, source: KARPENTER_AWS },
  { instance_type: 'g6.2xlarge', region: 'us-gov-east-1', usd_per_hour: 1.2322, source: KARPENTER_US_GOV },
  { instance_type: 'g6.2xlarge', region: 'us-gov-west-1', usd_per_hour: 1.2322, source: KARPENTER_US_GOV },
  { instance_type: 'g6.48xlarge', region: 'us-east-1', usd_per_hour: 13.3504, source: KARPENTER_AWS },
  { instance_type: 'g6.48xlarge', region: 'us-gov-east-1', usd_per_hour: 16.82734, source: KARPENTER_US_GOV },
  { instance_type: 'g6.48xlarge', region: 'us-gov-west-1', usd_per_hour: 16.82734, source: KARPENTER_US_GOV },
  { instance_type: 'g6.4xlarge', region: 'us-east-1', usd_per_hour: 1.3232, source: KARPENTER_AWS },
  { instance_type: 'g6.4xlarge', region: 'us-gov-east-1', usd_per_hour: 1.66781, source: KARPENTER_US_GOV },
  { instance_type: 'g6.4xlarge', region: 'us-gov-west-1', usd_per_hour: 1.66781, source: KARPENTER_US_GOV },
  { instance_type: 'g6.8xlarge', region: 'us-east-1', usd_per_hour: 2.0144, source: KARPENTER_AWS },
  { instance_type: 'g6.8xlarge', region: 'us-gov-east-1', usd_per_hour: 2.53903, source: KARPENTER_US_GOV },
  { instance_type: 'g6.8xlarge', region: 'us-gov-west-1', usd_per_hour: 2.53903, source: KARPENTER_US_GOV },
  { instance_type: 'g6.xlarge', region: 'us-east-1', usd_per_hour: 0.8048, source: KARPENTER_AWS },
  { instance_type: 'g6.xlarge', region: 'us-gov-east-1', usd_per_hour: 1.0144, source: KARPENTER_US_GOV },
  { instance_type: 'g6.xlarge', region: 'us-gov-west-1', usd_per_hour: 1.0144, source: KARPENTER_US_GOV },
  { instance_type: 'g6e.12xlarge', region: 'us-east-1', usd_per_hour: 10.49264, source: KARPENTER_AWS },
  { instance_type: 'g6e.16xlarge', region: 'us-east-1', usd_per_hour: 7.57719, source: KARPENTER_AWS },
  { instance_type: 'g6e.24xlarge', region: 'us-east-1', usd_per_hour: 15.06559, source: KARPENTER_AWS },
  { instance_type: 'g6e.2xlarge', region: 'us-east-1', usd_per_hour: 2.24208, source: KARPENTER_AWS },
  { instance_type: 'g6e.48xlarge', region: 'us-east-1', usd_per_hour: 30.13118, source: KARPENTER_AWS },
  { instance_type: 'g6e.4xlarge', region: 'us-east-1', usd_per_hour: 3.00424, source: KARPENTER_AWS },
  { instance_type: 'g6e.8xlarge', region: 'us-east-1', usd_per_hour: 4.52856, source: KARPENTER_AWS },
  { instance_type: 'g6e.xlarge', region: 'us-east-1', usd_per_hour: 1.861, source: KARPENTER_AWS },
  { instance_type: 'p4d.24xlarge', region: 'ap-south-1', usd_per_hour: 26.3444, source: SKYPILOT_CATALOG },
  {
    instance_type: 'p4d.24xlarge',
    region: 'ap-southeast-2',
    usd_per_hour: 28.54493,
    source: SKYPILOT_CATALOG,
  },
  { instance_type: 'p4d.24xlarge', region: 'ca-central-1', usd_per_hour: 25.25174, source: SKYPILOT_CATALOG },
  { instance_type: 'p4d.24xlarge', region: 'eu-central-1', usd_per_hour: 27.43298, source: SKYPILOT_CATALOG },
  { instance_type: 'p4d.24xlarge', region: 'eu-north-1', usd_per_hour: 23.71569, source: SKYPILOT_CATALOG },
  { instance_type: 'p4d.24xlarge', region: 'eu-west-1', usd_per_hour: 23.71569, source: SKYPILOT_CATALOG },
  { instance_type: 'p4d.24xlarge', region: 'eu-west-2', usd_per_hour: 28.54493, source: SKYPILOT_CATALOG },
  { instance_type: 'p4d.24xlarge', region: 'us-east-1', usd_per_hour: 21.957642, source: KARPENTER_AWS },
  { instance_type: 'p4d.24xlarge', region: 'us-east-2', usd_per_hour: 21.95764, source: SKYPILOT_CATALOG },
  { instance_type: 'p4d.24xlarge', region: 'us-gov-west-1', usd_per_hour: 26.3511, source: KARPENTER_US_GOV },
  { instance_type: 'p4d.24xlarge', region: 'us-west-2', usd_per_hour: 21.95764, source: SKYPILOT_CATALOG },
  {
    instance_type: 'p4de.24xlarge',
    region: 'ap-northeast-1',
    usd_per_hour: 37.6223,
    source: SKYPILOT_CATALOG,
  },
  {
    instance_type: 'p4de.24xlarge',
    region: 'ap-southeast-1',
    usd_per_hour: 32.93646,
    source: SKYPILOT_CATALOG,
  },
  {
    instance_type: 'p4de.24xlarge',
    region: 'eu-central-1',
    usd_per_hour: 34.29122,
    source: SKYPILOT_CATALOG,
  },
  { instance_type: 'p4de.24xlarge', region: 'us-east-1', usd_per_hour: 27.44705, source: KARPENTER_AWS },
  { instance_type: 'p4de.24xlarge', region: 'us-west-2', usd_per_hour: 27.44705, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'ap-northeast-1', usd_per_hour: 68.8, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'ap-northeast-2', usd_per_hour: 75.9552, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'ap-south-1', usd_per_hour: 66.048, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'ap-southeast-2', usd_per_hour: 71.552, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'ap-southeast-3', usd_per_hour: 75.9552, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'ca-central-1', usd_per_hour: 63.296, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'eu-north-1', usd_per_hour: 58.8928, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'eu-west-2', usd_per_hour: 71.552, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'us-east-1', usd_per_hour: 55.04, source: KARPENTER_AWS },
  { instance_type: 'p5.48xlarge', region: 'us-east-2', usd_per_hour: 55.04, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'us-gov-west-1', usd_per_hour: 66.048, source: KARPENTER_US_GOV },
  { instance_type: 'p5.48xlarge', region: 'us-west-1', usd_per_hour: 68.8, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.48xlarge', region: 'us-west-2', usd_per_hour: 55.04, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.4xlarge', region: 'ap-northeast-1', usd_per_hour: 8.6, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.4xlarge', region: 'ap-south-1', usd_per_hour: 8.256, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.4xlarge', region: 'ap-southeast-2', usd_per_hour: 8.944, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.4xlarge', region: 'ap-southeast-3', usd_per_hour: 9.4944, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.4xlarge', region: 'eu-west-2', usd_per_hour: 8.944, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.4xlarge', region: 'us-east-1', usd_per_hour: 6.88, source: KARPENTER_AWS },
  { instance_type: 'p5.4xlarge', region: 'us-east-2', usd_per_hour: 6.88, source: SKYPILOT_CATALOG },
  { instance_type: 'p5.4xlarge', region: 'us-gov-west-1', usd_per_hour: 8.256, source: KARPENTER_US_GOV },
  { instance_type: 'p5.4xlarge', region: 'us-west-2', usd_per_hour: 6.88, source: SKYPILOT_CATALOG },
  { instance_type: 'p5en.48xlarge', region: 'ap-northeast-1', usd_per_hour: 79.12, source: SKYPILOT_CATALOG },
  {
    instance_type: 'p5en.48xlarge',
    region: 'ap-northeast-2',
    usd_per_hour: 87.34848,
    source: SKYPILOT_CATALOG,
  },
  { instance_type: 'p5en.48xlarge', region: 'ap-south-1', usd_per_hour: 75.9552, source: SKYPILOT_CATALOG },
  {
    instance_type: 'p5en.48xlarge',
    region: 'ap-southeast-3',
    usd_per_hour: 87.34848,
    source: SKYPILOT_CATALOG,
  },
  { instance_type: 'p5en.48xlarge', region: 'eu-north-1', usd_per_hour: 67.72672, source: SKYPILOT_CATALOG },
  { instance_type: 'p5en.48xlarge', region: 'eu-south-2', usd_per_hour: 68.35968, source: SKYPILOT_CATALOG },
  { instance_type: 'p5en.48xlarge', region: 'me-central-1', usd_per_hour: 75.9552, source: SKYPILOT_CATALOG },
  { instance_type: 'p5en.48xlarge', region: 'us-east-1', usd_per_hour: 63.296, source: KARPENTER_AWS },
  { instance_type: 'p5en.48xlarge', region: 'us-east-2', usd_per_hour: 63.296, source: SKYPILOT_CATALOG },
  {
    instance_type: 'p5en.48xlarge',
    region: 'us-gov-west-1',
    usd_per_hour: 75.9552,
    source: KARPENTER_US_GOV,
  },
  { instance_type: 'p5en.48xlarge', region: 'us-west-1', usd_per_hour: 79.12, source: SKYPILOT_CATALOG },
  { instance_type: 'p5en.48xlarge', region: 'us-west-2', usd_per_hour: 63.296, source: SKYPILOT_CATALOG },
  { instance_type: 'p6-b200.48xlarge', region: 'us-east-1', usd_per_hour: 113.9328, source: KARPENTER_AWS },
  {
    instance_type: 'p6-b200.48xlarge',
    region: 'us-gov-east-1',
    usd_per_hour: 136.71936,
    source: KARPENTER_US_GOV,
  },
  {
    instance_type: 'p6-b200.48xlarge',
    region: 'us-gov-west-1',
    usd_per_hour: 136.71936,
    source: KARPENTER_US_GOV,
  },
];
