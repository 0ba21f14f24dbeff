import { describe, expect, it } from 'vitest';
import { firehoseRowColumns } from '../adapters/firehose-rows';
import { CANNED_CALLER, cannedEnvironment, cannedIngest } from './canned-ingest';
import { multiWindowBatch } from './multi-window-batch';
import { batchEvent, INSTANCE_ID } from './proxy-event';

/** The production handler on real SDK clients whose HTTP answers are canned, its logger silent. */
const wiredHandler = () => cannedIngest({ ...cannedEnvironment(), POWERTOOLS_LOG_LEVEL: 'SILENT' });

describe('ingest Lambda on the wire (real SDK serialisation and signing, canned AWS answers)', () => {
  it('stores a 6-window × 8-GPU batch with one state read and one signed Firehose call carrying all 48 rows', async () => {
    // Prepare
    const { handler, aws } = wiredHandler();
    const event = batchEvent(multiWindowBatch(7, Date.now()), { caller: CANNED_CALLER });
    // Act
    const res = await handler(event);
    // Assess
    expect(res.statusCode).toBe(202);
    expect(aws.calls.get('dynamodb:Query')).toBe(1);
    expect(aws.calls.get('firehose:PutRecordBatch')).toBe(1);
    const put = aws.lastRequest.get('firehose:PutRecordBatch')!;
    expect(put.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/firehose\/aws4_request/,
    );
    const body = JSON.parse(put.body) as { DeliveryStreamName: string; Records: { Data: string }[] };
    expect(body.DeliveryStreamName).toBe('gpu-sentinel-gpu-windows');
    expect(body.Records).toHaveLength(1);
    const rows = Buffer.from(body.Records[0]!.Data, 'base64').toString().trim().split('\n');
    expect(rows).toHaveLength(48);
    expect(firehoseRowColumns('gpu_windows', rows[0]!)).toMatchObject({
      instance_id: INSTANCE_ID,
      seq: 7,
      gpu_index: 0,
    });
    const query = JSON.parse(aws.lastRequest.get('dynamodb:Query')!.body);
    expect(query).toMatchObject({ KeyConditionExpression: 'pk = :p', ConsistentRead: true });
  });

  it('asks EC2, Auto Scaling and IAM about the sender once, then answers from the cache', async () => {
    // Prepare
    const { handler, aws } = wiredHandler();
    const now = Date.now();
    // Act
    const first = await handler(batchEvent(multiWindowBatch(1, now - 60_000), { caller: CANNED_CALLER }));
    const second = await handler(batchEvent(multiWindowBatch(2, now), { caller: CANNED_CALLER }));
    // Assess
    expect([first.statusCode, second.statusCode]).toEqual([202, 202]);
    expect(
      Object.fromEntries(
        [...aws.calls].filter(([k]) => !k.startsWith('dynamodb') && !k.startsWith('firehose')),
      ),
    ).toEqual({
      'ec2:DescribeInstances': 1,
      'autoscaling:DescribeAutoScalingInstances': 1,
      'autoscaling:DescribeAutoScalingGroups': 1,
      'iam:GetInstanceProfile': 1,
    });
    expect(aws.calls.get('firehose:PutRecordBatch')).toBe(2);
  });

  it('stores exactly the batch’s flush windows as rows, in order (horizons are judged, not stored)', async () => {
    // Prepare
    const { handler, aws } = wiredHandler();
    const batch = multiWindowBatch(3, Date.now(), 2, 4);
    // Act
    await handler(batchEvent(batch, { caller: CANNED_CALLER }));
    // Assess
    const put = JSON.parse(aws.lastRequest.get('firehose:PutRecordBatch')!.body) as {
      Records: { Data: string }[];
    };
    const rows = Buffer.from(put.Records[0]!.Data, 'base64')
      .toString()
      .trim()
      .split('\n')
      .map((r) => firehoseRowColumns('gpu_windows', r));
    expect(rows.map((r) => [r.gpu_index, r.time])).toEqual(
      batch.windows.filter((w) => w.kind === 'flush').map((w) => [w.gpu.index, Date.parse(w.end)]),
    );
  });
});
