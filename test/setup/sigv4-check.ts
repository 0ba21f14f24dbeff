import type { IncomingHttpHeaders } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

/** A POST an HTTP test server received: what API Gateway would verify. */
export interface ReceivedRequest {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * The `Authorization` API Gateway would compute for a received POST: the request re-signed (service
 * `execute-api`, us-east-1) with `credentials` over the headers its `SignedHeaders` names, at
 * `signingDate` (default: the request's own `x-amz-date`). Equal to the header sent iff the
 * signature verifies.
 *
 * @param req - the request as the server got it
 * @param endpoint - the URL it was sent to (host and port)
 * @param credentials - the keys the sender should have used
 * @param signingDate - the signing time @default parsed from `x-amz-date` (`YYYYMMDDTHHMMSSZ`)
 */
export async function expectedAuthorization(
  req: ReceivedRequest,
  endpoint: string,
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
  signingDate?: Date,
): Promise<string | undefined> {
  const signedHeaders =
    /SignedHeaders=([^,]+)/.exec(String(req.headers.authorization))?.[1]?.split(';') ?? [];
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) headers[name] = String(req.headers[name]);
  const d = String(req.headers['x-amz-date']);
  const date =
    signingDate ??
    new Date(`${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`);
  const url = new URL(endpoint);
  const signer = new SignatureV4({
    service: 'execute-api',
    region: 'us-east-1',
    credentials,
    sha256: Sha256,
  });
  const signed = await signer.sign(
    new HttpRequest({
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      port: Number(url.port),
      path: req.url,
      headers,
      body: req.body,
    }),
    { signingDate: date },
  );
  return signed.headers.authorization;
}
