import { VirtualClock } from '../../agent/playback/playback';
import { type FakeNvmlVariant, setFakeNvmlClock } from './fake-nvml';

/**
 * A `VirtualClock` the fake NVML's time-driven values follow (energy, violation time, PCIe and NVLink
 * bytes, field timestamps: {@link setFakeNvmlClock}), so an agent polled on it reads the power it
 * draws for the virtual seconds that pass, not for the real ms the polls take. Call {@link release}
 * when the run ends (the fake's clock is process state of the loaded library).
 */
export class FakeNvmlClock extends VirtualClock {
  readonly #variant: FakeNvmlVariant;

  /**
   * @param startMs - the first time, ms since the epoch (the fake's clock moves there at once)
   * @param variant - which build of the fake @default 'current'
   */
  constructor(startMs: number, variant: FakeNvmlVariant = 'current') {
    super(startMs);
    this.#variant = variant;
    setFakeNvmlClock(startMs, variant);
  }

  /** Moves this clock and the fake's to `ms` (ms since the epoch). */
  override set(ms: number): void {
    super.set(ms);
    setFakeNvmlClock(ms, this.#variant);
  }

  /** Gives the fake its real clocks back. */
  release(): void {
    setFakeNvmlClock(undefined, this.#variant);
  }
}
