import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_CHARTS } from '../../../lambdas/adapters/report-charts';
import { escapeHtml, REPORT_HTML_CSP, renderReportHtml } from '../../../lambdas/adapters/report-html';
import { fixtureReport } from '../report-fixture';

/** Debian's `chromium` (installed by .ci/run when missing), or CHROMIUM_PATH. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const VIEWPORT = { width: 1100, height: 1600 } as const;

/**
 * This process's environment without libfaketime: `.ci/run` runs the suite a second time under
 * `faketime -f '+30d'`, whose LD_PRELOAD Chromium's processes would inherit, and Chromium under it
 * takes a minute a page (20–55 s, 2 s without) reading its clocks through the shim. The page is a
 * static file rendered from the fixture's dates: Chromium's own clock enters no assertion.
 */
function envWithoutFaketime(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith('FAKETIME')) continue;
    if (name === 'LD_PRELOAD') {
      const kept = value.split(/[: ]/).filter((lib) => lib !== '' && !lib.includes('faketime'));
      if (kept.length > 0) env[name] = kept.join(':');
      continue;
    }
    env[name] = value;
  }
  return env;
}

/** Width and height from a PNG's IHDR chunk (bytes 16–23, big-endian). */
function pngSize(png: Buffer): { width: number; height: number } {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

// A page's load and charts take ≈ 0.5 s: the timeout is a hang guard, not a speed check.
describe('the HTML report in headless Chromium', { timeout: 240_000 }, () => {
  let dir: string;
  let browser: Browser;
  let file: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Expected Chromium at ${CHROMIUM} (apt-get install chromium, as .ci/run does), got none.`,
      );
    }
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-report-html-'));
    file = join(dir, 'report.html');
    await writeFile(file, await renderReportHtml(fixtureReport()));
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      timeout: 180_000,
      env: envWithoutFaketime(),
      // The closed network of CI machines: without the background-networking flags Chromium
      // reaches for Google's hosts at start and on its own timers (component updates, sync,
      // QUIC probes), each refused or left to time out; the page itself is a file and needs none.
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-default-apps',
        '--disable-extensions',
      ],
    });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('renders with every chart, no console error and no request but the page itself', async () => {
    // Prepare
    const page = await browser.newPage();
    const problems: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warn') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${String(e)}`));
    page.on('request', (r) => requests.push(r.url()));
    // Act
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    const charts = await page.$$eval('figure.chart', (figures) =>
      figures.map((f) => ({
        name: f.getAttribute('data-chart'),
        width: f.querySelector('svg')?.getBoundingClientRect().width ?? 0,
        marks: f.querySelectorAll('svg .mark-rect path, svg .mark-rect rect').length,
      })),
    );
    const title = await page.title();
    await page.close();
    // Assess
    expect(problems).toEqual([]);
    expect(requests).toEqual([pathToFileURL(file).href]);
    expect(title).toBe('GPU waste report, 2026-03-02 to 2026-03-09');
    expect(charts.map((c) => c.name)).toEqual([...REPORT_CHARTS]);
    for (const c of charts) {
      expect(c.width).toBeGreaterThan(200);
      expect(c.marks).toBeGreaterThan(0);
    }
  });

  it('shows finance the rates, the top wasters with their fix, the causes summing to the total and the change', async () => {
    // Prepare
    const page = await browser.newPage();
    await page.setViewport(VIEWPORT);
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    // Act
    const tables =
      (await page.evaluate(`(() => Object.fromEntries([...document.querySelectorAll('table[data-table]')].map((t) => [
      t.getAttribute('data-table'),
      { visible: t.getBoundingClientRect().height > 0, rows: [...t.querySelectorAll('tbody tr, tfoot tr')].map((r) => [...r.children].map((c) => c.textContent.trim())) },
    ])))()`)) as Record<string, { visible: boolean; rows: string[][] }>;
    const change = await page.$eval('p.change', (p) => p.textContent ?? '');
    await page.screenshot({ path: join(dir, 'report-finance.png'), fullPage: true });
    await page.close();
    // Assess
    expect(Object.keys(tables)).toEqual(['rates', 'top-wasters', 'causes']);
    for (const t of Object.values(tables)) expect(t.visible).toBe(true);
    expect(tables.rates?.rows).toEqual([
      [
        'p5.48xlarge',
        '$55.04/h',
        'on-demand list price (builtin:aws-ec2-on-demand-linux-2026-11-23)',
        '144.0',
      ],
      ['p5e.48xlarge', '$0.00/h', 'unpriced (costed at $0)', '24.0'],
    ]);
    const [top] = tables['top-wasters']?.rows ?? [];
    expect(top?.slice(0, 7)).toEqual([
      'i-0aaa',
      'p5.48xlarge',
      'vision',
      'train-1',
      '$330.24',
      '$181.63',
      'idle',
    ]);
    expect(top?.[7]).toMatch(/Release idle instances/);
    const causes = tables.causes?.rows ?? [];
    expect(causes.at(-1)?.slice(0, 3)).toEqual(['Total', '$544.90', '100.0 %']);
    expect(causes.find((r) => r[0] === 'input_bound')?.[4]).toMatch(/DataLoader workers/);
    expect(change).toMatch(/wasted \$400\.00 then, \$544\.90 now: \+\$144\.90 \(\+36\.2 %\)/);
  });

  it('keeps a screenshot: a PNG of the viewport size that is not blank', async () => {
    // Prepare
    const page = await browser.newPage();
    await page.setViewport(VIEWPORT);
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    const shot = join(dir, 'report.png');
    // Act
    await page.screenshot({ path: shot });
    const png = await readFile(shot);
    // Runs in the page (DOM types are not in this project's lib): draw the PNG, count its colours.
    const colours = (await page.evaluate(`(async () => {
      const img = new Image();
      img.src = 'data:image/png;base64,${png.toString('base64')}';
      await img.decode();
      const canvas = document.createElement('canvas');
      canvas.width = img.width;
      canvas.height = img.height;
      const ctx = canvas.getContext('2d');
      ctx.drawImage(img, 0, 0);
      const data = ctx.getImageData(0, 0, img.width, img.height).data;
      const seen = new Set();
      for (let i = 0; i < data.length; i += 4 * 97) seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
      return seen.size;
    })()`)) as number;
    await page.close();
    // Assess
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(pngSize(png)).toEqual(VIEWPORT);
    expect(colours).toBeGreaterThan(20);
  });
});

describe('the HTML report page', () => {
  it('escapes tag values and forbids every fetch in its Content-Security-Policy', async () => {
    // Prepare / Act
    const html = await renderReportHtml(fixtureReport('job'));
    // Assess
    expect(html).toContain(`content="${REPORT_HTML_CSP}"`);
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toMatch(/<(link|img|iframe)\b/);
    expect(html).toContain(
      'i-0fff (p5e.48xlarge), 24.0 GPU-hours costed at $0, 6.0 of them idle: no list price for p5e.48xlarge in us-east-1',
    );
    expect(html).toMatch(/30\.0 GPU-hours idle \(priced or not\)/);
  });

  it.each([
    ['<b>', '&lt;b&gt;'],
    [`"'&`, '&quot;&#39;&amp;'],
  ])('escapeHtml(%j) is %j', (text, expected) => {
    // Prepare / Act / Assess
    expect(escapeHtml(text)).toBe(expected);
  });
});
