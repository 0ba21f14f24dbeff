/**
 * One SDK client per AWS region, made on first use and reused (SDK clients hold connection pools,
 * so a Lambda keeps them across invocations). An instance reports its own `host.region`; EC2, Auto
 * Scaling and the remediation calls must go to that region, not the Lambda's.
 *
 * @typeParam C - the client type, e.g. `EC2Client`
 * @example
 * const ec2 = new RegionalClients((region) => new EC2Client({ region }));
 * await ec2.for('eu-west-1').send(new DescribeInstancesCommand({ InstanceIds: [id] }));
 */
export class RegionalClients<C> {
  readonly #make: (region: string) => C;
  readonly #clients = new Map<string, C>();

  /** @param make - builds the client of one region, e.g. `(region) => new EC2Client({ region })` */
  constructor(make: (region: string) => C) {
    this.#make = make;
  }

  /**
   * @param region - AWS region code, e.g. `us-east-1`
   * @returns that region's client (the same object on every call)
   */
  for(region: string): C {
    let client = this.#clients.get(region);
    if (client === undefined) {
      client = this.#make(region);
      this.#clients.set(region, client);
    }
    return client;
  }
}
