/**
 * Sitemaps loaded over HTTP (sitemaps.org protocol): loading with index following, and discovery
 * through robots.txt `Sitemap:` lines (for `--sitemap auto`). Each file is read by sitemap-parse.ts.
 *
 * Decisions:
 * - HTTP Content-Encoding (gzip, deflate, br) is undone before a file is parsed; a file is capped
 *   (50 MiB by default) both as fetched and as decoded, and a file over the cap is an error.
 * - `loadSitemaps` follows indexes breadth-first up to `maxDepth` levels (the start files are level
 *   1), fetches at most `maxFiles` files, deduplicates URLs and stops at `maxUrls`. Every failure is
 *   an entry in `errors`; nothing throws except a FatalError from the fetcher. Requests go through the
 *   crawl's fetcher (so the address guard and limits apply), follow up to `limits.maxRedirects`
 *   redirects, and keep the crawl's `delayMs` between two requests to one host. Sitemap files are not
 *   checked against robots.txt (a site lists them for crawlers); the pages they list are, as seeds.
 */

import { decodeContent, describeError, FatalError, headerValue, isCrawlError } from '../base/index.ts';
import { type CrawlConfig, hostKey, type PageFetcher, type PageResponse } from '../crawl/index.ts';
import { DEFAULT_MAX_ROBOTS_BYTES, parseRobots, sitemaps as robotsSitemaps } from '../robots/index.ts';
import {
  parseSitemap,
  SITEMAP_MAX_BYTES,
  SITEMAP_MAX_URLS,
  SitemapError,
  type SitemapParseResult,
} from './sitemap-parse.ts';

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

/** One load's progress: the queue of sitemap files, the page URLs they gave, and what went wrong. */
interface SitemapLoad {
  readonly caps: SitemapCaps;
  readonly urls: Set<string>;
  readonly errors: SitemapLoadError[];
  readonly queued: Set<string>;
  readonly queue: Array<SitemapFile>;
  files: number;
  truncated: boolean;
}

/** A sitemap file to fetch, and its level (the start files are level 1). */
interface SitemapFile {
  url: string;
  level: number;
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
  const load: SitemapLoad = {
    caps,
    urls: new Set<string>(),
    errors: [],
    queued: new Set<string>(),
    queue: [],
    files: 0,
    truncated: false,
  };
  for (const url of start) enqueue(load, url, 1);

  for (let next = load.queue.shift(); next !== undefined; next = load.queue.shift()) {
    if (capReached(load, next)) break;
    load.files += 1;
    const fetched = await fetchFollowing(
      new URL(next.url),
      deps,
      pacer,
      maxBytes,
      deps.config.limits.maxRedirects,
    );
    if (!fetched.ok) {
      load.errors.push({ sitemap: next.url, reason: fetched.reason });
      continue;
    }
    const read = await readSitemap(fetched.response, maxBytes, deps.config);
    if (!read.ok) {
      load.errors.push({ sitemap: next.url, reason: read.reason });
      continue;
    }
    take(load, next, read.parsed, fetched.finalUrl);
  }
  return { urls: [...load.urls], errors: load.errors, files: load.files, truncated: load.truncated };
}

/** Queues an absolute http(s) sitemap URL once (without its fragment); anything else is an error. */
function enqueue(load: SitemapLoad, raw: string, level: number, from?: string): void {
  const parsed = URL.parse(raw.trim(), from);
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    load.errors.push({ sitemap: raw, reason: 'not an absolute http(s) URL' });
    return;
  }
  parsed.hash = '';
  if (load.queued.has(parsed.href)) return;
  load.queued.add(parsed.href);
  load.queue.push({ url: parsed.href, level });
}

/** True when the URL or file cap stops the load before `next` is fetched (the result says truncated). */
function capReached(load: SitemapLoad, next: SitemapFile): boolean {
  if (load.urls.size >= load.caps.maxUrls) {
    load.truncated = true;
    return true;
  }
  if (load.files >= load.caps.maxFiles) {
    load.truncated = true;
    load.errors.push({
      sitemap: next.url,
      reason: `file cap ${load.caps.maxFiles} reached: this and ${load.queue.length} more sitemaps not fetched`,
    });
    return true;
  }
  return false;
}

type SitemapRead = { ok: true; parsed: SitemapParseResult } | { ok: false; reason: string };

/** A fetched sitemap's body decoded and parsed, each within `maxBytes`; or why it cannot be read. */
async function readSitemap(
  response: PageResponse,
  maxBytes: number,
  config: CrawlConfig,
): Promise<SitemapRead> {
  if (response.truncated === 'time') return { ok: false, reason: 'timed out while reading the body' };
  if (response.truncated === 'length') {
    return { ok: false, reason: `too-large: sitemap is larger than ${maxBytes} bytes` };
  }
  const decoded = await decodeContent(
    response.body,
    headerValue(response.headers, 'content-encoding'),
    maxBytes,
  );
  if (decoded.error !== undefined) return { ok: false, reason: `bad-encoding: ${decoded.error}` };
  if (decoded.truncated) {
    return { ok: false, reason: `too-large: sitemap is larger than ${maxBytes} bytes decoded` };
  }
  try {
    const parsed = parseSitemap(decoded.bytes, {
      maxBytes,
      maxUrls: SITEMAP_MAX_URLS,
      maxUrlLength: config.limits.maxUrlLength,
    });
    return { ok: true, parsed };
  } catch (error) {
    const code = error instanceof SitemapError ? `${error.code}: ` : '';
    return { ok: false, reason: `${code}${describeError(error)}` };
  }
}

/** Takes a urlset's page URLs up to the cap, or queues an index's sitemaps one level down. */
function take(load: SitemapLoad, file: SitemapFile, parsed: SitemapParseResult, finalUrl: URL): void {
  if (parsed.truncated) load.truncated = true;
  if (parsed.kind === 'urlset') {
    for (const url of parsed.urls) {
      if (load.urls.size >= load.caps.maxUrls) {
        load.truncated = true;
        break;
      }
      load.urls.add(url);
    }
  } else if (file.level >= load.caps.maxDepth) {
    if (parsed.sitemaps.length > 0) {
      load.errors.push({
        sitemap: file.url,
        reason: `index at level ${file.level} lists ${parsed.sitemaps.length} sitemaps: nesting deeper than ${load.caps.maxDepth} levels is not followed`,
      });
    }
  } else {
    for (const child of parsed.sitemaps) enqueue(load, child, file.level + 1, finalUrl.href);
  }
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
