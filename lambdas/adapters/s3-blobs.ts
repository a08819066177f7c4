/** The page store bucket: whole-object writes, listing, ranged reads and streamed reads. */
import { Readable } from 'node:stream';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { backoffPause, RETRY_BACKOFF } from '../core/base/index.ts';
import type { ResultStore } from '../core/crawl/index.ts';

const PUT_ONCE_ATTEMPTS = 5;

export class S3Blobs implements ResultStore {
  private readonly s3: S3Client;
  private readonly singleAttempt: S3Client;
  readonly bucket: string;

  /** `singleAttempt`: a client without SDK retries, for `putIfAbsent` (default: `s3`). */
  constructor(s3: S3Client, bucket: string, options: { singleAttempt?: S3Client } = {}) {
    this.s3 = s3;
    this.singleAttempt = options.singleAttempt ?? s3;
    this.bucket = bucket;
  }

  /**
   * Writes `key` once: a conditional PUT (`If-None-Match: *`), which S3 (and the local strict layer)
   * refuses with 412 when the key exists, so of concurrent writers exactly one wins. Each attempt
   * starts with a HEAD: a key that exists costs a HEAD, not a refused PUT (a PUT is billed at over ten
   * times a HEAD's price), and an S3 without conditional writes still writes nothing twice unless
   * writers race. False when the object already existed, including when an earlier attempt of this
   * call wrote it (its answer lost). Other failures, 409 included, are retried with the awsStep back-off.
   */
  async putIfAbsent(key: string, body: Uint8Array, contentType: string): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        if (await this.exists(key)) return false;
        await this.singleAttempt.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: body,
            ContentType: contentType,
            IfNoneMatch: '*',
          }),
        );
        return true;
      } catch (err) {
        const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        // 412: it exists. 409 (ConditionalRequestConflict): a concurrent conditional write of the key
        // is in progress and may yet fail; S3 says to retry, and the retry's HEAD sees how it ended.
        if (status === 412) return false;
        if (attempt >= PUT_ONCE_ATTEMPTS) throw err;
        await backoffPause(attempt, RETRY_BACKOFF.awsStep);
      }
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404) return false;
      throw err;
    }
  }

  async put(key: string, body: Uint8Array, contentType: string): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }),
    );
  }

  async get(key: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    const response = await this.s3.send(
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ...(range ? { Range: `bytes=${range.offset}-${range.offset + range.length - 1}` } : {}),
      }),
    );
    if (!response.Body) throw new Error(`s3://${this.bucket}/${key} has no body`);
    return response.Body.transformToByteArray();
  }

  /** The whole object as a stream: copies a large object (a WARC file) without holding it in memory. */
  async getStream(key: string): Promise<Readable> {
    const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    // In Node the SDK's body is the HTTP response itself, a Readable.
    if (!(response.Body instanceof Readable))
      throw new Error(`s3://${this.bucket}/${key} has no body stream`);
    return response.Body;
  }

  async *list(prefix: string): AsyncGenerator<string> {
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) if (object.Key) yield object.Key;
      token = page.NextContinuationToken;
    } while (token);
  }
}
