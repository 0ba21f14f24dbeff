import { describe, expect, it } from 'vitest';
import { classifyApiRefusal, refusalFix } from '../../../agent/doctor';

const ARN = 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1';
const RESOURCE = 'arn:aws:execute-api:us-east-1:********9012:abc123defg/prod/POST/v1/batches';

describe('classifyApiRefusal', () => {
  it.each([
    [
      "API Gateway's explicit deny (resource policy Deny statement)",
      403,
      { 'x-amzn-ErrorType': 'AccessDeniedException' },
      {
        Message: `User: ${ARN} is not authorized to perform: execute-api:Invoke on resource: ${RESOURCE} with an explicit deny`,
      },
      { by: 'resource-policy', explicitDeny: true, errorType: 'AccessDeniedException' },
    ],
    [
      'an implicit deny without the header (the developer guide wording)',
      403,
      {},
      {
        Message: `User: anonymous is not authorized to perform: execute-api:Invoke on resource: ${RESOURCE}`,
      },
      { by: 'resource-policy', explicitDeny: false },
    ],
    [
      "the handler's identity refusal",
      403,
      {},
      { error: 'caller session i-0bbb may not send for i-0a5e', path: 'host.instance_id' },
      { by: 'handler', path: 'host.instance_id' },
    ],
    [
      "the handler's 400",
      400,
      {},
      { error: 'expected a uuid', path: 'batch_id' },
      { by: 'handler', path: 'batch_id' },
    ],
    [
      'a missing route or an unsigned request',
      403,
      { 'x-amzn-ErrorType': 'MissingAuthenticationTokenException' },
      { message: 'Missing Authentication Token' },
      { by: 'missing-route' },
    ],
    [
      'a bad signature (clock skew)',
      403,
      { 'x-amzn-ErrorType': 'InvalidSignatureException' },
      { message: 'Signature expired: 20261121T090000Z is now earlier than 20261121T095500Z' },
      { by: 'signature' },
    ],
    [
      'unknown credentials',
      403,
      { 'x-amzn-ErrorType': 'UnrecognizedClientException' },
      { message: 'The security token included in the request is invalid' },
      { by: 'credentials' },
    ],
    ['throttling', 429, {}, { message: 'Too Many Requests' }, { by: 'throttled' }],
    ['the handler unavailable', 503, {}, { error: 'store unavailable; retry later' }, { by: 'unavailable' }],
  ])('reads %s', (_name, status, headers, body, expected) => {
    // Act
    const refusal = classifyApiRefusal(status, new Headers(headers), JSON.stringify(body));
    // Assess
    expect(refusal).toMatchObject(expected);
  });

  it('keeps a non-JSON body as the message', () => {
    // Act
    const refusal = classifyApiRefusal(403, new Headers(), '<html>Forbidden by proxy</html>');
    // Assess
    expect(refusal).toEqual({ by: 'other', message: '<html>Forbidden by proxy</html>' });
    expect(refusalFix(refusal)).toContain('no proxy answers');
  });

  it('names the instance-credentials switch only for a resource-policy refusal', () => {
    // Prepare
    const policy = classifyApiRefusal(
      403,
      new Headers({ 'x-amzn-ErrorType': 'AccessDeniedException' }),
      '{}',
    );
    const handler = classifyApiRefusal(403, new Headers(), '{"error":"no","path":"host.instance_id"}');
    // Act / Assess
    expect(refusalFix(policy)).toContain('-c requireInstanceCredentials=false');
    expect(refusalFix(policy)).toContain('ec2:SourceInstanceARN');
    expect(refusalFix(handler)).not.toContain('requireInstanceCredentials');
  });
});
