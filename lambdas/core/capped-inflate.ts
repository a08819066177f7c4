/**
 * HTTP Content-Encoding undone as a stream that stops at a byte cap and keeps what it decoded: for
 * robots.txt (RFC 9309: parse at least the first 500 KiB; a cut line is dropped) and sitemaps, where
 * a cut or corrupt body is still partly useful. Pages go through page-content.ts's `decodeContent`,
 * which refuses a body past its caps (size and ratio) instead.
 */
import zlib from 'node:zlib';

export interface DecodedBody {
  bytes: Uint8Array;
  /** True when the decoded content went past `maxBytes` and was cut there. */
  truncated: boolean;
  /** Set when a coding is unknown or its data is corrupt; `bytes` then holds what was decoded. */
  error?: string;
}

type Coding = 'gzip' | 'deflate' | 'br';

function codingOf(token: string): Coding | 'identity' | undefined {
  switch (token) {
    case 'gzip':
    case 'x-gzip':
      return 'gzip';
    case 'deflate':
      return 'deflate';
    case 'br':
      return 'br';
    case 'identity':
    case '':
      return 'identity';
    default:
      return undefined;
  }
}

/** zlib-wrapped deflate starts with a CMF/FLG pair whose 16-bit value is a multiple of 31. */
function isZlibWrapped(bytes: Uint8Array): boolean {
  const cmf = bytes[0];
  const flg = bytes[1];
  return cmf !== undefined && flg !== undefined && (cmf & 0x0f) === 8 && ((cmf << 8) | flg) % 31 === 0;
}

function decompressor(
  coding: Coding,
  input: Uint8Array,
): zlib.Gunzip | zlib.Inflate | zlib.InflateRaw | zlib.BrotliDecompress {
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
  }
}

/**
 * Decompresses one coding as a stream and stops as soon as the output passes `maxBytes`
 * (a compression bomb costs at most the cap plus one chunk). A cut or corrupt stream keeps what
 * was decoded before the damage and reports the error.
 */
export function inflateCapped(input: Uint8Array, coding: Coding, maxBytes: number): Promise<DecodedBody> {
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
 * Undoes an HTTP Content-Encoding (`gzip`, `x-gzip`, `deflate`, `br`, `identity`, or a list of them,
 * applied in reverse), keeping at most `maxBytes` of the result.
 */
export async function decodeContent(
  body: Uint8Array,
  contentEncoding: string | undefined,
  maxBytes: number,
): Promise<DecodedBody> {
  const tokens = (contentEncoding ?? '')
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '');
  let bytes = body;
  for (const token of tokens.reverse()) {
    const coding = codingOf(token);
    if (coding === 'identity') continue;
    if (coding === undefined)
      return { bytes, truncated: false, error: `unsupported content-encoding ${token}` };
    const decoded = await inflateCapped(bytes, coding, maxBytes);
    if (decoded.truncated || decoded.error !== undefined) return decoded;
    bytes = decoded.bytes;
  }
  if (bytes.length > maxBytes) return { bytes: bytes.subarray(0, maxBytes), truncated: true };
  return { bytes, truncated: false };
}
