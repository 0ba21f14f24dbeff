/**
 * The running GPU instances of a region could not be listed (EC2 throttled, no permission,
 * unreachable): the `RunningInstances` port's failure. The evaluator then judges nothing that needs
 * the list, so an outage of EC2's API never calls every instance silent.
 */
export class FleetListingError extends Error {
  override readonly name = 'FleetListingError';
  /** The region asked. */
  readonly region: string;

  /**
   * @param region - the region asked
   * @param message - what was expected, what came, what to do
   * @param options - `cause`: the SDK error
   */
  constructor(region: string, message: string, options?: { cause?: unknown }) {
    super(`${region}: ${message}`, options);
    this.region = region;
  }
}
