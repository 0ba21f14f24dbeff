import { describe, expect, it } from 'vitest';
import { REPORT_MESSAGE_TOP_WASTERS, reportSnsMessage, reportSummaryText } from '../../../lambdas/domain';
import { fixtureReport } from '../report-fixture';

const LOCATIONS = {
  csv: 's3://gpu-sentinel-reports/weekly/2026-03-11/report.csv',
  html: 's3://gpu-sentinel-reports/weekly/2026-03-11/report.html',
};

describe('reportSnsMessage', () => {
  it('says the totals in a subject of at most 100 characters', () => {
    // Prepare / Act
    const { subject } = reportSnsMessage(fixtureReport(), LOCATIONS);
    // Assess
    expect(subject).toBe('GPU waste week report: $544.90 of $990.72 wasted');
    expect(subject.length).toBeLessThanOrEqual(100);
  });

  it('names the top 5 wasters, most wasted first, and where the files are', () => {
    // Prepare
    const report = fixtureReport();
    // Act
    const { body } = reportSnsMessage(report, LOCATIONS);
    // Assess
    const ranked = body.split('\n').filter((l) => /^\d+\. /.test(l));
    expect(ranked).toHaveLength(REPORT_MESSAGE_TOP_WASTERS);
    expect(ranked[0]).toMatch(
      /^1\. i-0aaa \(p5\.48xlarge, team vision, job train-1\): \$181\.63 wasted of \$330\.24, mostly idle: Release idle instances/,
    );
    expect(report.top_wasters.length).toBeGreaterThan(REPORT_MESSAGE_TOP_WASTERS);
    expect(body).toContain(`CSV: ${LOCATIONS.csv}`);
    expect(body).toContain(`HTML: ${LOCATIONS.html}`);
    expect(body).toContain('Unpriced: i-0fff (p5e.48xlarge: no list price for p5e.48xlarge in us-east-1');
    expect(body).toContain('Idle GPU-hours (priced or not): 30.0');
    expect(body).toMatch(
      /Change against 2026-02-23T00:00:00\.000Z to 2026-03-02T00:00:00\.000Z: wasted \$400\.00 then, \+\$144\.90 now \(\+36\.2 %\)/,
    );
    expect(body).toMatch(/Method: Efficiency is SM activity/);
  });
});

describe('reportSummaryText', () => {
  it('lists the groups, the method, the prices and the unpriced hosts', () => {
    // Prepare / Act
    const text = reportSummaryText(fixtureReport('instance'));
    // Assess
    expect(text).toContain('By instance:');
    expect(text).toContain('  i-0fff: 1 GPUs, 24.0 GPU-h, cost $0.00, wasted $0.00 (–) [unpriced]');
    expect(text).toContain(
      'Prices: builtin:aws-ec2-on-demand-linux-2026-11-23 (144.0 GPU-h); unpriced (24.0 GPU-h)',
    );
  });
});
