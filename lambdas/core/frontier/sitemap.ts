/**
 * Sitemaps (sitemaps.org protocol): parsing, loading with index following, and discovery through
 * robots.txt `Sitemap:` lines (for `--sitemap auto`).
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
 * - `loadSitemaps` follows indexes breadth-first up to `maxDepth` levels (the start files are level
 *   1), fetches at most `maxFiles` files, deduplicates URLs and stops at `maxUrls`. Every failure is
 *   an entry in `errors`; nothing throws except a FatalError from the fetcher. Requests go through the
 *   crawl's fetcher (so the address guard and limits apply), follow up to `limits.maxRedirects`
 *   redirects, and keep the crawl's `delayMs` between two requests to one host. Sitemap files are not
 *   checked against robots.txt (a site lists them for crawlers); the pages they list are, as seeds.
 */

import zlib from 'node:zlib';
import { Parser } from 'htmlparser2';
import {
  decodeContent,
  describeError,
  FatalError,
  headerValue,
  isCrawlError,
  isGzip,
  isOutputCapError,
} from '../base/index.ts';
import { type CrawlConfig, hostKey, type PageFetcher, type PageResponse } from '../crawl/index.ts';
import { DEFAULT_MAX_ROBOTS_BYTES, parseRobots, sitemaps as robotsSitemaps } from '../robots/index.ts';

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

// ---------------------------------------------------------------------------------------------
// Loading over HTTP

export interface SitemapDeps {
  fetcher: PageFetcher;
  config: CrawlConfig;
  /** Clock and sleep for the per-host delay; default Date.now and setTimeout. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface SitemapCaps {
  /** Levels of files read: the start files are level 1, the files an index there lists level 2, ... */
  maxDepth: number;
  /** Distinct page URLs returned at most. */
  maxUrls: number;
  /** Sitemap files fetched at most. */
  maxFiles: number;
  /** Bytes per file, raw and decoded; default 50 MiB. */
  maxBytes?: number;
}

export const DEFAULT_SITEMAP_CAPS: SitemapCaps = Object.freeze({
  maxDepth: 3,
  maxUrls: 100_000,
  maxFiles: 100,
});

export interface SitemapLoadError {
  sitemap: string;
  reason: string;
}

export interface LoadSitemapsResult {
  /** Page URLs, deduplicated, in the order found. */
  urls: string[];
  errors: SitemapLoadError[];
  /** Sitemap files fetched (or attempted). */
  files: number;
  /** True when a cap (URLs, files, entries per file) left something unread. */
  truncated: boolean;
}

const sleepMs = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Keeps `delayMs` between one request to a host ending and the next one starting, within one load:
 * measured from the end, the gap holds as the server sees it too, however late a request arrived.
 */
class HostPacer {
  readonly #last = new Map<string, number>();
  readonly #delayMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(delayMs: number, now: () => number, sleep: (ms: number) => Promise<void>) {
    this.#delayMs = delayMs;
    this.#now = now;
    this.#sleep = sleep;
  }

  async turn(url: URL): Promise<void> {
    const key = hostKey(url);
    const last = this.#last.get(key);
    if (last !== undefined) {
      const wait = last + this.#delayMs - this.#now();
      if (wait > 0) await this.#sleep(wait);
    }
    this.#last.set(key, this.#now());
  }

  finished(url: URL): void {
    this.#last.set(hostKey(url), this.#now());
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

type FetchOutcome =
  | { ok: true; response: PageResponse; finalUrl: URL }
  | { ok: false; status?: number; reason: string };

/** GET with redirects followed by hand (the fetcher never follows them), each hop paced and guarded. */
async function fetchFollowing(
  start: URL,
  deps: SitemapDeps,
  pacer: HostPacer,
  maxBytes: number,
  maxRedirects: number,
): Promise<FetchOutcome> {
  let url = start;
  for (let hop = 0; ; hop += 1) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return { ok: false, reason: `unsupported scheme ${url.protocol}` };
    }
    await pacer.turn(url);
    let response: PageResponse;
    try {
      response = await deps.fetcher.fetch({
        url,
        userAgent: deps.config.userAgent,
        allowPrivate: deps.config.allowPrivate,
        limits: { ...deps.config.limits, maxBodyBytes: maxBytes },
      });
      pacer.finished(url);
    } catch (error) {
      pacer.finished(url);
      if (error instanceof FatalError) throw error;
      if (isCrawlError(error)) return { ok: false, reason: `${error.code}: ${describeError(error)}` };
      return { ok: false, reason: describeError(error) };
    }
    if (REDIRECTS.has(response.status)) {
      const location = headerValue(response.headers, 'location')?.trim();
      const next = location ? URL.parse(location, url.href) : null;
      if (!next)
        return {
          ok: false,
          status: response.status,
          reason: `HTTP ${response.status} without a usable Location`,
        };
      if (hop >= maxRedirects)
        return { ok: false, status: response.status, reason: `more than ${maxRedirects} redirects` };
      url = next;
      continue;
    }
    if (response.status < 200 || response.status >= 300) {
      return { ok: false, status: response.status, reason: `HTTP ${response.status}` };
    }
    return { ok: true, response, finalUrl: url };
  }
}

/**
 * Fetches and reads the sitemaps at `start` (urlsets or indexes), following indexes up to
 * `caps.maxDepth` levels. Never throws for a bad sitemap: each failure is an entry in `errors`.
 */
export async function loadSitemaps(
  start: readonly string[],
  deps: SitemapDeps,
  caps: SitemapCaps = DEFAULT_SITEMAP_CAPS,
): Promise<LoadSitemapsResult> {
  const maxBytes = caps.maxBytes ?? SITEMAP_MAX_BYTES;
  const pacer = new HostPacer(deps.config.delayMs, deps.now ?? Date.now, deps.sleep ?? sleepMs);
  const urls = new Set<string>();
  const errors: SitemapLoadError[] = [];
  const queued = new Set<string>();
  const queue: Array<{ url: string; level: number }> = [];
  let files = 0;
  let truncated = false;

  const enqueue = (raw: string, level: number, from?: string): void => {
    const parsed = URL.parse(raw.trim(), from);
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      errors.push({ sitemap: raw, reason: 'not an absolute http(s) URL' });
      return;
    }
    parsed.hash = '';
    if (queued.has(parsed.href)) return;
    queued.add(parsed.href);
    queue.push({ url: parsed.href, level });
  };
  for (const url of start) enqueue(url, 1);

  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    if (urls.size >= caps.maxUrls) {
      truncated = true;
      break;
    }
    if (files >= caps.maxFiles) {
      truncated = true;
      errors.push({
        sitemap: next.url,
        reason: `file cap ${caps.maxFiles} reached: this and ${queue.length} more sitemaps not fetched`,
      });
      break;
    }
    files += 1;
    const fetched = await fetchFollowing(
      new URL(next.url),
      deps,
      pacer,
      maxBytes,
      deps.config.limits.maxRedirects,
    );
    if (!fetched.ok) {
      errors.push({ sitemap: next.url, reason: fetched.reason });
      continue;
    }
    const { response } = fetched;
    if (response.truncated === 'time') {
      errors.push({ sitemap: next.url, reason: 'timed out while reading the body' });
      continue;
    }
    if (response.truncated === 'length') {
      errors.push({ sitemap: next.url, reason: `too-large: sitemap is larger than ${maxBytes} bytes` });
      continue;
    }
    const decoded = await decodeContent(
      response.body,
      headerValue(response.headers, 'content-encoding'),
      maxBytes,
    );
    if (decoded.error !== undefined) {
      errors.push({ sitemap: next.url, reason: `bad-encoding: ${decoded.error}` });
      continue;
    }
    if (decoded.truncated) {
      errors.push({
        sitemap: next.url,
        reason: `too-large: sitemap is larger than ${maxBytes} bytes decoded`,
      });
      continue;
    }
    let parsed: SitemapParseResult;
    try {
      parsed = parseSitemap(decoded.bytes, {
        maxBytes,
        maxUrls: SITEMAP_MAX_URLS,
        maxUrlLength: deps.config.limits.maxUrlLength,
      });
    } catch (error) {
      const code = error instanceof SitemapError ? `${error.code}: ` : '';
      errors.push({ sitemap: next.url, reason: `${code}${describeError(error)}` });
      continue;
    }
    if (parsed.truncated) truncated = true;
    if (parsed.kind === 'urlset') {
      for (const url of parsed.urls) {
        if (urls.size >= caps.maxUrls) {
          truncated = true;
          break;
        }
        urls.add(url);
      }
    } else if (next.level >= caps.maxDepth) {
      if (parsed.sitemaps.length > 0) {
        errors.push({
          sitemap: next.url,
          reason: `index at level ${next.level} lists ${parsed.sitemaps.length} sitemaps: nesting deeper than ${caps.maxDepth} levels is not followed`,
        });
      }
    } else {
      for (const child of parsed.sitemaps) enqueue(child, next.level + 1, fetched.finalUrl.href);
    }
  }
  return { urls: [...urls], errors, files, truncated };
}

/**
 * The `Sitemap:` URLs of an origin's robots.txt (for `--sitemap auto`), absolute and deduplicated.
 * A 4xx robots.txt has none (empty list); a 5xx, a network failure or too many redirects throws a
 * SitemapError('unavailable') with the reason.
 */
export async function sitemapsFromRobots(origin: string | URL, deps: SitemapDeps): Promise<string[]> {
  const robotsUrl = new URL('/robots.txt', origin);
  const pacer = new HostPacer(deps.config.delayMs, deps.now ?? Date.now, deps.sleep ?? sleepMs);
  const fetched = await fetchFollowing(robotsUrl, deps, pacer, DEFAULT_MAX_ROBOTS_BYTES, 5);
  if (!fetched.ok) {
    if (
      fetched.status !== undefined &&
      fetched.status >= 400 &&
      fetched.status < 500 &&
      fetched.status !== 429
    ) {
      return [];
    }
    throw new SitemapError('unavailable', `${robotsUrl.href}: ${fetched.reason}`);
  }
  const decoded = await decodeContent(
    fetched.response.body,
    headerValue(fetched.response.headers, 'content-encoding'),
    DEFAULT_MAX_ROBOTS_BYTES,
  );
  let bytes = decoded.bytes;
  if (decoded.truncated || fetched.response.truncated !== undefined) {
    // The last line was cut: a shortened Sitemap URL would be a different URL, so drop it.
    const lastBreak = Math.max(bytes.lastIndexOf(0x0a), bytes.lastIndexOf(0x0d));
    bytes = bytes.subarray(0, lastBreak + 1);
  }
  const policy = parseRobots(bytes);
  const found = new Set<string>();
  for (const value of robotsSitemaps(policy)) {
    const url = URL.parse(value, fetched.finalUrl.href);
    if (url && (url.protocol === 'http:' || url.protocol === 'https:')) found.add(url.href);
  }
  return [...found];
}
