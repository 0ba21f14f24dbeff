/**
 * Where the ledger finds the spot price of a spot host that no configured rate prices
 * (docs/finance.md, "Spot without a CUR"): in AWS, EC2's spot price history
 * (`Ec2SpotPrices`, lambdas/adapters/ec2-spot-prices.ts).
 */
export interface SpotPriceSource {
  /**
   * The spot price in effect for an instance type in an Availability Zone at an instant.
   *
   * @param instanceType - EC2 instance type, e.g. `p5.48xlarge`
   * @param region - the host's region, e.g. `us-east-1`
   * @param availabilityZone - e.g. `us-east-1a`
   * @param at - the instant (the window's start)
   * @returns USD per instance-hour (Linux/UNIX), or undefined when it is not known (no history, or
   *   EC2 could not be asked: the host stays unpriced rather than guessed, and ingest goes on)
   */
  priceAt(
    instanceType: string,
    region: string,
    availabilityZone: string,
    at: Date,
  ): Promise<number | undefined>;
}
