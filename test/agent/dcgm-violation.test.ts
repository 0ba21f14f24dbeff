import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDcgmExporterText } from '../../agent/sources/dcgm-exporter';
import { DcgmProfilingSource } from '../../agent/sources/dcgm-profiling';
import type { SampleSink, SourceContext } from '../../agent/sources/source';

/** The real p5 scrape (no violation counters: dcgm-exporter's default list leaves them out). */
const REAL = readFileSync(
  new URL('../fixtures/real/dcgm-exporter-h100-eks_ip-10-0-171-111_2026-03-10.prom', import.meta.url),
  'utf8',
);

/**
 * The real scrape plus violation counters with the real capture's labels, under the HELP/TYPE lines
 * older dcgm-exporter counter files print for fields 240/241 ("… (in us)"). The values are ns all the
 * same (DCGM's field-id documentation; NVIDIA/dcgm-exporter pull request 589 corrected the HELP text).
 */
function withViolations(power: (gpu: number) => number | string, thermal?: (gpu: number) => number): string {
  const labels = REAL.split('\n')
    .filter((l) => l.startsWith('DCGM_FI_DEV_GPU_TEMP{'))
    .map((l) => l.slice('DCGM_FI_DEV_GPU_TEMP'.length, l.lastIndexOf('}') + 1));
  const gpuOf = (l: string) => Number(/gpu="(\d+)"/.exec(l)?.[1]);
  const lines = [
    '# HELP DCGM_FI_DEV_POWER_VIOLATION Throttling duration due to power constraints (in us)',
    '# TYPE DCGM_FI_DEV_POWER_VIOLATION counter',
    ...labels.map((l) => `DCGM_FI_DEV_POWER_VIOLATION${l} ${power(gpuOf(l))}`),
  ];
  if (thermal)
    lines.push(
      '# HELP DCGM_FI_DEV_THERMAL_VIOLATION Throttling duration due to thermal constraints (in us)',
      '# TYPE DCGM_FI_DEV_THERMAL_VIOLATION counter',
      ...labels.map((l) => `DCGM_FI_DEV_THERMAL_VIOLATION${l} ${thermal(gpuOf(l))}`),
    );
  return `${REAL.trimEnd()}\n${lines.join('\n')}\n`;
}

describe('parseDcgmExporterText violation counters', () => {
  it('reads DCGM_FI_DEV_POWER/THERMAL_VIOLATION ns as whole µs counters beside the metrics, never as metrics', () => {
    // Act: GPU g throttled g s for power and 5·g µs + 999 ns for heat
    const parse = parseDcgmExporterText(
      withViolations(
        (g) => 1e9 * g,
        (g) => 5000 * g + 999,
      ),
    );
    // Assess
    expect(parse.malformed).toEqual([]);
    expect(parse.ignored_fields).not.toContain('DCGM_FI_DEV_POWER_VIOLATION');
    expect(parse.gpus).toHaveLength(8);
    expect(parse.gpus[3]?.violation_us).toEqual({
      power_violation_us_total: 3_000_000,
      thermal_violation_us_total: 15,
    });
    for (const gpu of parse.gpus) expect(gpu.metrics).not.toHaveProperty('power_throttle_ratio');
  });

  it('leaves the counters absent where the scrape has none (the real capture)', () => {
    // Act
    const parse = parseDcgmExporterText(REAL);
    // Assess
    for (const gpu of parse.gpus) expect(gpu).not.toHaveProperty('violation_us');
  });

  it('reports a negative counter as malformed and leaves it out; a large one in exponent form is read', () => {
    // Act
    const parse = parseDcgmExporterText(withViolations((g) => (g === 0 ? -5 : g === 1 ? '1.2e+16' : 10_500)));
    // Assess
    expect(parse.gpus[0]).not.toHaveProperty('violation_us');
    expect(parse.gpus[1]?.violation_us).toEqual({ power_violation_us_total: 1.2e13 });
    expect(parse.gpus[2]?.violation_us).toEqual({ power_violation_us_total: 10 });
    expect(parse.malformed.map((m) => m.reason)).toEqual([
      expect.stringContaining('DCGM_FI_DEV_POWER_VIOLATION to be a count of ns >= 0, got -5'),
    ]);
  });
});

describe('DcgmProfilingSource violation overlay', () => {
  let server: Server;
  let url: string;
  let body = '';
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const context: SourceContext = {
    clock: () => new Date('2026-11-21T10:00:00Z'),
    emit: () => {},
    warn: () => {},
    timers: { setInterval: () => 0, clearInterval: () => {} },
  };
  function poll(dcgm: DcgmProfilingSource): Map<number, unknown> {
    const overlays = new Map<number, unknown>();
    const sink: SampleSink = {
      gpu: () => {},
      row: () => {},
      overlay: (i, f) => void overlays.set(i, { ...(overlays.get(i) as object), ...f }),
      event: () => {},
      error: () => {},
    };
    dcgm.sample(sink, new Date('2026-11-21T10:00:01Z'));
    return overlays;
  }
  const profilingLines = (text: string) =>
    `${text.trimEnd()}\n${text
      .split('\n')
      .filter((l) => l.startsWith('DCGM_FI_DEV_GPU_TEMP{'))
      .map(
        (l) => `DCGM_FI_PROF_SM_ACTIVE${l.slice('DCGM_FI_DEV_GPU_TEMP'.length, l.lastIndexOf('}') + 1)} 0.5`,
      )
      .join('\n')}\n`;

  it('overlays the thermal counter (not the power one: NVML reads that) while scraped every poll', async () => {
    // Prepare
    body = profilingLines(
      withViolations(
        () => 7,
        (g) => 1000 * (100 + g),
      ),
    );
    const dcgm = new DcgmProfilingSource({ url });
    await dcgm.open(context);
    // Act
    const overlays = poll(dcgm);
    await dcgm.close();
    // Assess
    expect(overlays.get(2)).toEqual({ sm_active: 0.5, thermal_violation_us_total: 102 });
  });

  it('overlays no counter when the exporter is read only for pod labels (GPM on)', async () => {
    // Prepare
    body = profilingLines(
      withViolations(
        () => 7,
        (g) => 1000 * (100 + g),
      ),
    );
    const dcgm = new DcgmProfilingSource({ url, gpmActive: () => true });
    await dcgm.open(context);
    // Act
    const overlays = poll(dcgm);
    await dcgm.close();
    // Assess
    for (const overlay of overlays.values()) expect(overlay).not.toHaveProperty('thermal_violation_us_total');
  });
});
