/** The page store bucket: whole-object writes, listing and ranged reads. */
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { BlobWriter } from '../core/ports.ts';

export class S3Blobs implements BlobWriter {
  private readonly s3: S3Client;
  readonly bucket: string;

  constructor(s3: S3Client, bucket: string) {
    this.s3 = s3;
    this.bucket = bucket;
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
