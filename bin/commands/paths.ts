import { fileURLToPath } from 'node:url';

/** The package root (the folder holding package.json), wherever the CLI is started from. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The bundled manifest that replays the real captures in `test/fixtures/real/`. */
export const BUNDLED_REPLAY_MANIFEST = fileURLToPath(
  new URL('../../test/fixtures/replay/real-captures.json', import.meta.url),
);

/**
 * The bundled manifest of the detection scenarios: real kernel logs of GPUs lost without an Xid
 * (`test/fixtures/real/gpu-lost/`), each as one host. Not replayed by `local` by default.
 */
export const DETECTION_REPLAY_MANIFEST = fileURLToPath(
  new URL('../../test/fixtures/replay/detection-captures.json', import.meta.url),
);
