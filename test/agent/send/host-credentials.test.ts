import { join } from 'node:path';
import { CredentialsProviderError } from '@smithy/core/config';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  CREDENTIALS_REFRESH_BEFORE_EXPIRY_MS,
  type HostCredentialLoaders,
  type HostCredentialSource,
  hostCredentialProvider,
  pickHostCredentialSource,
} from '../../../agent/send/host-credentials';

const HOME = '/var/lib/gpu-sentinel';
const KEYS = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' };
const NOW_MS = Date.parse('2026-03-10T12:00:00Z');

/** Loaders that record which one was asked and answer credentials naming it. */
function recordingLoaders(expiration?: Date): {
  loaders: HostCredentialLoaders;
  calls: string[];
  fetches: string[];
} {
  const calls: string[] = [];
  const fetches: string[] = [];
  const loader = (name: string) => async (): Promise<AwsCredentialIdentityProvider> => {
    calls.push(name);
    return async (props) => {
      fetches.push(
        `${name}${(props as { forceRefresh?: boolean } | undefined)?.forceRefresh ? ' force' : ''}`,
      );
      return {
        accessKeyId: `${name}-${fetches.length}`,
        secretAccessKey: 's',
        ...(expiration ? { expiration } : {}),
      };
    };
  };
  return {
    loaders: {
      env: loader('env'),
      sdkDefault: loader('sdkDefault'),
      container: loader('container'),
      instanceMetadata: loader('instanceMetadata'),
    },
    calls,
    fetches,
  };
}

describe('pickHostCredentialSource', () => {
  it.each<[string, Record<string, string>, string[], HostCredentialSource]>([
    ['env keys', KEYS, [], 'env'],
    ['env keys over config files', KEYS, ['.aws/config'], 'env'],
    [
      'env keys over the container endpoint',
      { ...KEYS, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/creds' },
      [],
      'env',
    ],
    ['a profile over env keys (as the SDK does)', { ...KEYS, AWS_PROFILE: 'ops' }, [], 'sdk-default'],
    ['an access key without its secret', { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE' }, [], 'instance-metadata'],
    [
      'web identity (IRSA)',
      { AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/token', AWS_ROLE_ARN: 'arn' },
      [],
      'sdk-default',
    ],
    ['AWS_CONFIG_FILE', { AWS_CONFIG_FILE: '/etc/aws/config' }, [], 'sdk-default'],
    ['AWS_SHARED_CREDENTIALS_FILE', { AWS_SHARED_CREDENTIALS_FILE: '/etc/aws/creds' }, [], 'sdk-default'],
    ['~/.aws/config', {}, ['.aws/config'], 'sdk-default'],
    ['~/.aws/credentials', {}, ['.aws/credentials'], 'sdk-default'],
    [
      'config files over the container endpoint',
      { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://x' },
      ['.aws/config'],
      'sdk-default',
    ],
    ['the ECS/EKS relative URI', { AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/creds' }, [], 'container'],
    [
      'the EKS Pod Identity full URI',
      { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://169.254.170.23/v1/credentials' },
      [],
      'container',
    ],
    ['IMDS disabled', { AWS_EC2_METADATA_DISABLED: 'true' }, [], 'imds-disabled'],
    ['IMDS disabled = false', { AWS_EC2_METADATA_DISABLED: 'false' }, [], 'instance-metadata'],
    ['nothing set (the instance role)', {}, [], 'instance-metadata'],
  ])('picks the source for %s', (_name, env, files, expected) => {
    // Prepare
    const present = new Set(files.map((f) => join(HOME, f)));

    // Act
    const source = pickHostCredentialSource(env, (p) => present.has(p), HOME);

    // Assess
    expect(source).toBe(expected);
  });
});

describe('hostCredentialProvider', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it.each<[Record<string, string>, keyof HostCredentialLoaders]>([
    [KEYS, 'env'],
    [{ AWS_PROFILE: 'ops' }, 'sdkDefault'],
    [{ AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/creds' }, 'container'],
    [{}, 'instanceMetadata'],
  ])('loads only the %o source (%s) and only on the first call', async (env, loader) => {
    // Prepare
    const { loaders, calls } = recordingLoaders();
    const { provider } = hostCredentialProvider({ env, exists: () => false, homeDir: HOME, loaders });
    const loadedBeforeUse = [...calls];

    // Act
    const credentials = await provider();

    // Assess
    expect(loadedBeforeUse).toEqual([]);
    expect(calls).toEqual([loader]);
    expect(credentials.accessKeyId).toBe(`${loader}-1`);
  });

  it('keeps credentials without expiration (env keys) and fetches once', async () => {
    // Prepare
    const { loaders, fetches } = recordingLoaders();
    const { provider } = hostCredentialProvider({ env: KEYS, exists: () => false, homeDir: HOME, loaders });

    // Act
    await provider();
    await provider();
    await provider();

    // Assess
    expect(fetches).toEqual(['env']);
  });

  it.each([
    [
      'keeps role credentials while they are far from expiry',
      CREDENTIALS_REFRESH_BEFORE_EXPIRY_MS + 60_000,
      1,
    ],
    [
      'fetches role credentials again once inside the refresh window',
      CREDENTIALS_REFRESH_BEFORE_EXPIRY_MS - 60_000,
      2,
    ],
  ])('%s', async (_name, msToExpiryLater, expectedFetches) => {
    // Prepare
    const expiration = new Date(NOW_MS + 3_600_000);
    const { loaders, fetches } = recordingLoaders(expiration);
    let nowMs = NOW_MS;
    const { provider } = hostCredentialProvider({
      env: {},
      exists: () => false,
      homeDir: HOME,
      loaders,
      now: () => nowMs,
    });
    await provider();
    nowMs = expiration.getTime() - msToExpiryLater;

    // Act
    await provider();

    // Assess
    expect(fetches).toHaveLength(expectedFetches);
  });

  it('fetches fresh instance-role credentials when asked with forceRefresh', async () => {
    // Prepare
    const { loaders, fetches } = recordingLoaders(new Date(NOW_MS + 3_600_000));
    const { provider } = hostCredentialProvider({
      env: {},
      exists: () => false,
      homeDir: HOME,
      loaders,
      now: () => NOW_MS,
    });
    const first = await provider();

    // Act
    const second = await provider({ forceRefresh: true } as Parameters<AwsCredentialIdentityProvider>[0]);

    // Assess
    expect(fetches).toHaveLength(2);
    expect(second.accessKeyId).not.toBe(first.accessKeyId);
  });

  it("passes forceRefresh to the SDK's own chain, which caches by itself", async () => {
    // Prepare
    const { loaders, fetches } = recordingLoaders();
    const { provider } = hostCredentialProvider({
      env: { AWS_PROFILE: 'ops' },
      exists: () => false,
      homeDir: HOME,
      loaders,
    });

    // Act
    await provider({ forceRefresh: true } as Parameters<AwsCredentialIdentityProvider>[0]);

    // Assess
    expect(fetches).toEqual(['sdkDefault force']);
  });

  it('tries a failed load again on the next call', async () => {
    // Prepare
    let attempts = 0;
    const good: AwsCredentialIdentity = { accessKeyId: 'AKID', secretAccessKey: 's' };
    const loaders = {
      instanceMetadata: async (): Promise<AwsCredentialIdentityProvider> => {
        attempts += 1;
        if (attempts === 1) throw new Error('Cannot find module');
        return async () => good;
      },
    };
    const { provider } = hostCredentialProvider({ env: {}, exists: () => false, homeDir: HOME, loaders });
    await expect(provider()).rejects.toThrow('Cannot find module');

    // Act
    const credentials = await provider();

    // Assess
    expect(credentials).toEqual(good);
    expect(attempts).toBe(2);
  });

  it('refuses with a CredentialsProviderError naming AWS_EC2_METADATA_DISABLED when IMDS is disabled', async () => {
    // Prepare
    const { loaders, calls } = recordingLoaders();
    const { provider, source } = hostCredentialProvider({
      env: { AWS_EC2_METADATA_DISABLED: 'true' },
      exists: () => false,
      homeDir: HOME,
      loaders,
    });

    // Act
    const failure = provider().catch((err: unknown) => err);

    // Assess
    expect(source).toBe('imds-disabled');
    const err = await failure;
    expect(err).toBeInstanceOf(CredentialsProviderError);
    expect((err as Error).message).toContain('AWS_EC2_METADATA_DISABLED');
    expect(calls).toEqual([]);
  });

  it("reads static env keys through the SDK's fromEnv by default", async () => {
    // Prepare
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDFROMENV');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret-from-env');
    vi.stubEnv('AWS_SESSION_TOKEN', 'token-from-env');
    vi.stubEnv('AWS_PROFILE', '');
    const { provider, source } = hostCredentialProvider({ exists: () => false, homeDir: HOME });

    // Act
    const credentials = await provider();

    // Assess
    expect(source).toBe('env');
    expect(credentials).toMatchObject({
      accessKeyId: 'AKIDFROMENV',
      secretAccessKey: 'secret-from-env',
      sessionToken: 'token-from-env',
    });
  });
});
