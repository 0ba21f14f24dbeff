import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { systemEpochMs } from '../clock';

/**
 * Where the agent's AWS credentials come from, in the order the SDK's default chain
 * (`defaultProvider` of `@aws-sdk/credential-provider-node`) tries them:
 * - `env`: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`), unless `AWS_PROFILE` is set;
 * - `sdk-default`: a profile, web identity (IRSA) or shared config file is present: the SDK's whole chain;
 * - `container`: `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` / `_FULL_URI` (ECS task role, EKS Pod Identity);
 * - `imds-disabled`: `AWS_EC2_METADATA_DISABLED` set to anything but `false`: no source, every call fails;
 * - `instance-metadata`: the instance role through IMDSv2 (the usual GPU host).
 */
export const HOST_CREDENTIAL_SOURCES = [
  'env',
  'sdk-default',
  'container',
  'imds-disabled',
  'instance-metadata',
] as const;
/** Union of {@link HOST_CREDENTIAL_SOURCES}. */
export type HostCredentialSource = (typeof HOST_CREDENTIAL_SOURCES)[number];

/**
 * Credentials closer to their expiry than this are fetched again before use, ms: the SDK default
 * chain's window (`credentialsTreatedAsExpired` in `@aws-sdk/credential-provider-node`, 5 min).
 */
export const CREDENTIALS_REFRESH_BEFORE_EXPIRY_MS = 300_000;

/**
 * Environment variables that send the SDK's chain past the static env keys into the shared
 * config files, SSO or web identity (`@aws-sdk/credential-provider-ini`, `-web-identity`).
 */
const SDK_CHAIN_ENV = [
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
] as const;

/** Environment variables of the container credential endpoint (`@smithy/credential-provider-imds`). */
const CONTAINER_ENV = [
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
] as const;

/** Loaders of each source's provider, each imported only when its source is picked. */
export interface HostCredentialLoaders {
  /** `fromEnv()` of `@aws-sdk/credential-provider-env`. */
  readonly env: () => Promise<AwsCredentialIdentityProvider>;
  /** `defaultProvider()` of `@aws-sdk/credential-provider-node` (memoized by itself). */
  readonly sdkDefault: () => Promise<AwsCredentialIdentityProvider>;
  /** `fromHttp()` then `fromContainerMetadata()`, as the SDK's remote provider chains them. */
  readonly container: () => Promise<AwsCredentialIdentityProvider>;
  /** `fromInstanceMetadata()` of `@smithy/credential-provider-imds` (IMDSv2 token first). */
  readonly instanceMetadata: () => Promise<AwsCredentialIdentityProvider>;
}

/** Options of {@link hostCredentialProvider}. */
export interface HostCredentialOptions {
  /** The environment read once to pick the source. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Whether a path exists (for `~/.aws/config` and `~/.aws/credentials`). @default existsSync */
  readonly exists?: (path: string) => boolean;
  /** The home folder holding `.aws/`. @default env.HOME, else os.homedir() */
  readonly homeDir?: string;
  /** Replacement loaders (tests). @default dynamic imports of the AWS packages */
  readonly loaders?: Partial<HostCredentialLoaders>;
  /** Epoch ms, for the expiry check. @default systemEpochMs */
  readonly now?: () => number;
}

/** The loaders in production: each a dynamic `import()`, so a bundle split into chunks parses only the one used. */
const DEFAULT_LOADERS: HostCredentialLoaders = {
  env: async () => (await import('@aws-sdk/credential-provider-env')).fromEnv(),
  sdkDefault: async () => (await import('@aws-sdk/credential-provider-node')).defaultProvider(),
  container: async () => {
    const [{ fromHttp }, { fromContainerMetadata }, { chain }] = await Promise.all([
      import('@aws-sdk/credential-provider-http'),
      import('@smithy/credential-provider-imds'),
      import('@smithy/core/config'),
    ]);
    return chain(fromHttp(), fromContainerMetadata());
  },
  instanceMetadata: async () => (await import('@smithy/credential-provider-imds')).fromInstanceMetadata(),
};

/**
 * Picks the credential source this host needs, with the SDK default chain's precedence: static
 * env keys first (unless `AWS_PROFILE` names a profile), then anything the shared config files,
 * SSO or web identity could answer (left to the SDK's own chain), then the container endpoint,
 * then the instance role, unless IMDS is disabled.
 *
 * @param env - the environment
 * @param exists - whether a path exists
 * @param homeDir - the home folder holding `.aws/config` and `.aws/credentials`
 * @returns the source, one of {@link HOST_CREDENTIAL_SOURCES}
 */
export function pickHostCredentialSource(
  env: Readonly<Record<string, string | undefined>>,
  exists: (path: string) => boolean,
  homeDir: string,
): HostCredentialSource {
  if (!env.AWS_PROFILE && env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) return 'env';
  if (SDK_CHAIN_ENV.some((name) => env[name])) return 'sdk-default';
  if (exists(join(homeDir, '.aws', 'config')) || exists(join(homeDir, '.aws', 'credentials')))
    return 'sdk-default';
  if (CONTAINER_ENV.some((name) => env[name])) return 'container';
  if (env.AWS_EC2_METADATA_DISABLED && env.AWS_EC2_METADATA_DISABLED !== 'false') return 'imds-disabled';
  return 'instance-metadata';
}

/**
 * The agent's credential provider: the source {@link pickHostCredentialSource} picks, its package
 * loaded on the first call only (so a host on its instance role never loads the STS/SSO clients
 * of the SDK's full chain). Credentials are cached and fetched again when they are within
 * {@link CREDENTIALS_REFRESH_BEFORE_EXPIRY_MS} of their `expiration` or when asked with
 * `forceRefresh`; credentials without `expiration` (env keys) are kept. A loader that fails is
 * tried again on the next call.
 *
 * @param options - environment, file check, home folder, loaders, clock
 * @returns the provider and the source it uses
 * @throws {CredentialsProviderError} (from the provider, not this function) when the source has no credentials or IMDS is disabled
 * @example
 * const { provider, source } = hostCredentialProvider(); // 'instance-metadata' on an EC2 GPU host
 */
export function hostCredentialProvider(options: HostCredentialOptions = {}): {
  readonly provider: AwsCredentialIdentityProvider;
  readonly source: HostCredentialSource;
} {
  const env = options.env ?? process.env;
  const source = pickHostCredentialSource(
    env,
    options.exists ?? existsSync,
    options.homeDir ?? env.HOME ?? homedir(),
  );
  const loaders = { ...DEFAULT_LOADERS, ...options.loaders };
  // `@smithy/core/config` is imported only when used too: a static import of that barrel would pull
  // everything the lazy STS/SSO chunks use from it into the entry's shared chunk.
  if (source === 'imds-disabled') {
    const provider: AwsCredentialIdentityProvider = async () => {
      const { CredentialsProviderError } = await import('@smithy/core/config');
      throw new CredentialsProviderError(
        'Expected credentials from the EC2 instance metadata service, got AWS_EC2_METADATA_DISABLED set; set env keys, a profile or unset it',
        { tryNextLink: false },
      );
    };
    return { provider, source };
  }
  // The SDK's chain caches and refreshes by itself (and honours forceRefresh): no second cache.
  if (source === 'sdk-default') return { provider: lazily(loaders.sdkDefault), source };
  const load =
    source === 'env' ? loaders.env : source === 'container' ? loaders.container : loaders.instanceMetadata;
  const now = options.now ?? systemEpochMs;
  const provider = lazily(async () => {
    const [{ memoize }, inner] = await Promise.all([import('@smithy/core/config'), load()]);
    return memoize(
      inner,
      (c: AwsCredentialIdentity) =>
        c.expiration !== undefined && c.expiration.getTime() - now() < CREDENTIALS_REFRESH_BEFORE_EXPIRY_MS,
      (c: AwsCredentialIdentity) => c.expiration !== undefined,
    );
  });
  return { provider, source };
}

/** A provider that loads the real one on its first call; a failed load is tried again on the next. */
function lazily(load: () => Promise<AwsCredentialIdentityProvider>): AwsCredentialIdentityProvider {
  let loaded: Promise<AwsCredentialIdentityProvider> | undefined;
  return async (props) => {
    loaded ??= load().catch((err: unknown) => {
      loaded = undefined;
      throw err;
    });
    return (await loaded)(props);
  };
}
