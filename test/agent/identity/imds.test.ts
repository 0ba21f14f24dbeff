import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ImdsUnavailableError } from '../../../agent/errors';
import { ImdsClient } from '../../../agent/identity/imds';
import { resolveIdentity } from '../../../agent/identity/resolve-identity';

const BASE_METADATA: Record<string, string> = {
  'instance-id': 'i-0a5e00000000000a1',
  'instance-type': 'p5.48xlarge',
  'placement/region': 'us-east-1',
  'placement/availability-zone': 'us-east-1a',
  'ami-id': 'ami-0123456789abcdef0',
  'instance-life-cycle': 'spot',
};

let server: Server;
let baseUrl: string;
let metadata: Record<string, string>;
let tokens: string[];
let tokenTtls: string[];
let expireNext: number;
let tokenStatus: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.method === 'PUT' && req.url === '/latest/api/token') {
      if (tokenStatus !== 200) {
        res.writeHead(tokenStatus);
        res.end();
        return;
      }
      const token = `token-${tokens.length}`;
      tokens.push(token);
      tokenTtls.push(String(req.headers['x-aws-ec2-metadata-token-ttl-seconds']));
      res.end(token);
      return;
    }
    const prefix = '/latest/meta-data/';
    if (
      req.method !== 'GET' ||
      !req.url?.startsWith(prefix) ||
      req.headers['x-aws-ec2-metadata-token'] !== tokens.at(-1)
    ) {
      res.writeHead(401);
      res.end();
      return;
    }
    if (expireNext > 0) {
      expireNext--;
      tokens.push('revoked');
      res.writeHead(401);
      res.end();
      return;
    }
    const value = metadata[decodeURIComponent(req.url.slice(prefix.length))];
    if (value === undefined) {
      res.writeHead(404);
      res.end('Not Found');
      return;
    }
    res.end(value);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  metadata = { ...BASE_METADATA };
  tokens = [];
  tokenTtls = [];
  expireNext = 0;
  tokenStatus = 200;
});

describe('ImdsClient', () => {
  it('reads the identity with one 6-hour token', async () => {
    // Prepare
    const client = new ImdsClient({ baseUrl });

    // Act
    const host = await client.host();

    // Assess
    expect(host).toEqual({
      instance_id: 'i-0a5e00000000000a1',
      instance_type: 'p5.48xlarge',
      region: 'us-east-1',
      az: 'us-east-1a',
      ami_id: 'ami-0123456789abcdef0',
      lifecycle: 'spot',
    });
    expect(tokenTtls).toEqual(['21600']);
  });

  it('reads the Auto Scaling group and the team/job/project tags when tags are exposed', async () => {
    // Prepare
    metadata['tags/instance'] = 'Name\naws:autoscaling:groupName\nteam\njob';
    metadata['tags/instance/aws:autoscaling:groupName'] = 'gpu-train-p5';
    metadata['tags/instance/team'] = 'training';
    metadata['tags/instance/job'] = 'llm-pretrain';
    metadata['tags/instance/Name'] = 'node-1';
    metadata['instance-life-cycle'] = 'on-demand';

    // Act
    const host = await new ImdsClient({ baseUrl }).host();

    // Assess
    expect(host.asg_name).toBe('gpu-train-p5');
    expect(host.tags).toEqual({ team: 'training', job: 'llm-pretrain' });
    expect(host.lifecycle).toBe('on-demand');
  });

  it('leaves the group and tags absent when tags are not exposed', async () => {
    // Prepare / Act
    const host = await new ImdsClient({ baseUrl }).host();

    // Assess
    expect(host.asg_name).toBeUndefined();
    expect(host.tags).toBeUndefined();
  });

  it('fetches a new token on 401 and retries the read', async () => {
    // Prepare
    const client = new ImdsClient({ baseUrl });
    await client.get('instance-id');
    expireNext = 1;

    // Act
    const id = await client.get('instance-id');

    // Assess
    expect(id).toBe('i-0a5e00000000000a1');
    expect(tokens.filter((t) => t.startsWith('token-'))).toHaveLength(2);
  });

  it.each([
    [
      'the token is refused',
      () => {
        tokenStatus = 403;
      },
      '/latest/api/token',
      403,
    ],
    [
      'the instance id is missing',
      () => {
        delete metadata['instance-id'];
      },
      '/latest/meta-data/instance-id',
      404,
    ],
    [
      'the region is not a region',
      () => {
        metadata['placement/region'] = 'moon';
      },
      '/latest/meta-data/',
      undefined,
    ],
  ])('throws ImdsUnavailableError when %s', async (_case, arrange, path, status) => {
    // Prepare
    arrange();

    // Act
    const error = await new ImdsClient({ baseUrl }).host().catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(ImdsUnavailableError);
    expect((error as ImdsUnavailableError).path).toBe(path);
    expect((error as ImdsUnavailableError).status).toBe(status);
  });

  it('throws ImdsUnavailableError when nothing answers', async () => {
    // Prepare
    const refuse = (() => Promise.reject(new TypeError('fetch failed'))) as typeof fetch;

    // Act
    const error = await new ImdsClient({ baseUrl, fetch: refuse, timeoutMs: 50 })
      .host()
      .catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(ImdsUnavailableError);
    expect((error as Error).message).toMatch(/IMDSv2/);
  });
});

describe('resolveIdentity', () => {
  it('skips IMDS when the override has every required field', async () => {
    // Prepare
    const refuse = (() => Promise.reject(new Error('must not be called'))) as typeof fetch;
    const override = {
      instance_id: 'i-0a5e00000000000b1',
      instance_type: 'p4d.24xlarge',
      region: 'eu-west-1',
    };

    // Act
    const host = await resolveIdentity({ override, fetch: refuse });

    // Assess
    expect(host).toEqual(override);
    expect(tokens).toEqual([]);
  });

  it('fills the gaps of a partial override from IMDS, override first, tags merged', async () => {
    // Prepare
    metadata['tags/instance'] = 'team';
    metadata['tags/instance/team'] = 'training';

    // Act
    const host = await resolveIdentity({
      override: { instance_type: 'p5e.48xlarge', tags: { project: 'atlas' } },
      imdsBaseUrl: baseUrl,
    });

    // Assess
    expect(host).toMatchObject({
      instance_id: 'i-0a5e00000000000a1',
      instance_type: 'p5e.48xlarge',
      region: 'us-east-1',
      tags: { team: 'training', project: 'atlas' },
    });
  });

  it('throws RangeError naming the field of a bad override', async () => {
    // Prepare
    const override = { instance_id: 'node-1', instance_type: 'p5.48xlarge', region: 'us-east-1' };

    // Act / Assess
    await expect(resolveIdentity({ override })).rejects.toThrow(/instance_id/);
  });
});
