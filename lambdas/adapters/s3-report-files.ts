import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { ReportFileSink } from '../domain/ports';

/** Options of {@link S3ReportFiles}. */
export interface S3ReportFilesOptions {
  /** The S3 client, in the bucket's region. */
  readonly client: S3Client;
  /** The reports bucket name. */
  readonly bucket: string;
  /** The customer-managed KMS key (ARN) the bucket encrypts with; every object names it. */
  readonly kmsKeyArn: string;
  /** Key prefix under which report files go, without leading slash. @default 'reports/' */
  readonly prefix?: string;
}

/**
 * Writes report files to the KMS-encrypted reports bucket with S3 `PutObject`: server-side
 * encryption `aws:kms` with the stack's key and an S3 Bucket Key (fewer KMS requests), the media
 * type set so a browser opens the HTML page and a spreadsheet the CSV.
 */
export class S3ReportFiles implements ReportFileSink {
  readonly #opts: S3ReportFilesOptions;

  /** @param opts - client, bucket, key, prefix */
  constructor(opts: S3ReportFilesOptions) {
    this.#opts = opts;
  }

  /**
   * @param name - path under the prefix, e.g. `week/2026-03-11/report.html`
   * @param body - UTF-8 text
   * @param contentType - media type
   * @returns `s3://<bucket>/<prefix><name>`
   * @throws whatever `PutObject` throws (the scheduled run fails and is retried; nothing announced)
   */
  async put(name: string, body: string, contentType: string): Promise<string> {
    const key = `${this.#opts.prefix ?? 'reports/'}${name}`;
    await this.#opts.client.send(
      new PutObjectCommand({
        Bucket: this.#opts.bucket,
        Key: key,
        Body: body,
        ContentType: contentType,
        ServerSideEncryption: 'aws:kms',
        SSEKMSKeyId: this.#opts.kmsKeyArn,
        BucketKeyEnabled: true,
      }),
    );
    return `s3://${this.#opts.bucket}/${key}`;
  }
}
