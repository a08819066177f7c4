/**
 * One sitemap file read (sitemaps.org protocol): a urlset or an index, plain or gzip. Apart from the
 * loading over HTTP (sitemap.ts) because it is the part that reads hostile bytes, with no I/O: the
 * caps below bound it, whoever calls it.
 *
 * Decisions:
 * - Parsing streams through htmlparser2's XML mode (no DOM, no DTD: custom entities are never
 *   expanded). Only `<urlset><url><loc>` and `<sitemapindex><sitemap><loc>` are read, by local name
 *   (a namespace prefix is ignored); `<loc>` text is entity-decoded (CDATA too) and trimmed.
 * - A `<loc>` that is not an absolute http(s) URL, or is longer than `maxUrlLength`, is skipped and
 *   counted; URLs come back in the WHATWG serialisation (`http://a` → `http://a/`).
 * - Caps: at most 50,000 entries per file (the protocol's limit; the rest is ignored and the result
 *   says `truncated`), at most 50 MiB per file decoded. Gzip is recognised by its magic bytes (a
 *   `.xml.gz` served as a plain file), HTTP Content-Encoding (gzip, deflate, br) is undone first.
 *   Inflation stops at the cap (bomb protection): a file larger than the cap is an error
 *   (`too-large`), not a partial read, because the protocol makes such a file invalid.
 * - Malformed documents are errors with a reason (`SitemapError`), never crashes: a root other than
 *   urlset/sitemapindex (an HTML page, a feed), an element closed out of order, a document that ends
 *   inside an element (truncated). RSS/Atom feeds (allowed by the protocol) are not read.
 */

import zlib from 'node:zlib';
import { Parser } from 'htmlparser2';
import { describeError, isGzip, isOutputCapError } from '../base/index.ts';

/** The protocol's limit on entries per file (urlset or index). */
export const SITEMAP_MAX_URLS = 50_000;
/** The protocol's limit on a file's uncompressed size. */
export const SITEMAP_MAX_BYTES = 50 * 1024 * 1024;
export const DEFAULT_SITEMAP_MAX_URL_LENGTH = 2048;

export type SitemapErrorCode = 'too-large' | 'bad-encoding' | 'malformed' | 'not-a-sitemap' | 'unavailable';

export class SitemapError extends Error {
  readonly code: SitemapErrorCode;

  constructor(code: SitemapErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = 'SitemapError';
  }
}

export interface ParseSitemapOptions {
  /** Entries kept per file; default 50,000. */
  maxUrls?: number;
  /** Decoded (after gunzip) bytes allowed; default 50 MiB. */
  maxBytes?: number;
  /** Longer `<loc>` values are skipped; default 2048. */
  maxUrlLength?: number;
}

export type SitemapParseResult =
  | { kind: 'urlset'; urls: string[]; truncated: boolean; skipped: number }
  | { kind: 'index'; sitemaps: string[]; truncated: boolean; skipped: number };

/** Gunzips at most `maxBytes`; inflation stops as soon as the output passes the cap. */
function gunzipCapped(bytes: Uint8Array, maxBytes: number): Uint8Array {
  try {
    return zlib.gunzipSync(bytes, {
      maxOutputLength: Math.max(1, maxBytes),
      // A cut stream yields what it has instead of failing ("unexpected end of file").
      finishFlush: zlib.constants.Z_SYNC_FLUSH,
    });
  } catch (error) {
    if (isOutputCapError(error)) {
      throw new SitemapError('too-large', `sitemap is larger than ${maxBytes} bytes when decompressed`);
    }
    throw new SitemapError('bad-encoding', `sitemap gzip cannot be decoded (${describeError(error)})`, {
      cause: error,
    });
  }
}

function byteLengthAbove(text: string, maxBytes: number): boolean {
  if (text.length > maxBytes) return true;
  if (text.length * 3 <= maxBytes) return false;
  return Buffer.byteLength(text, 'utf8') > maxBytes;
}

const FEED_CHUNK = 256 * 1024;

function localName(name: string): string {
  const colon = name.lastIndexOf(':');
  return (colon >= 0 ? name.slice(colon + 1) : name).toLowerCase();
}

/** The streaming reader behind parseSitemap: a stack of local names, nothing else is kept. */
class SitemapReader {
  readonly #maxUrls: number;
  readonly #maxUrlLength: number;
  readonly #stack: string[] = [];
  readonly #openedAt: number[] = [];
  readonly #found: string[] = [];
  #kind: 'urlset' | 'index' | undefined;
  #entry = '';
  #rootClosed = false;
  #loc: string[] | undefined;
  #skipped = 0;
  #truncated = false;
  #ending = false;
  #error: SitemapError | undefined;
  readonly parser: Parser;

  constructor(options: ParseSitemapOptions) {
    this.#maxUrls = Math.max(0, options.maxUrls ?? SITEMAP_MAX_URLS);
    this.#maxUrlLength = options.maxUrlLength ?? DEFAULT_SITEMAP_MAX_URL_LENGTH;
    this.parser = new Parser(
      {
        onopentag: (name) => this.#open(name),
        onclosetag: (name, implied) => this.#close(name, implied),
        ontext: (text) => {
          if (this.#loc !== undefined && this.#stack.length === 3) this.#loc.push(text);
        },
        onerror: (error) => this.#fail('malformed', `malformed XML: ${error.message}`),
      },
      { xmlMode: true, decodeEntities: true },
    );
  }

  /** True once the reader needs no more input (an error, or the entry cap). */
  get done(): boolean {
    return this.#error !== undefined || this.#truncated;
  }

  end(): void {
    this.#ending = true;
    this.parser.end();
  }

  result(): SitemapParseResult {
    if (this.#error) throw this.#error;
    if (this.#kind === undefined) {
      throw new SitemapError('not-a-sitemap', 'no XML root element: not a sitemap');
    }
    if (this.#kind === 'urlset') {
      return { kind: 'urlset', urls: this.#found, truncated: this.#truncated, skipped: this.#skipped };
    }
    return { kind: 'index', sitemaps: this.#found, truncated: this.#truncated, skipped: this.#skipped };
  }

  #fail(code: SitemapErrorCode, message: string): void {
    this.#error ??= new SitemapError(code, message);
  }

  #open(name: string): void {
    if (this.done) return;
    const local = localName(name);
    if (this.#stack.length === 0) {
      if (this.#rootClosed) return; // content after the root element is ignored
      if (local === 'urlset') {
        this.#kind = 'urlset';
        this.#entry = 'url';
      } else if (local === 'sitemapindex') {
        this.#kind = 'index';
        this.#entry = 'sitemap';
      } else {
        this.#fail('not-a-sitemap', `root element <${name}> is not <urlset> or <sitemapindex>`);
        return;
      }
    }
    this.#stack.push(local);
    this.#openedAt.push(this.parser.startIndex);
    if (
      this.#stack.length === 3 &&
      local === 'loc' &&
      this.#stack[1] === this.#entry &&
      this.#kind !== undefined
    ) {
      this.#loc = [];
    }
  }

  #close(name: string, implied: boolean): void {
    if (this.done || this.#stack.length === 0) return;
    const openedAt = this.#openedAt[this.#openedAt.length - 1];
    // A self-closing tag is reported as an implied close at the same position as its opening.
    if (implied && openedAt !== this.parser.startIndex) {
      this.#fail(
        'malformed',
        this.#ending
          ? `malformed XML: the document ends inside <${name}> (truncated?)`
          : `malformed XML: <${name}> closed out of order`,
      );
      return;
    }
    if (this.#stack.length === 3 && this.#loc !== undefined) {
      const text = this.#loc.join('').trim();
      this.#loc = undefined;
      this.#take(text);
    }
    this.#stack.pop();
    this.#openedAt.pop();
    if (this.#stack.length === 0) this.#rootClosed = true;
  }

  #take(text: string): void {
    if (text === '' || text.length > this.#maxUrlLength) {
      this.#skipped += 1;
      return;
    }
    const url = URL.parse(text);
    if (
      !url ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.href.length > this.#maxUrlLength
    ) {
      this.#skipped += 1;
      return;
    }
    if (this.#found.length >= this.#maxUrls) {
      this.#truncated = true;
      return;
    }
    this.#found.push(url.href);
  }
}

/**
 * Parses one sitemap file (urlset or index), plain or gzip (by magic bytes). Throws a SitemapError
 * with a code and a reason for anything that is not a readable sitemap; never anything else.
 */
export function parseSitemap(
  input: string | Uint8Array,
  options: ParseSitemapOptions = {},
): SitemapParseResult {
  const maxBytes = options.maxBytes ?? SITEMAP_MAX_BYTES;
  let data = input;
  if (typeof data !== 'string' && isGzip(data)) data = gunzipCapped(data, maxBytes);
  const tooLarge = typeof data === 'string' ? byteLengthAbove(data, maxBytes) : data.byteLength > maxBytes;
  if (tooLarge) throw new SitemapError('too-large', `sitemap is larger than ${maxBytes} bytes`);

  const reader = new SitemapReader(options);
  try {
    if (typeof data === 'string') {
      const text = data.charCodeAt(0) === 0xfeff ? data.slice(1) : data;
      for (let at = 0; at < text.length && !reader.done; at += FEED_CHUNK) {
        reader.parser.write(text.slice(at, at + FEED_CHUNK));
      }
    } else {
      const decoder = new TextDecoder('utf-8');
      for (let at = 0; at < data.length && !reader.done; at += FEED_CHUNK) {
        reader.parser.write(decoder.decode(data.subarray(at, at + FEED_CHUNK), { stream: true }));
      }
      if (!reader.done) reader.parser.write(decoder.decode());
    }
    if (!reader.done) reader.end();
  } catch (error) {
    if (error instanceof SitemapError) throw error;
    throw new SitemapError('malformed', `malformed XML: ${describeError(error)}`, { cause: error });
  }
  return reader.result();
}
