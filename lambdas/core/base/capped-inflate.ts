/**
 * HTTP Content-Encoding undone as a stream that stops at a byte cap and keeps what it decoded: for
 * robots.txt (RFC 9309: parse at least the first 500 KiB; a cut line is dropped) and sitemaps, where
 * a cut or corrupt body is still partly useful. Pages go through page-content.ts's `decodeContent`,
 * which refuses a body past its caps (size and ratio) instead.
 */
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { type ContentCoding, contentCodings, isZlibWrapped } from './content-coding.ts';

export interface DecodedBody {
  bytes: Uint8Array;
  /** True when the decoded content went past `maxBytes` and was cut there. */
  truncated: boolean;
  /** Set when a coding is unknown or its data is corrupt; `bytes` then holds what was decoded. */
  error?: string;
}

function decompressor(coding: ContentCoding, input: Uint8Array): Transform {
  const flush = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  switch (coding) {
    case 'gzip':
      return zlib.createGunzip(flush);
    case 'deflate':
      return isZlibWrapped(input) ? zlib.createInflate(flush) : zlib.createInflateRaw(flush);
    case 'br':
      return zlib.createBrotliDecompress({
        finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
      });
    case 'zstd':
      return zlib.createZstdDecompress({ finishFlush: zlib.constants.ZSTD_e_flush });
  }
}

/**
 * Decompresses one coding as a stream and stops as soon as the output passes `maxBytes`
 * (a compression bomb costs at most the cap plus one chunk). A cut or corrupt stream keeps what
 * was decoded before the damage and reports the error.
 */
export function inflateCapped(
  input: Uint8Array,
  coding: ContentCoding,
  maxBytes: number,
): Promise<DecodedBody> {
  return new Promise((resolve) => {
    const stream = decompressor(coding, input);
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (truncated: boolean, error?: string): void => {
      if (settled) return;
      settled = true;
      stream.destroy();
      const bytes = Buffer.concat(chunks, size);
      resolve(error === undefined ? { bytes, truncated } : { bytes, truncated, error });
    };
    stream.on('data', (chunk: Buffer) => {
      if (settled) return;
      const room = maxBytes - size;
      if (chunk.length > room) {
        if (room > 0) {
          chunks.push(chunk.subarray(0, room));
          size += room;
        }
        finish(true);
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    stream.on('end', () => finish(false));
    stream.on('error', (error) => finish(false, `${coding} data cannot be decoded (${error.message})`));
    stream.end(input);
  });
}

/**
 * Undoes an HTTP Content-Encoding (content-coding.ts: a list of `gzip`, `deflate`, `br`, `zstd`,
 * applied in reverse), keeping at most `maxBytes` of the result.
 */
export async function decodeContent(
  body: Uint8Array,
  contentEncoding: string | undefined,
  maxBytes: number,
): Promise<DecodedBody> {
  const codings = contentCodings(contentEncoding);
  if (!codings.ok) return { bytes: body, truncated: false, error: codings.reason };
  let bytes = body;
  for (const coding of codings.codings) {
    const decoded = await inflateCapped(bytes, coding, maxBytes);
    if (decoded.truncated || decoded.error !== undefined) return decoded;
    bytes = decoded.bytes;
  }
  if (bytes.length > maxBytes) return { bytes: bytes.subarray(0, maxBytes), truncated: true };
  return { bytes, truncated: false };
}
