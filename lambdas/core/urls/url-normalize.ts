/**
 * URL resolution and normalization: the crawler's one definition of "the same URL".
 *
 * `normalizeUrl` turns any absolute http(s) URL into a canonical string; its SHA-256 (hex) is the
 * dedup key of the frontier (one conditional put per key per crawl). Two URLs that normalize to the
 * same string are fetched once. The profile is conservative: it only applies rewrites that do not
 * change which resource a standards-following server returns.
 *
 * | # | rule | example (input → output) |
 * | --- | --- | --- |
 * | 1 | Only `http:` and `https:` are accepted; others fail with `unsupported-scheme` | `ftp://a/` → error |
 * | 2 | Parsed by the WHATWG URL parser (the browser's): leading/trailing C0 controls and spaces and inner tabs/newlines removed, backslashes as slashes | `http:\\a\b` → `http://a/b` |
 * | 3 | Scheme and host lower-cased | `HTTP://Example.COM/` → `http://example.com/` |
 * | 4 | Internationalized hosts to punycode (IDNA/UTS 46, by WHATWG URL) | `http://bücher.de/` → `http://xn--bcher-kva.de/` |
 * | 5 | IPv4 hosts canonicalized (WHATWG: hex, octal, short forms) | `http://0x7f.1/` → `http://127.0.0.1/` |
 * | 6 | Trailing dot(s) of the host removed | `http://example.com./` → `http://example.com/` |
 * | 7 | Default port removed (80 for http, 443 for https) | `http://a:80/` → `http://a/` |
 * | 8 | Dot segments removed (`.`, `..`, and their `%2e` forms) | `/a/./b/../c` → `/a/c` |
 * | 9 | Empty path becomes `/` | `http://a` → `http://a/` |
 * | 10 | Fragment dropped (servers never see it) | `/p#top` → `/p` |
 * | 11 | Percent-encoding: hex digits upper-cased; `%XX` of an unreserved char (`A-Z a-z 0-9 - . _ ~`) decoded; reserved chars stay encoded (`%2F`, `%3F`, `%26`, `%3D` ... keep their meaning); a `%` not followed by two hex digits is left as is. Applies to path and query | `/%7euser/a%2fb` → `/~user/a%2Fb` |
 * | 12 | Characters the WHATWG parser escapes (spaces, non-ASCII, `"`, `<`, `>` ...) are percent-encoded as UTF-8 | `/a b` → `/a%20b` |
 * | 13 | Tracking parameters removed; names compared case-insensitively after percent-decoding; a trailing `*` in the list is a prefix wildcard (`utm_*`) | `?utm_source=x&id=1` → `?id=1` |
 * | 14 | Remaining query parameters keep their order and exact bytes (`+`, `%20`, duplicates); empty pairs (`&&`, a trailing `&`) dropped | `?b=2&&a=1&` → `?b=2&a=1` |
 * | 15 | An empty query (`?` with nothing after it, or nothing left after rule 13/14) dropped | `/p?` → `/p` |
 * | 16 | Userinfo (`user:pass@`) dropped: credentials are never sent, stored or recorded. So `http://u:p@a/` and `http://a/` are one URL (one key, fetched once) | `http://u:p@a/` → `http://a/` |
 * | 17 | The serialized result longer than `maxUrlLength` characters (default 2048) fails with `url-too-long` | |
 *
 * Deliberately NOT done, because it changes the resource on some servers:
 * - query parameters are not sorted (order is significant for some CMSs, signed URLs, and
 *   servers that read the first of a repeated key);
 * - `www.` is not stripped and `http` is not upgraded to `https` (different origins may differ);
 * - path case is kept and trailing slashes are neither added nor removed (`/a` and `/a/` differ);
 * - `index.html`-style default documents are not removed; session ids (`;jsessionid=`) are kept.
 */
import { createHash } from 'node:crypto';

export interface NormalizeOptions {
  /** Longest accepted URL, in characters of the normalized serialization. Default 2048. */
  maxUrlLength: number;
  /** Query parameter names to remove (case-insensitive). A trailing `*` makes a prefix match. */
  stripParams: readonly string[];
}

/** Click-id and campaign parameters that never select content. */
export const DEFAULT_STRIP_PARAMS: readonly string[] = Object.freeze([
  'utm_*',
  'gclid',
  'gclsrc',
  'dclid',
  'gbraid',
  'wbraid',
  'fbclid',
  'msclkid',
  'mc_cid',
  'mc_eid',
  '_ga',
  '_gl',
  'yclid',
  'igshid',
  'twclid',
  'ttclid',
  'li_fat_id',
  '_hsenc',
  '_hsmi',
  'mkt_tok',
]);

export const DEFAULT_NORMALIZE_OPTIONS: NormalizeOptions = Object.freeze({
  maxUrlLength: 2048,
  stripParams: DEFAULT_STRIP_PARAMS,
});

export type NormalizeErrorCode = 'invalid-url' | 'unsupported-scheme' | 'url-too-long';

export type NormalizeFailure = { ok: false; code: NormalizeErrorCode; reason: string };

export type NormalizeResult = { ok: true; url: string; key: string } | NormalizeFailure;

/** `normalizeUrl` without the dedup key, for callers that only compare or match URLs. */
export type NormalizeHrefResult = { ok: true; url: string } | NormalizeFailure;

/**
 * Leading and trailing C0 controls and spaces: what the WHATWG URL parser strips itself. Other
 * Unicode whitespace (NBSP, U+FEFF ...) is kept, as browsers keep it (it gets percent-encoded).
 */
function trimUrlInput(input: string): string {
  let start = 0;
  let end = input.length;
  while (start < end && input.charCodeAt(start) <= 0x20) start++;
  while (end > start && input.charCodeAt(end - 1) <= 0x20) end--;
  return start === 0 && end === input.length ? input : input.slice(start, end);
}

/**
 * Resolves `href` against `base` the way a browser resolves a link (WHATWG URL parsing).
 * Returns undefined when the result is not a valid URL. Without a base, `href` must be absolute.
 */
export function resolveUrl(href: string, base?: string | URL): URL | undefined {
  const input = trimUrlInput(href);
  if (base === undefined) return URL.parse(input) ?? undefined;
  return URL.parse(input, typeof base === 'string' ? base : base.href) ?? undefined;
}

/** Long inputs are cut in reasons, so a 1 MB junk href does not become a 1 MB log line. */
function preview(value: string): string {
  const max = 120;
  return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
}

const HEX = '0123456789ABCDEF';
const PERCENT_TRIPLET = /%([0-9A-Fa-f]{2})/g;

function isUnreserved(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x30 && code <= 0x39) || // 0-9
    code === 0x2d || // -
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x7e // ~
  );
}

/** Rule 11: `%xx` → `%XX`, and `%XX` of an unreserved character → the character. */
function normalizePercentEncoding(value: string): string {
  if (!value.includes('%')) return value;
  return value.replace(PERCENT_TRIPLET, (_match, hex: string) => {
    const code = Number.parseInt(hex, 16);
    if (isUnreserved(code)) return String.fromCharCode(code);
    return `%${HEX[code >> 4]}${HEX[code & 15]}`;
  });
}

interface ParamMatcher {
  exact: Set<string>;
  prefixes: string[];
}

const matcherCache = new WeakMap<readonly string[], ParamMatcher>();

function paramMatcher(stripParams: readonly string[]): ParamMatcher {
  let matcher = matcherCache.get(stripParams);
  if (matcher === undefined) {
    matcher = { exact: new Set(), prefixes: [] };
    for (const raw of stripParams) {
      const name = raw.toLowerCase();
      if (name.endsWith('*')) matcher.prefixes.push(name.slice(0, -1));
      else matcher.exact.add(name);
    }
    matcherCache.set(stripParams, matcher);
  }
  return matcher;
}

function decodeParamName(name: string): string {
  if (!name.includes('%') && !name.includes('+')) return name.toLowerCase();
  try {
    return decodeURIComponent(name.replaceAll('+', ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

function isStripped(pair: string, matcher: ParamMatcher): boolean {
  const eq = pair.indexOf('=');
  const name = decodeParamName(eq === -1 ? pair : pair.slice(0, eq));
  if (matcher.exact.has(name)) return true;
  for (const prefix of matcher.prefixes) if (name.startsWith(prefix)) return true;
  return false;
}

/** Rules 13-15 on the query without its `?`; returns '' when nothing is left. */
function normalizeQuery(query: string, matcher: ParamMatcher): string {
  const kept: string[] = [];
  for (const pair of query.split('&')) {
    if (pair === '' || isStripped(pair, matcher)) continue;
    kept.push(normalizePercentEncoding(pair));
  }
  return kept.join('&');
}

/**
 * Normalizes an absolute http(s) URL by the profile above. Never throws: a URL that cannot be
 * crawled comes back as `{ ok: false, code, reason }`. `key` is `urlKey(url)`.
 */
export function normalizeUrl(input: string | URL, options?: Partial<NormalizeOptions>): NormalizeResult {
  const result = normalizeHref(input, options);
  return result.ok ? { ok: true, url: result.url, key: urlKey(result.url) } : result;
}

/** `normalizeUrl` without computing the SHA-256 key. */
export function normalizeHref(input: string | URL, options?: Partial<NormalizeOptions>): NormalizeHrefResult {
  const maxUrlLength = options?.maxUrlLength ?? DEFAULT_NORMALIZE_OPTIONS.maxUrlLength;
  const stripParams = options?.stripParams ?? DEFAULT_NORMALIZE_OPTIONS.stripParams;

  const raw = typeof input === 'string' ? input : input.href;
  const url = resolveUrl(raw);
  if (url === undefined) {
    return {
      ok: false,
      code: 'invalid-url',
      reason: `${preview(raw)} is not a valid absolute URL; expected an absolute http(s) URL such as https://example.com/page`,
    };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return {
      ok: false,
      code: 'unsupported-scheme',
      reason: `scheme "${url.protocol}" of ${preview(raw)} is not crawlable; expected http: or https:`,
    };
  }

  // Rule 6. WHATWG keeps a trailing dot; `example.com.` and `example.com` are one host.
  if (url.hostname.endsWith('.')) {
    // a loop, not /\.+$/: that regex is quadratic in a host of many dots (`a.....b.` froze a page's links)
    let end = url.hostname.length;
    while (end > 0 && url.hostname.charCodeAt(end - 1) === 46) end--;
    const host = url.hostname.slice(0, end);
    if (host === '') {
      return {
        ok: false,
        code: 'invalid-url',
        reason: `host of ${preview(raw)} is only dots; expected a host name or IP address`,
      };
    }
    url.hostname = host;
  }

  url.hash = '';
  // Rule 16: a secret in a URL must not reach the frontier, the WARC or a result.
  url.username = '';
  url.password = '';
  url.pathname = normalizePercentEncoding(url.pathname);
  // `url.search` is '' both for no query and for a bare `?`; setting it to '' drops the `?`.
  const query = url.search === '' ? '' : normalizeQuery(url.search.slice(1), paramMatcher(stripParams));
  url.search = query === '' ? '' : `?${query}`;

  const href = url.href;
  if (href.length > maxUrlLength) {
    return {
      ok: false,
      code: 'url-too-long',
      reason: `URL is ${href.length} characters long after normalization; expected at most ${maxUrlLength} (maxUrlLength)`,
    };
  }
  return { ok: true, url: href };
}

/**
 * `url` without `user:pass@` (itself when it has none, else a copy). For URLs that are used or
 * recorded without going through normalization (a redirect Location, the URL a fetcher dials).
 */
export function withoutUserinfo(url: URL): URL {
  if (url.username === '' && url.password === '') return url;
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy;
}

/** `scheme://userinfo@`, for inputs the URL parser refuses: the authority ends at `/ \ ? #`, userinfo at its last `@`. */
const TEXT_USERINFO = /^([A-Za-z][A-Za-z0-9+.-]*:[/\\]{2})[^/\\?#]*@/;

/**
 * A URL as the user wrote it, minus its userinfo: parsed and re-serialized only when it has some;
 * an input the parser refuses loses a textual `scheme://…@` instead, so even an invalid seed or
 * Location keeps no secret when it is recorded as given.
 */
export function stripUserinfo(input: string): string {
  const url = resolveUrl(input);
  if (url === undefined) {
    const trimmed = trimUrlInput(input);
    const cut = trimmed.replace(TEXT_USERINFO, '$1');
    return cut === trimmed ? input : cut;
  }
  return url.username === '' && url.password === '' ? input : withoutUserinfo(url).href;
}

/** The frontier dedup key of an already normalized URL: lower-case hex SHA-256 of its UTF-8. */
export function urlKey(normalizedUrl: string): string {
  return createHash('sha256').update(normalizedUrl, 'utf8').digest('hex');
}
