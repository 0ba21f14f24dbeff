import type { HttpHandler, HttpRequest } from '@smithy/protocol-http';
import { HttpResponse } from '@smithy/protocol-http';

/**
 * An SDK v3 `requestHandler` that answers every call with the wire response AWS gives a healthy,
 * quiet deployment, without a network: the real clients still build, serialise and sign each
 * request and parse each answer (unlike aws-sdk-client-mock, which replaces `send` and skips all
 * of it). For benchmarks of the ingest path and tests of what really goes over the wire.
 *
 * Answers (the services the ingest Lambda calls; the operation is read from `X-Amz-Target` for
 * the JSON protocols and from `Action=` for the query protocols):
 * - Firehose `PutRecordBatch`: every record accepted;
 * - DynamoDB: `Query` no items, `GetItem` no item, writes accepted (no state: nothing broken,
 *   nothing firing, nothing idle);
 * - SNS `Publish`: a message id;
 * - Timestream Write: `DescribeEndpoints` (endpoint discovery), `WriteRecords` accepted;
 * - EC2 `DescribeInstances`: the instance asked for, running, a p5.48xlarge with instance profile
 *   {@link CANNED_PROFILE} holding role {@link CANNED_ROLE}, tagged `team=training`;
 * - Auto Scaling: the instance in group {@link CANNED_GROUP} (desired capacity 8);
 * - IAM `GetInstanceProfile`: {@link CANNED_PROFILE} with {@link CANNED_ROLE}.
 *
 * Every call is counted in {@link CannedAwsHandler.calls} as `service:Operation`.
 */
export class CannedAwsHandler implements HttpHandler<Record<string, never>> {
  /** `service:Operation` → calls answered. */
  readonly calls = new Map<string, number>();
  /** Request body bytes by `service:Operation` (what the service would meter). */
  readonly bodyBytes = new Map<string, number>();
  /** The last request of each `service:Operation`, as signed and sent. */
  readonly lastRequest = new Map<
    string,
    { readonly headers: Readonly<Record<string, string>>; readonly body: string }
  >();

  async handle(request: HttpRequest): Promise<{ response: HttpResponse }> {
    const service = request.hostname.split('.')[0] ?? '';
    const body = bodyText(request.body);
    const target = request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'];
    const operation = target?.split('.')[1] ?? /(?:^|&)Action=([A-Za-z]+)/.exec(body)?.[1] ?? '?';
    const key = `${service}:${operation}`;
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
    this.bodyBytes.set(key, (this.bodyBytes.get(key) ?? 0) + Buffer.byteLength(body));
    this.lastRequest.set(key, { headers: request.headers, body });
    const [contentType, text] = answer(service, operation, body);
    return {
      response: new HttpResponse({
        statusCode: 200,
        headers: { 'content-type': contentType, 'x-amzn-requestid': 'canned-request-id' },
        body: Buffer.from(text),
      }),
    };
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  /** Calls answered, all services. */
  total(): number {
    let n = 0;
    for (const count of this.calls.values()) n += count;
    return n;
  }
}

/** The account of the canned answers. */
export const CANNED_ACCOUNT = '123456789012';
/** The instance profile EC2 reports for every instance. */
export const CANNED_PROFILE = 'GpuNodeProfile';
/** The role of {@link CANNED_PROFILE}: an agent calling as `assumed-role/GpuNodeRole/<instance id>` passes. */
export const CANNED_ROLE = 'GpuNodeRole';
/** The Auto Scaling group of every instance. */
export const CANNED_GROUP = 'gpu-train-p5';

const JSON_1_1 = 'application/x-amz-json-1.1';
const JSON_1_0 = 'application/x-amz-json-1.0';
const XML = 'text/xml';

function bodyText(body: unknown): string {
  if (body === undefined || body === null) return '';
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array)
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString();
  throw new Error(`Expected a string or bytes as request body, got ${typeof body} (a stream)`);
}

function param(body: string, name: string): string {
  const raw = new RegExp(`(?:^|&)${name.replace('.', '\\.')}=([^&]*)`).exec(body)?.[1] ?? '';
  return decodeURIComponent(raw.replace(/\+/g, ' '));
}

function count(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

function answer(service: string, operation: string, body: string): [string, string] {
  switch (`${service}:${operation}`) {
    case 'firehose:PutRecordBatch': {
      const records = count(body, '"Data"');
      const responses = Array.from({ length: records }, (_, i) => `{"RecordId":"canned-${i}"}`).join(',');
      return [JSON_1_1, `{"FailedPutCount":0,"Encrypted":true,"RequestResponses":[${responses}]}`];
    }
    case 'dynamodb:Query':
      return [JSON_1_0, '{"Count":0,"Items":[],"ScannedCount":0}'];
    case 'dynamodb:GetItem':
    case 'dynamodb:PutItem':
    case 'dynamodb:DeleteItem':
    case 'dynamodb:UpdateItem':
    case 'dynamodb:TransactWriteItems':
      return [JSON_1_0, '{}'];
    case 'ingest:DescribeEndpoints':
    case 'query:DescribeEndpoints':
      return [
        JSON_1_0,
        `{"Endpoints":[{"Address":"${service}-cell1.timestream.us-east-1.amazonaws.com","CachePeriodInMinutes":1440}]}`,
      ];
    case 'ingest-cell1:WriteRecords': {
      const records = count(body, '"MeasureName"');
      return [
        JSON_1_0,
        `{"RecordsIngested":{"Total":${records},"MemoryStore":${records},"MagneticStore":0}}`,
      ];
    }
    case 'sns:Publish':
      return [
        XML,
        '<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>canned-message</MessageId></PublishResult><ResponseMetadata><RequestId>canned</RequestId></ResponseMetadata></PublishResponse>',
      ];
    case 'ec2:DescribeInstances': {
      const id = param(body, 'InstanceId.1');
      return [
        XML,
        `<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>canned</requestId><reservationSet><item><reservationId>r-0canned</reservationId><ownerId>${CANNED_ACCOUNT}</ownerId><instancesSet><item><instanceId>${id}</instanceId><instanceType>p5.48xlarge</instanceType><instanceState><code>16</code><name>running</name></instanceState><iamInstanceProfile><arn>arn:aws:iam::${CANNED_ACCOUNT}:instance-profile/${CANNED_PROFILE}</arn><id>AIPACANNEDPROFILE0001</id></iamInstanceProfile><tagSet><item><key>team</key><value>training</value></item><item><key>aws:autoscaling:groupName</key><value>${CANNED_GROUP}</value></item></tagSet></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`,
      ];
    }
    case 'autoscaling:DescribeAutoScalingInstances': {
      const id = param(body, 'InstanceIds.member.1');
      return [
        XML,
        `<DescribeAutoScalingInstancesResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><DescribeAutoScalingInstancesResult><AutoScalingInstances><member><InstanceId>${id}</InstanceId><AutoScalingGroupName>${CANNED_GROUP}</AutoScalingGroupName><AvailabilityZone>us-east-1a</AvailabilityZone><LifecycleState>InService</LifecycleState><HealthStatus>HEALTHY</HealthStatus><ProtectedFromScaleIn>false</ProtectedFromScaleIn></member></AutoScalingInstances></DescribeAutoScalingInstancesResult><ResponseMetadata><RequestId>canned</RequestId></ResponseMetadata></DescribeAutoScalingInstancesResponse>`,
      ];
    }
    case 'autoscaling:DescribeAutoScalingGroups':
      return [
        XML,
        `<DescribeAutoScalingGroupsResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><DescribeAutoScalingGroupsResult><AutoScalingGroups><member><AutoScalingGroupName>${CANNED_GROUP}</AutoScalingGroupName><MinSize>0</MinSize><MaxSize>16</MaxSize><DesiredCapacity>8</DesiredCapacity><DefaultCooldown>300</DefaultCooldown><HealthCheckType>EC2</HealthCheckType><CreatedTime>2026-01-01T00:00:00Z</CreatedTime><AvailabilityZones><member>us-east-1a</member></AvailabilityZones><Tags/></member></AutoScalingGroups></DescribeAutoScalingGroupsResult><ResponseMetadata><RequestId>canned</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>`,
      ];
    case 'iam:GetInstanceProfile':
      return [
        XML,
        `<GetInstanceProfileResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><GetInstanceProfileResult><InstanceProfile><InstanceProfileName>${CANNED_PROFILE}</InstanceProfileName><InstanceProfileId>AIPACANNEDPROFILE0001</InstanceProfileId><Arn>arn:aws:iam::${CANNED_ACCOUNT}:instance-profile/${CANNED_PROFILE}</Arn><Path>/</Path><CreateDate>2026-01-01T00:00:00Z</CreateDate><Roles><member><RoleName>${CANNED_ROLE}</RoleName><RoleId>AROACANNEDROLE000001</RoleId><Arn>arn:aws:iam::${CANNED_ACCOUNT}:role/${CANNED_ROLE}</Arn><Path>/</Path><CreateDate>2026-01-01T00:00:00Z</CreateDate></member></Roles></InstanceProfile></GetInstanceProfileResult><ResponseMetadata><RequestId>canned</RequestId></ResponseMetadata></GetInstanceProfileResponse>`,
      ];
    default:
      throw new Error(`Expected a call the canned handler answers, got ${service}:${operation}`);
  }
}
