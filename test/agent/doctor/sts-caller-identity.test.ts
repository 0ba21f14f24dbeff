import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallerIdentityError, stsCallerArn } from '../../../agent/doctor';

const NOW = new Date('2026-11-21T10:00:00.000Z');
const CREDENTIALS = { accessKeyId: 'ASIAEXAMPLEEXAMPLE00', secretAccessKey: 'secret', sessionToken: 'token' };
/** STS's answer, in the shape of the STS API reference's GetCallerIdentity example. */
const OK_XML = `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <GetCallerIdentityResult>
    <Arn>arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1</Arn>
    <UserId>AROAEXAMPLEEXAMPLE01:i-0a5e00000000000a1</UserId>
    <Account>123456789012</Account>
  </GetCallerIdentityResult>
  <ResponseMetadata>
    <RequestId>01234567-89ab-cdef-0123-456789abcdef</RequestId>
  </ResponseMetadata>
</GetCallerIdentityResponse>`;
/** STS's Query-protocol error shape. */
const ERROR_XML = `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>InvalidClientTokenId</Code><Message>The security token included in the request is invalid.</Message></Error>
  <RequestId>01234567-89ab-cdef-0123-456789abcdef</RequestId>
</ErrorResponse>`;

let server: Server;
let url: string;
let answer: { status: number; body: string };
const seen: { headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      res.writeHead(answer.status, { 'content-type': 'text/xml' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('stsCallerArn', () => {
  it('sends a SigV4-signed GetCallerIdentity and reads the Arn', async () => {
    // Prepare
    answer = { status: 200, body: OK_XML };
    seen.length = 0;
    // Act
    const arn = await stsCallerArn({
      region: 'us-east-1',
      credentials: CREDENTIALS,
      clock: () => NOW,
      endpoint: url,
    });
    // Assess
    expect(arn).toBe('arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.body).toBe('Action=GetCallerIdentity&Version=2011-06-15');
    expect(seen[0]!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=ASIAEXAMPLEEXAMPLE00\/20261121\/us-east-1\/sts\/aws4_request, SignedHeaders=[^,]*content-type[^,]*host[^,]*x-amz-security-token/,
    );
    expect(seen[0]!.headers['x-amz-date']).toBe('20261121T100000Z');
  });

  it('throws naming STS error code and message when it refuses the credentials', async () => {
    // Prepare
    answer = { status: 403, body: ERROR_XML };
    // Act
    const act = stsCallerArn({
      region: 'us-east-1',
      credentials: CREDENTIALS,
      clock: () => NOW,
      endpoint: url,
    });
    // Assess
    await expect(act).rejects.toBeInstanceOf(CallerIdentityError);
    await expect(
      stsCallerArn({ region: 'us-east-1', credentials: CREDENTIALS, clock: () => NOW, endpoint: url }),
    ).rejects.toMatchObject({
      status: 403,
      code: 'InvalidClientTokenId',
      message: expect.stringContaining('is invalid'),
    });
  });

  it('throws when the credential provider has nothing', async () => {
    // Prepare
    const provider = async () => {
      throw new Error('Could not load credentials from any providers');
    };
    // Act
    const act = stsCallerArn({ region: 'us-east-1', credentials: provider, clock: () => NOW, endpoint: url });
    // Assess
    await expect(act).rejects.toThrow(/no answer or no credentials \(Could not load credentials/);
  });
});
