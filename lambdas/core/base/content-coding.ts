/**
 * HTTP content codings, written once for every body the crawler decodes (pages, robots.txt, sitemaps,
 * `crawler get`): which codings exist, how a Content-Encoding list is read, and how zlib says an
 * output cap was hit. Two decoders use it, on purpose different at the cap: page-content.ts refuses a
 * page past its caps (a bomb is an outcome), capped-inflate.ts keeps the prefix (RFC 9309 parses the
 * first 500 KiB of a robots.txt; a cut sitemap still lists URLs).
 */

export type ContentCoding = 'gzip' | 'deflate' | 'br' | 'zstd';

/** More stacked codings than this (`gzip, gzip, gzip, ...`) are refused unread. */
export const MAX_CONTENT_CODINGS = 4;

/** The codings to undo, in the order to undo them (the header lists them as applied), or why not. */
export function contentCodings(
  contentEncoding: string | undefined,
): { ok: true; codings: ContentCoding[] } | { ok: false; reason: string } {
  const tokens = (contentEncoding ?? '')
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '' && token !== 'identity');
  if (tokens.length > MAX_CONTENT_CODINGS) {
    return {
      ok: false,
      reason: `${tokens.length} stacked content-encodings (at most ${MAX_CONTENT_CODINGS} are decoded)`,
    };
  }
  const codings: ContentCoding[] = [];
  for (const token of tokens.reverse()) {
    const coding = codingOf(token);
    if (coding === undefined) return { ok: false, reason: `unsupported content-encoding ${token}` };
    codings.push(coding);
  }
  return { ok: true, codings };
}

function codingOf(token: string): ContentCoding | undefined {
  if (token === 'gzip' || token === 'x-gzip') return 'gzip';
  if (token === 'deflate' || token === 'br' || token === 'zstd') return token;
  return undefined;
}

/** Starts with gzip's magic bytes (a gzip body whatever its Content-Encoding says, a WARC member). */
export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * zlib-wrapped deflate starts with a CMF/FLG pair whose 16-bit value is a multiple of 31. Servers send
 * "deflate" both as zlib (RFC 9110) and as raw deflate; both are accepted.
 */
export function isZlibWrapped(bytes: Uint8Array): boolean {
  const cmf = bytes[0];
  const flg = bytes[1];
  return cmf !== undefined && flg !== undefined && (cmf & 0x0f) === 8 && ((cmf << 8) | flg) % 31 === 0;
}

/** zlib's synchronous calls throw this when the output passes `maxOutputLength`. */
export function isOutputCapError(error: unknown): boolean {
  return (
    error instanceof RangeError ||
    (typeof error === 'object' &&
      error !== null &&
      'code' in error &&
      (error as { code: unknown }).code === 'ERR_BUFFER_TOO_LARGE')
  );
}
