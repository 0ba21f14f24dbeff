import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { S3ReportFiles } from '../../../lambdas/adapters/s3-report-files';
import { SnsReportNotifier } from '../../../lambdas/adapters/sns-report-notifier';
import { createReportHandler } from '../../../lambdas/handlers/report-handler';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { expectValidAwsInputs } from '../adapters/aws-model';
import { gpuRow, ledger } from '../rows';
import { recordingLog } from './fakes';

const BUCKET = 'gpu-sentinel-reports-123456789012-us-east-1';
const KEY_ARN = 'arn:aws:kms:us-east-1:123456789012:key/0f6b0c4e-1111-4222-8333-444455556666';
const TOPIC = 'arn:aws:sns:us-east-1:123456789012:gpu-sentinel-reports';
/** A scheduled run at 00:05 UTC: the day report covers 2026-03-10 whole. */
const RUN_AT = new Date('2026-03-11T00:05:00Z');

const s3 = mockClient(S3Client);
const sns = mockClient(SNSClient);

describe('report Lambda', () => {
  let store: DuckDbStore;

  beforeEach(async () => {
    s3.reset();
    sns.reset();
    s3.on(PutObjectCommand).resolves({});
    sns.on(PublishCommand).resolves({ MessageId: 'm-1' });
    store = await DuckDbStore.open(':memory:');
    await store.write({
      gpu: [
        gpuRow({ time: '2026-03-10T12:00:10.000Z', gpu_index: 0 }),
        gpuRow({
          time: '2026-03-10T12:00:10.000Z',
          gpu_index: 1,
          ledger: ledger({ diagnosis: 'input_bound' }),
        }),
        gpuRow({ time: '2026-03-11T00:01:00.000Z', gpu_index: 0 }),
      ],
      efa: [],
      events: [],
    });
  });

  afterEach(async () => {
    await store.close();
    expectValidAwsInputs(s3, 's3');
    expectValidAwsInputs(sns, 'sns');
  });

  function handler() {
    return createReportHandler({
      store,
      files: new S3ReportFiles({
        client: new S3Client({ region: 'us-east-1' }),
        bucket: BUCKET,
        kmsKeyArn: KEY_ARN,
      }),
      notifier: new SnsReportNotifier({ client: new SNSClient({ region: 'us-east-1' }), topicArn: TOPIC }),
      log: recordingLog(),
      clock: () => RUN_AT,
    });
  }

  it('writes one KMS-encrypted CSV per grouping and the HTML page for the last whole UTC day', async () => {
    // Prepare / Act
    const result = await handler()({ period: 'day' });
    // Assess
    const puts = s3.commandCalls(PutObjectCommand).map((c) => c.args[0].input);
    expect(puts.map((p) => [p.Key, p.ContentType])).toEqual([
      ['reports/day/2026-03-11/waste-by-team.csv', 'text/csv; charset=utf-8'],
      ['reports/day/2026-03-11/waste-by-job.csv', 'text/csv; charset=utf-8'],
      ['reports/day/2026-03-11/waste-by-namespace.csv', 'text/csv; charset=utf-8'],
      ['reports/day/2026-03-11/waste-by-pod.csv', 'text/csv; charset=utf-8'],
      ['reports/day/2026-03-11/waste-by-instance_type.csv', 'text/csv; charset=utf-8'],
      ['reports/day/2026-03-11/waste-by-instance.csv', 'text/csv; charset=utf-8'],
      ['reports/day/2026-03-11/waste-by-diagnosis.csv', 'text/csv; charset=utf-8'],
      ['reports/day/2026-03-11/waste-by-gpu.csv', 'text/csv; charset=utf-8'],
      ['reports/day/2026-03-11/report.html', 'text/html; charset=utf-8'],
    ]);
    for (const p of puts) {
      expect(p).toMatchObject({
        Bucket: BUCKET,
        ServerSideEncryption: 'aws:kms',
        SSEKMSKeyId: KEY_ARN,
        BucketKeyEnabled: true,
      });
    }
    expect(String(puts[0]?.Body)).toMatch(/^\uFEFFperiod_from,/);
    expect(String(puts[0]?.Body)).toMatch(/^\uFEFFperiod_from,period_to,team,gpu_hours,/);
    expect(String(puts[0]?.Body)).toContain('2026-03-10T00:00:00.000Z,2026-03-11T00:00:00.000Z,vision,');
    const lineItems = String(puts[5]?.Body).split('\r\n');
    expect(lineItems[0]).toContain(',day,team,job,namespace,instance_id,instance_type,region,az,lifecycle,');
    expect(lineItems.filter((l) => l.includes(',2026-03-10,'))).toHaveLength(1);
    expect(result.period).toEqual({ from: '2026-03-10T00:00:00.000Z', to: '2026-03-11T00:00:00.000Z' });
    expect(result.wasted_usd).toBeCloseTo(2 * ledger().wasted_usd, 12);
  });

  it('publishes on the reports topic after the files, naming them', async () => {
    // Prepare / Act
    await handler()({ period: 'day', by: 'job' });
    // Assess
    const [publish] = sns.commandCalls(PublishCommand).map((c) => c.args[0].input);
    expect(publish).toMatchObject({
      TopicArn: TOPIC,
      Subject: 'GPU waste day report: $0.02 of $0.04 wasted',
      MessageAttributes: {
        report_period: { DataType: 'String', StringValue: 'day' },
        group_by: { DataType: 'String', StringValue: 'job' },
      },
    });
    expect(publish?.Subject?.length).toBeLessThanOrEqual(100);
    expect(publish?.Message).toContain(`CSV: s3://${BUCKET}/reports/day/2026-03-11/waste-by-job.csv`);
    expect(publish?.Message).toContain(`HTML: s3://${BUCKET}/reports/day/2026-03-11/report.html`);
    const lastPut = s3.commandCalls(PutObjectCommand).at(-1);
    const published = sns.commandCalls(PublishCommand)[0];
    expect(lastPut !== undefined && published !== undefined && lastPut.calledBefore(published)).toBe(true);
  });

  it('announces nothing when a file cannot be written', async () => {
    // Prepare
    s3.on(PutObjectCommand).rejects(new Error('AccessDenied'));
    // Act / Assess
    await expect(handler()({ period: 'week' })).rejects.toThrow('AccessDenied');
    expect(sns.commandCalls(PublishCommand)).toHaveLength(0);
  });

  it.each([[{}], [{ period: 'year' }], [{ period: 'day', by: 'project' }]])(
    'refuses the event %j',
    async (event) => {
      // Prepare / Act / Assess
      await expect(handler()(event)).rejects.toBeInstanceOf(ZodError);
      expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
    },
  );
});
