/**
 * The lines of a seeds file (`--seeds-file PATH` or `s3://bucket/key`), read as a stream: a local
 * file or an S3 object, gunzipped when it starts with gzip's magic bytes, split into lines. Nothing
 * is held but the chunk being split, so a file of a million URLs costs no more memory than one of ten.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';

/** The seeds file cannot be read (missing, no access, damaged gzip): one line saying which and why. */
export class SeedSourceError extends Error {
  override name = 'SeedSourceError';
}

export type SeedSource = { kind: 'file'; path: string } | { kind: 's3'; bucket: string; key: string };

/** `s3://bucket/key` is an S3 object, anything else a local path; undefined for an `s3://` without both. */
export function parseSeedSource(text: string): SeedSource | undefined {
  if (!text.startsWith('s3://')) return { kind: 'file', path: text };
  const rest = text.slice('s3://'.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  return { kind: 's3', bucket: rest.slice(0, slash), key: rest.slice(slash + 1) };
}

export function describeSeedSource(source: SeedSource): string {
  return source.kind === 'file' ? source.path : `s3://${source.bucket}/${source.key}`;
}

const GZIP_MAGIC = [0x1f, 0x8b];

/** The source's lines, each as read (no line ending); every failure is a SeedSourceError. */
export async function* seedSourceLines(source: SeedSource, s3?: S3Client): AsyncGenerator<string> {
  const name = describeSeedSource(source);
  try {
    const bytes = await open(source, s3);
    const lines = createInterface({ input: await gunzipIfGzip(bytes), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const line of lines) yield line;
  } catch (error) {
    if (error instanceof SeedSourceError) throw error;
    throw new SeedSourceError(`--seeds-file ${name}: ${messageOf(error)}`, { cause: error });
  }
}

async function open(source: SeedSource, s3: S3Client | undefined): Promise<Readable> {
  if (source.kind === 'file') return createReadStream(source.path);
  if (s3 === undefined) throw new Error('no S3 client to read it with');
  const object = await s3.send(new GetObjectCommand({ Bucket: source.bucket, Key: source.key }));
  if (!(object.Body instanceof Readable)) throw new Error('S3 answered without a body');
  return object.Body;
}

/** Looks at the first chunk: gzip's magic bytes mean a gzip file (`.gz` or not). */
async function gunzipIfGzip(bytes: Readable): Promise<Readable> {
  const chunks = bytes[Symbol.asyncIterator]();
  const first = await chunks.next();
  const head: Buffer | undefined = first.done ? undefined : Buffer.from(first.value as Uint8Array);
  const whole = Readable.from(
    (async function* () {
      if (head !== undefined) yield head;
      for (let next = await chunks.next(); !next.done; next = await chunks.next())
        yield Buffer.from(next.value as Uint8Array);
    })(),
    { objectMode: false },
  );
  const gzip =
    head !== undefined && head.length >= 2 && head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
  if (!gzip) return whole;
  const gunzip = createGunzip();
  whole.on('error', (error) => gunzip.destroy(error));
  return whole.pipe(gunzip);
}

function messageOf(error: unknown): string {
  const { name, message, code } = error as { name?: string; message?: string; code?: string };
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'permission denied';
  if (code === 'EISDIR') return 'a directory, not a file';
  if (name === 'NoSuchKey') return 'no such S3 object';
  if (name === 'NoSuchBucket') return 'no such S3 bucket';
  if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR') return `damaged gzip (${message})`;
  return message ?? String(error);
}
