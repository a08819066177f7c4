/**
 * Turns a stored response body into text for link extraction: undo the content-encoding with a cap
 * on decoded bytes (decompression bombs stop at the cap), then decode the charset.
 */
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { headerValue } from './http-headers.ts';

export const HTML_TYPES = ['text/html', 'application/xhtml+xml'];

export function mediaType(contentType: string | undefined): string | undefined {
  return contentType?.split(';')[0]?.trim().toLowerCase() || undefined;
}

export function isHtml(headers: ReadonlyArray<[string, string]>): boolean {
  const type = mediaType(headerValue(headers, 'content-type'));
  return type !== undefined && HTML_TYPES.includes(type);
}

export type DecodedBody =
  | { ok: true; bytes: Uint8Array }
  | { ok: false; code: 'decoded-too-large' | 'bad-encoding'; reason: string };

export function decodeContent(
  body: Uint8Array,
  contentEncoding: string | undefined,
  maxDecodedBytes: number,
): DecodedBody {
  const codings = (contentEncoding ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  let bytes: Uint8Array = body;
  for (const coding of codings.reverse()) {
    const options = { maxOutputLength: maxDecodedBytes };
    try {
      if (coding === 'gzip' || coding === 'x-gzip') bytes = gunzipSync(bytes, options);
      else if (coding === 'br') bytes = brotliDecompressSync(bytes, options);
      else if (coding === 'deflate') bytes = inflateOrRaw(bytes, options);
      else return { ok: false, code: 'bad-encoding', reason: `unsupported content-encoding ${coding}` };
    } catch (error) {
      if (error instanceof RangeError || (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        return {
          ok: false,
          code: 'decoded-too-large',
          reason: `${coding} body decodes to more than ${maxDecodedBytes} bytes`,
        };
      }
      return {
        ok: false,
        code: 'bad-encoding',
        reason: `${coding} body does not decode: ${(error as Error).message}`,
      };
    }
  }
  return { ok: true, bytes };
}

/** Servers send "deflate" both as zlib (RFC 9110) and as raw deflate; accept both. */
function inflateOrRaw(bytes: Uint8Array, options: { maxOutputLength: number }): Uint8Array {
  try {
    return inflateSync(bytes, options);
  } catch (error) {
    if (error instanceof RangeError) throw error;
    return inflateRawSync(bytes, options);
  }
}

/** Charset from BOM, then the Content-Type parameter, else UTF-8 (the HTML default for our purposes). */
export function decodeText(bytes: Uint8Array, contentType: string | undefined): string {
  const declared = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  let label = 'utf-8';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) label = 'utf-16be';
  else if (bytes[0] === 0xff && bytes[1] === 0xfe) label = 'utf-16le';
  else if (declared) label = declared;
  try {
    return new TextDecoder(label).decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}
