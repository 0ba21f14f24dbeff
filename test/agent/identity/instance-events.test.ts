import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ImdsClient } from '../../../agent/identity/imds';
import {
  InstanceEventPoller,
  REBALANCE_RECOMMENDATION_PATH,
  SPOT_INSTANCE_ACTION_PATH,
} from '../../../agent/identity/instance-events';
import { EventSchema, type GpuEvent } from '../../../lambdas/contract';

const NOW = new Date('2026-11-21T10:00:00Z');
const TOKEN = 'token-1';

let server: Server;
let baseUrl: string;
/** IMDS paths (under /latest/meta-data/) → [status, body]. Absent → 404. */
let answers: Record<string, [number, string]>;
let gets: string[];

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.method === 'PUT' && req.url === '/latest/api/token') {
      res.end(TOKEN);
      return;
    }
    const prefix = '/latest/meta-data/';
    if (
      req.method !== 'GET' ||
      !req.url?.startsWith(prefix) ||
      req.headers['x-aws-ec2-metadata-token'] !== TOKEN
    ) {
      res.writeHead(401);
      res.end();
      return;
    }
    const path = req.url.slice(prefix.length);
    gets.push(path);
    const [status, body] = answers[path] ?? [404, 'Not Found'];
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  answers = {};
  gets = [];
});

const poller = (warnings: string[] = [], seen: GpuEvent[] = []) =>
  new InstanceEventPoller({
    imds: new ImdsClient({ baseUrl }),
    clock: () => NOW,
    onEvent: (e) => seen.push(e),
    onWarning: (m) => warnings.push(m),
  });

const SPOT = JSON.stringify({ action: 'terminate', time: '2026-11-21T10:02:00Z' });
const REBALANCE = JSON.stringify({ noticeTime: '2026-11-21T09:58:30Z' });

describe('InstanceEventPoller', () => {
  it('gives no event while both paths answer 404', async () => {
    // Prepare
    const warnings: string[] = [];
    const p = poller(warnings);

    // Act
    const events = await p.poll();

    // Assess
    expect(events).toEqual([]);
    expect(warnings).toEqual([]);
    expect(gets.sort()).toEqual([REBALANCE_RECOMMENDATION_PATH, SPOT_INSTANCE_ACTION_PATH]);
  });

  it.each([
    [
      'a spot interruption notice',
      SPOT_INSTANCE_ACTION_PATH,
      SPOT,
      {
        at: '2026-11-21T10:00:00.000000Z',
        kind: 'spot_interruption',
        source: 'imds',
        detail: 'action=terminate time=2026-11-21T10:02:00.000Z',
      },
    ],
    [
      'a spot stop notice',
      SPOT_INSTANCE_ACTION_PATH,
      JSON.stringify({ action: 'stop', time: '2026-11-21T10:02:00Z' }),
      {
        at: '2026-11-21T10:00:00.000000Z',
        kind: 'spot_interruption',
        source: 'imds',
        detail: 'action=stop time=2026-11-21T10:02:00.000Z',
      },
    ],
    [
      'a rebalance recommendation',
      REBALANCE_RECOMMENDATION_PATH,
      REBALANCE,
      {
        at: '2026-11-21T09:58:30.000000Z',
        kind: 'rebalance_recommendation',
        source: 'imds',
        detail: 'noticeTime=2026-11-21T09:58:30.000Z',
      },
    ],
  ])('reports %s once', async (_name, path, body, expected) => {
    // Prepare
    answers[path] = [200, body];
    const seen: GpuEvent[] = [];
    const p = poller([], seen);

    // Act
    const first = await p.poll();
    const second = await p.poll();

    // Assess
    expect(first).toEqual([expected]);
    expect(second).toEqual([]);
    expect(seen).toEqual([expected]);
    expect(EventSchema.safeParse(first[0]).error).toBeUndefined();
  });

  it('reports both notices of one poll, and a changed spot notice again', async () => {
    // Prepare
    answers[SPOT_INSTANCE_ACTION_PATH] = [200, SPOT];
    answers[REBALANCE_RECOMMENDATION_PATH] = [200, REBALANCE];
    const p = poller();

    // Act
    const first = await p.poll();
    answers[SPOT_INSTANCE_ACTION_PATH] = [
      200,
      JSON.stringify({ action: 'terminate', time: '2026-11-21T10:03:00Z' }),
    ];
    const second = await p.poll();

    // Assess
    expect(first.map((e) => e.kind).sort()).toEqual(['rebalance_recommendation', 'spot_interruption']);
    expect(second).toHaveLength(1);
    expect(second[0]?.detail).toBe('action=terminate time=2026-11-21T10:03:00.000Z');
  });

  it.each([
    ['not JSON', SPOT_INSTANCE_ACTION_PATH, 'terminate'],
    ['JSON without an action', SPOT_INSTANCE_ACTION_PATH, JSON.stringify({ time: '2026-11-21T10:02:00Z' })],
    [
      'a spot time that is not a date',
      SPOT_INSTANCE_ACTION_PATH,
      JSON.stringify({ action: 'stop', time: 'soon' }),
    ],
    ['a rebalance without noticeTime', REBALANCE_RECOMMENDATION_PATH, JSON.stringify({ when: 'now' })],
  ])('warns once and reports nothing for %s', async (_name, path, body) => {
    // Prepare
    answers[path] = [200, body];
    const warnings: string[] = [];
    const p = poller(warnings);

    // Act
    const events = [...(await p.poll()), ...(await p.poll())];

    // Assess
    expect(events).toEqual([]);
    expect(warnings).toHaveLength(1);
  });

  it('warns once and reports nothing while IMDS fails', async () => {
    // Prepare
    answers[SPOT_INSTANCE_ACTION_PATH] = [500, 'oops'];
    const warnings: string[] = [];
    const p = poller(warnings);

    // Act
    const events = [...(await p.poll()), ...(await p.poll())];

    // Assess
    expect(events).toEqual([]);
    expect(warnings).toHaveLength(1);
  });
});
