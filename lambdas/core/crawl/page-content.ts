/**
 * Turns a stored response body into text for link extraction, and says which bodies are stored.
 *
 * - `decodeContent` undoes the Content-Encoding under two caps, so a decompression bomb costs at most
 *   a bounded buffer: the decoded bytes (`maxDecodedBytes`) and the ratio of decoded to received bytes
 *   (`maxRatio`, checked once the output passes `ratioFloorBytes`, so small pages may compress well).
 *   The link extractor never sees more than the cap. A body cut at the size cap still decodes as far as
 *   it goes (its links are not lost).
 * - `decodeText` finds the charset as the HTML Standard does (encoding-sniff.ts: BOM, Content-Type,
 *   `<meta>` prescan, UTF-8 detection, windows-1252) and decodes.
 * - `isStorableType` matches a Content-Type against the crawl's allow list of media type patterns.
 */
import {
  brotliDecompressSync,
  constants,
  gunzipSync,
  inflateRawSync,
  inflateSync,
  zstdDecompressSync,
} from 'node:zlib';
import {
  type ContentCoding,
  contentCodings,
  decodeAs,
  type EncodingSource,
  FETCH_LIMITS,
  headerValue,
  isOutputCapError,
  sniffHtmlEncoding,
} from '../base/index.ts';

export const HTML_TYPES = ['text/html', 'application/xhtml+xml'];

export function mediaType(contentType: string | undefined): string | undefined {
  return contentType?.split(';')[0]?.trim().toLowerCase() || undefined;
}

export function isHtml(headers: ReadonlyArray<[string, string]>): boolean {
  const type = mediaType(headerValue(headers, 'content-type'));
  return type !== undefined && HTML_TYPES.includes(type);
}

// --- content codings --------------------------------------------------------------------------

/** Decoded bytes per received byte above which a body is a decompression bomb (Apache POI's 1:100). */
export const DEFAULT_MAX_DECODE_RATIO: number = FETCH_LIMITS.maxDecodeRatio;
/** The ratio is only enforced once the decoded output is larger than this. */
export const DEFAULT_RATIO_FLOOR_BYTES = 1024 * 1024;

export type DecodeFailureCode = 'decoded-too-large' | 'decompression-bomb' | 'bad-encoding';

export type DecodedBody =
  /** `truncated`: an unencoded body longer than the cap, cut to it. */
  { ok: true; bytes: Uint8Array; truncated?: true } | { ok: false; code: DecodeFailureCode; reason: string };

export interface DecodeOptions {
  /** Decoded bytes per received byte allowed (default DEFAULT_MAX_DECODE_RATIO). */
  maxRatio?: number;
  /** Output size under which the ratio is not checked (default DEFAULT_RATIO_FLOOR_BYTES). */
  ratioFloorBytes?: number;
}

/**
 * Undoes `contentEncoding` (a list, applied in reverse) on `body`. Every layer's output is capped at
 * the smaller of `maxDecodedBytes` and `maxRatio` × the received body (never below the ratio floor):
 * hitting the ratio bound is `decompression-bomb`, hitting the absolute cap `decoded-too-large`.
 * An unencoded body over the cap is cut to it.
 */
export function decodeContent(
  body: Uint8Array,
  contentEncoding: string | undefined,
  maxDecodedBytes: number,
  options: DecodeOptions = {},
): DecodedBody {
  const codings = contentCodings(contentEncoding);
  if (!codings.ok) return { ok: false, code: 'bad-encoding', reason: codings.reason };
  const maxRatio = options.maxRatio ?? DEFAULT_MAX_DECODE_RATIO;
  const floor = options.ratioFloorBytes ?? DEFAULT_RATIO_FLOOR_BYTES;
  const ratioBound = Math.max(floor, Math.ceil(body.byteLength * maxRatio));
  const bound = Math.min(maxDecodedBytes, ratioBound);
  let bytes: Uint8Array = body;
  for (const coding of codings.codings) {
    try {
      bytes = inflate(coding, bytes, bound);
    } catch (error) {
      if (isOutputCapError(error)) {
        if (bound < maxDecodedBytes) {
          return {
            ok: false,
            code: 'decompression-bomb',
            reason: `${coding} body of ${body.byteLength} bytes decodes to more than ${bound} bytes (over ${maxRatio}:1)`,
          };
        }
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
  if (bytes.byteLength > maxDecodedBytes)
    return { ok: true, bytes: bytes.subarray(0, maxDecodedBytes), truncated: true };
  return { ok: true, bytes };
}

/**
 * One layer, output capped at `max` (zlib throws ERR_BUFFER_TOO_LARGE past it). The flush modes let a
 * stream cut short (a body truncated at the size cap) decode as far as it goes instead of failing.
 */
function inflate(coding: ContentCoding, bytes: Uint8Array, max: number): Uint8Array {
  const zlib = { maxOutputLength: max, finishFlush: constants.Z_SYNC_FLUSH };
  switch (coding) {
    case 'gzip':
      return gunzipSync(bytes, zlib);
    case 'br':
      return brotliDecompressSync(bytes, {
        maxOutputLength: max,
        finishFlush: constants.BROTLI_OPERATION_FLUSH,
      });
    case 'zstd':
      return zstdDecompressSync(bytes, { maxOutputLength: max, finishFlush: constants.ZSTD_e_flush });
    case 'deflate':
      // Servers send "deflate" both as zlib (RFC 9110) and as raw deflate; accept both.
      try {
        return inflateSync(bytes, zlib);
      } catch (error) {
        if (isOutputCapError(error)) throw error;
        return inflateRawSync(bytes, zlib);
      }
  }
}

// --- charset --------------------------------------------------------------------------------------

export interface DecodedHtml {
  text: string;
  /** The WHATWG encoding used, and where it came from. */
  encoding: string;
  source: EncodingSource;
}

/** Decodes an HTML body: encoding as the HTML Standard sniffs it (see encoding-sniff.ts). */
export function decodeHtml(bytes: Uint8Array, contentType: string | undefined): DecodedHtml {
  const { encoding, source } = sniffHtmlEncoding(bytes, contentType);
  return { text: decodeAs(bytes, encoding), encoding, source };
}

/**
 * An HTML body as text: BOM, then the Content-Type charset, then the `<meta>` prescan of the first
 * 1024 bytes, then UTF-8 if the bytes are valid UTF-8, else windows-1252.
 */
export function decodeText(bytes: Uint8Array, contentType: string | undefined): string {
  return decodeHtml(bytes, contentType).text;
}

// --- what is stored ---------------------------------------------------------------------------------

/**
 * Media types stored by default: text, markup, data formats, PDF and images. Not stored unless listed:
 * audio, video, fonts, archives, executables and untyped bytes (`application/octet-stream`, which is
 * also what a response without a Content-Type is taken to be, RFC 9110 section 8.3).
 */
export const DEFAULT_STORE_TYPES: readonly string[] = Object.freeze([
  'text/*',
  'application/xhtml+xml',
  'application/xml',
  'application/*+xml',
  'application/json',
  'application/*+json',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'application/pdf',
  'image/*',
]);

const TOKEN = "[a-z0-9!#$%&'*+.^_`|~-]+";
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}$`);
const TYPE_PATTERN = new RegExp(`^(\\*|${TOKEN}/${TOKEN})$`);

/** True for a media type pattern `isStorableType` accepts: `type/subtype` with `*` wildcards, or `*`. */
export function isTypePattern(pattern: string): boolean {
  return TYPE_PATTERN.test(pattern.trim().toLowerCase());
}

const compiled = new Map<string, RegExp>();

function patternRegExp(pattern: string): RegExp {
  let regexp = compiled.get(pattern);
  if (regexp === undefined) {
    const text = pattern.trim().toLowerCase();
    const body =
      text === '*' ? '[^/]*/[^/]*' : text.replace(/[.+^$|?()[\]{}\\]/g, '\\$&').replace(/\*/g, '[^/]*');
    regexp = new RegExp(`^${body}$`);
    if (compiled.size > 1000) compiled.clear();
    compiled.set(pattern, regexp);
  }
  return regexp;
}

/**
 * Whether a response with this Content-Type is stored: its media type (parameters ignored, case
 * folded) matches one of `patterns` (`text/*`, `application/*+xml`, `image/png`, `*` ...). A missing or
 * malformed Content-Type is taken as `application/octet-stream`. Invalid patterns match nothing.
 */
export function isStorableType(contentType: string | undefined, patterns: readonly string[]): boolean {
  const declared = mediaType(contentType);
  const type = declared !== undefined && MEDIA_TYPE.test(declared) ? declared : 'application/octet-stream';
  return patterns.some((pattern) => isTypePattern(pattern) && patternRegExp(pattern).test(type));
}
