/**
 * SURT (Sort-friendly URI Reordering Transform) keys, exactly as the Python `surt` library computes
 * them with its defaults (`surt.surt(url)`): the key pywb and the Wayback CDX server look a URL up by.
 * The results index's `urlkey` (cdxj.ts) must be this key, or lookups from those tools miss. Pure: no
 * I/O.
 *
 * `surt(url)` parses the URL as the library does (not as WHATWG does), then canonicalizes it in two
 * steps and prints the host reversed:
 *
 * | step | what | example |
 * | --- | --- | --- |
 * | parse | trim; drop tabs and newlines; `http://` added when there is no scheme; `http://https://` → `https://`; userinfo dropped; `host:` without a port | `www.a.com` → `http://www.a.com` |
 * | Google | fragment dropped; path, query and host percent-decoded repeatedly then re-encoded once (only controls, space, `#`, `%`, DEL and non-ASCII bytes encoded, as `%XX`); non-ASCII host to IDNA 2003; `..` in the host → `.`, outer dots trimmed; numeric hosts (`3279880203`, `017.0.0.1`, `10.0.258`) to dotted quads; dot segments and repeated slashes of the path removed; empty path → `/` | `http://host/%7Ea/./b//c` → `http://host/~a/b/c` |
 * | IA | host, path and query lower-cased; leading `www.`/`www<digits>.` dropped; default port dropped; ASP.NET path session ids and `jsessionid`, `phpsessid`, `sid`, `aspsessionid…`, `cfid`+`cftoken` query session ids dropped; a trailing `/` dropped (not the root's); query arguments sorted (by name, then value); an empty query dropped | `http://www.a.com/B/?b=1&A=2` → `http://a.com/b?a=2&b=1` |
 * | key | host labels reversed and comma-joined, `:port`, `)`, path, `?query`; scheme dropped | `com,a)/b?a=2&b=1` |
 *
 * Where the library answers without parsing, so does this: `''` → `-`, `filedesc…` unchanged; URLs
 * without a host keep their scheme (`mailto:a@b.c`, `dns:b.c`). Where the library raises (a port that
 * is not a number up to 65535, blank input), the input is returned unchanged.
 *
 * The library works on the UTF-8 bytes of the URL; so does this, with each byte held as one char of
 * a "binary string" (`Buffer#toString('latin1')`), so percent-decoding may produce any byte and only
 * ASCII letters change case. Conformance: test/data/surt-cases.json (the library's own tests).
 */
import { idna2003ToAscii } from './idna2003.ts';

/** The library's `handyurl`: the parts of a URL as binary strings (see the top of this file). */
interface HandyUrl {
  scheme: string;
  host: string | undefined;
  port: number | undefined;
  path: string | undefined;
  query: string | undefined;
  hash: string | undefined;
  /** `?` when the URL ended in a `?` with nothing after it (kept until the IA step drops it). */
  lastDelimiter: string | undefined;
}

/** The SURT key of `url`: `http://www.Example.com/A/?b=2&a=1#f` → `com,example)/a?a=1&b=2`. */
export function surt(url: string): string {
  if (url === '') return '-';
  if (url.startsWith('filedesc')) return url;
  const parsed = parse(toBinary(url));
  if (parsed === undefined) return url;
  return fromBinary(format(iaCanonicalize(googleCanonicalize(parsed)), true));
}

/** Which of the library's canonicalizers `canonicalUrl` applies (`default` = `google` then `ia`). */
export type Canonicalizer = 'none' | 'google' | 'ia' | 'default';

/**
 * The canonicalized URL itself (the library's `canonicalize(handyurl.parse(url)).getURLString()`),
 * or undefined where the library raises. `surt` is this URL with the `default` canonicalizer, in key form.
 */
export function canonicalUrl(url: string, canonicalizer: Canonicalizer = 'default'): string | undefined {
  const parsed = parse(toBinary(url));
  if (parsed === undefined) return undefined;
  const google = canonicalizer === 'google' || canonicalizer === 'default';
  const ia = canonicalizer === 'ia' || canonicalizer === 'default';
  const googled = google ? googleCanonicalize(parsed) : parsed;
  return fromBinary(format(ia ? iaCanonicalize(googled) : googled, false));
}

function toBinary(text: string): string {
  return isAscii(text) ? text : Buffer.from(text, 'utf8').toString('latin1');
}

function fromBinary(binary: string): string {
  return isAscii(binary) ? binary : Buffer.from(binary, 'latin1').toString('utf8');
}

function isAscii(text: string): boolean {
  return !/[\u0080-\uffff]/.test(text);
}

/** Lower-cases ASCII letters only, as Python's `bytes.lower()`. */
function asciiLower(binary: string): string {
  return isAscii(binary) ? binary.toLowerCase() : binary.replace(/[A-Z]+/g, (run) => run.toLowerCase());
}

// The library's split of a URL (RFC 2396 appendix B, scheme limited to legal scheme characters).
// Flag `s`: Python's `.` stops only at \n, and newlines are gone by then.
const URL_PARTS = /^(?:([a-zA-Z][a-zA-Z0-9+.-]*):)?(?:(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?)?(?:#(.*))?$/s;

function parse(input: string): HandyUrl | undefined {
  let url = trim(input, isWhitespace);
  // Tabs and newlines inside are dropped too (rare: tested first).
  if (/[\n\r\t]/.test(url)) url = url.replace(/[\n\r\t]/g, '');
  if (url !== '' && !/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(url)) url = `http://${url}`;
  url = url.replace(/^(https?:\/\/)+/, '$1');
  const parts = URL_PARTS.exec(url);
  const scheme = parts?.[1];
  // A blank URL has no scheme: the library fails on it.
  if (!parts || !scheme) return undefined;
  const netloc = trim(parts[2] ?? '', (code) => code === 0x3a, false);
  const hostInfo = netloc.slice(netloc.lastIndexOf('@') + 1);
  let hostname: string;
  let portText: string;
  const bracket = hostInfo.indexOf('[');
  if (bracket >= 0) {
    const bracketed = hostInfo.slice(bracket + 1);
    const close = bracketed.indexOf(']');
    hostname = close >= 0 ? bracketed.slice(0, close) : bracketed;
    const after = close >= 0 ? bracketed.slice(close + 1) : '';
    const colon = after.indexOf(':');
    portText = colon >= 0 ? after.slice(colon + 1) : '';
  } else {
    const colon = hostInfo.indexOf(':');
    hostname = colon >= 0 ? hostInfo.slice(0, colon) : hostInfo;
    portText = colon >= 0 ? hostInfo.slice(colon + 1) : '';
  }
  let port: number | undefined;
  if (portText !== '') {
    if (!/^[0-9]+$/.test(portText)) return undefined;
    const value = Number(portText);
    if (value > 65535) return undefined;
    port = value === 0 ? undefined : value;
  }
  // Python's `hostname` lower-cases up to a `%` (an IPv6 zone); the canonicalizers lower-case the rest.
  const zone = hostname.indexOf('%');
  let host: string | undefined =
    zone >= 0 ? asciiLower(hostname.slice(0, zone)) + hostname.slice(zone) : asciiLower(hostname);
  if (host === '') host = undefined;
  let path = parts[3] || undefined;
  if (scheme.startsWith('http') && host === undefined && path !== undefined) {
    // `http:////host/a` and `http:host/a`: the host is the first path segment.
    const rest = path.replace(/^\/+/, '');
    const slash = rest.indexOf('/');
    host = slash >= 0 ? rest.slice(0, slash) : rest;
    path = slash >= 0 ? `/${rest.slice(slash + 1)}` : '/';
  }
  const query = parts[4] || undefined;
  return {
    scheme,
    host,
    port,
    path,
    query,
    hash: parts[5] || undefined,
    lastDelimiter: url.endsWith('?') && query === undefined ? '?' : undefined,
  };
}

/** `text` without the chars `trimmed` accepts at its start (when `start`) and end, as Python's strip. */
function trim(text: string, trimmed: (code: number) => boolean, start = true): string {
  let from = 0;
  let to = text.length;
  while (start && from < to && trimmed(text.charCodeAt(from))) from += 1;
  while (to > from && trimmed(text.charCodeAt(to - 1))) to -= 1;
  return from === 0 && to === text.length ? text : text.slice(from, to);
}

/** Python's `bytes.strip()` set: space, \t, \n, \v, \f, \r. */
function isWhitespace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d);
}

/** The library's `getURLString`: `surtForm` is the key (scheme dropped, host reversed, `)` after it). */
function format(url: HandyUrl, surtForm: boolean): string {
  const host = url.host ? (surtForm ? hostToSurt(url.host) : url.host) : undefined;
  let out: string;
  if (!host) out = `${url.scheme}:`;
  else if (surtForm) out = '';
  else out = url.scheme === 'dns' ? `${url.scheme}:` : `${url.scheme}://`;
  if (host) {
    out += host;
    if (url.port !== undefined) out += `:${url.port}`;
    if (surtForm) out += ')';
  }
  if (url.path) out += url.path;
  else if (url.query !== undefined || url.hash !== undefined) out += '/';
  if (url.query !== undefined) out += `?${url.query}`;
  if (url.hash !== undefined) out += `#${url.hash}`;
  if (url.lastDelimiter !== undefined) out += url.lastDelimiter;
  return out;
}

/** The library's GoogleURLCanonicalizer (Google Safe Browsing's URL canonicalization). */
function googleCanonicalize(url: HandyUrl): HandyUrl {
  const out: HandyUrl = { ...url, hash: undefined };
  if (url.query) out.query = escapeOnce(unescapeRepeatedly(url.query));
  if (url.host) {
    let host = unescapeRepeatedly(url.host);
    if (!isAscii(host)) host = idna2003ToAscii(decodeUtf8Ignoring(host)) ?? host;
    host = trim(host.split('..').join('.'), (code) => code === 0x2e);
    out.host = attemptIpFormats(host) ?? escapeOnce(asciiLower(host));
  }
  const path = url.path === undefined ? undefined : unescapeRepeatedly(url.path);
  // Without a host the path is free-form (`mailto:`, `dns:`), not segments.
  out.path = escapeOnce(out.host ? normalizePath(path) : path);
  return out;
}

/** The library's IAURLCanonicalizer with its default options. */
function iaCanonicalize(url: HandyUrl): HandyUrl {
  const out: HandyUrl = { ...url };
  if (out.host) {
    out.host = asciiLower(out.host);
    if (url.scheme !== 'dns') out.host = massageHost(out.host);
  }
  if (out.port !== undefined && out.port === defaultPort(url.scheme)) out.port = undefined;
  let path = out.path;
  if (path) path = stripPathSessionId(asciiLower(path));
  if (path && path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  out.path = path;
  if (url.query) {
    const query = alphaReorderQuery(asciiLower(stripQuerySessionId(url.query)));
    out.query = query === '' ? undefined : query;
  } else {
    out.lastDelimiter = undefined;
  }
  return out;
}

/** Removes `.` and `..` segments and empty segments (but a trailing `/`); an empty path is `/`. */
function normalizePath(path: string | undefined): string {
  if (!path) return '/';
  const kept: string[] = [];
  for (const segment of path.split('/').slice(1)) {
    if (segment === '.') continue;
    // A `..` with nothing to pop is kept, as the library does.
    if (segment === '..' && kept.length > 0) kept.pop();
    else kept.push(segment);
  }
  if (kept.length === 0) return '/';
  const last = kept.pop() ?? '';
  // Empty segments are dropped (`a//b` → `a/b`), all but the last (a trailing `/` stays).
  const middle = kept.filter((segment) => segment !== '');
  return middle.length === 0 ? `/${last}` : `/${middle.join('/')}/${last}`;
}

/**
 * Percent-decodes until nothing changes (`%252F` → `/`); a `%` not followed by two hex digits stays.
 * Exported for the conformance tests.
 */
export function unescapeRepeatedly(binary: string): string {
  let current = binary;
  for (;;) {
    if (!current.includes('%')) return current;
    const next = current.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
    if (next === current) return current;
    current = next;
  }
}

/** Percent-encodes controls, space, `#`, `%`, DEL and non-ASCII bytes; everything else stays. */
function escapeOnce(binary: string): string;
function escapeOnce(binary: string | undefined): string | undefined;
function escapeOnce(binary: string | undefined): string | undefined {
  // Everything but `!`, `"`, `$` and `&` to `~`; most parts need nothing.
  if (!binary || !/[^!"$&-~]/.test(binary)) return binary;
  return binary.replace(
    /[^!"$&-~]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

/** Python's `bytes.decode('utf-8', 'ignore')`: bytes that are not well-formed UTF-8 are dropped. */
function decodeUtf8Ignoring(binary: string): string {
  let out = '';
  for (let i = 0; i < binary.length; ) {
    const b0 = binary.charCodeAt(i);
    if (b0 < 0x80) {
      out += binary[i];
      i += 1;
      continue;
    }
    const length =
      b0 >= 0xc2 && b0 <= 0xdf ? 2 : b0 >= 0xe0 && b0 <= 0xef ? 3 : b0 >= 0xf0 && b0 <= 0xf4 ? 4 : 0;
    // The second byte's range depends on the first (no overlongs, surrogates or code points past U+10FFFF).
    const low = b0 === 0xe0 ? 0xa0 : b0 === 0xf0 ? 0x90 : 0x80;
    const high = b0 === 0xed ? 0x9f : b0 === 0xf4 ? 0x8f : 0xbf;
    let valid = length > 0 && i + length <= binary.length;
    for (let k = 1; valid && k < length; k += 1) {
      const b = binary.charCodeAt(i + k);
      valid = k === 1 ? b >= low && b <= high : b >= 0x80 && b <= 0xbf;
    }
    if (valid) {
      out += Buffer.from(binary.slice(i, i + length), 'latin1').toString('utf8');
      i += length;
    } else {
      i += 1;
    }
  }
  return out;
}

/**
 * The dotted quad of a numeric host, as the library gets it from the C resolver (`inet_aton` rules:
 * `017.0.0.1` is octal, `10.0.258` is `10.0.1.2`, a bare number is masked to 32 bits), or undefined
 * when the host is not one. Exported for the conformance tests.
 */
export function attemptIpFormats(host: string): string | undefined {
  if (/^[0-9]+$/.test(host)) return dottedQuad(Number(BigInt(host) & 0xffffffffn));
  if (!/^[1-9][0-9]*(\.[0-9]+){0,3}$/.test(host) && !/^0[0-7]*(\.[0-7]+){0,3}$/.test(host)) return undefined;
  const parts: number[] = [];
  for (const part of host.split('.')) {
    const octal = part.length > 1 && part.startsWith('0');
    if (octal && !/^[0-7]+$/.test(part)) return undefined;
    const value = octal ? Number.parseInt(part, 8) : Number(part);
    if (!Number.isSafeInteger(value) || value > 0xffffffff) return undefined;
    parts.push(value);
  }
  const last = parts.pop() ?? 0;
  if (parts.some((value) => value > 0xff)) return undefined;
  // The last part fills the bytes the others leave: a.b.c.d, a.b.(16 bits), a.(24 bits), (32 bits).
  const lastBits = 8 * (4 - parts.length);
  if (lastBits < 32 && last >= 2 ** lastBits) return undefined;
  let address = 0;
  for (const value of parts) address = address * 256 + value;
  return dottedQuad(address * 2 ** lastBits + last);
}

function dottedQuad(address: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(address / 2 ** shift) % 256).join('.');
}

/** Drops a leading `www.` or `www<digits>.`. Exported for the conformance tests. */
export function massageHost(host: string): string {
  return host.replace(/^www[0-9]*\./, '');
}

/** 80 for http, 443 for https, 0 for any other scheme. Exported for the conformance tests. */
export function defaultPort(scheme: string): number {
  const lower = asciiLower(scheme);
  return lower === 'http' ? 80 : lower === 'https' ? 443 : 0;
}

// ASP.NET cookieless session ids in the path: `/(S(id))/`, `/(a(id)S(id))/` and `/(id)/` before an .aspx page.
const PATH_SESSION_IDS = [
  /^([^\n]*\/)(\((?:[a-z]\([0-9a-z]{24}\))+\)\/)([^?]+\.aspx[^\n]*)$/i,
  /^([^\n]*\/)(\([0-9a-z]{24}\)\/)([^?]+\.aspx[^\n]*)$/i,
];

/** Drops ASP.NET session ids from a path. Exported for the conformance tests. */
export function stripPathSessionId(path: string): string {
  if (!path.includes('(')) return path;
  let out = path;
  for (const pattern of PATH_SESSION_IDS) {
    const match = pattern.exec(out);
    if (match) out = (match[1] ?? '') + (match[3] ?? '');
  }
  return out;
}

// Query session ids; each pattern drops its last match and the `&` after it.
const QUERY_SESSION_IDS = [
  /^([^\n]*)(?:jsessionid=[0-9a-z]{32})(?:&([^\n]*))?$/i,
  /^([^\n]*)(?:phpsessid=[0-9a-z]{32})(?:&([^\n]*))?$/i,
  /^([^\n]*)(?:sid=[0-9a-z]{32})(?:&([^\n]*))?$/i,
  /^([^\n]*)(?:aspsessionid[a-z]{8}=[a-z]{24})(?:&([^\n]*))?$/i,
  /^([^\n]*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&([^\n]*))?$/i,
];

/** Drops session-id arguments from a query. Exported for the conformance tests. */
export function stripQuerySessionId(query: string): string {
  // Every pattern needs one of these; most queries have none.
  if (!/sess|sid=|cfid=/i.test(query)) return query;
  let out = query;
  for (const pattern of QUERY_SESSION_IDS) {
    const match = pattern.exec(out);
    if (match) out = (match[1] ?? '') + (match[2] || '');
  }
  return out;
}

/**
 * Sorts `&`-separated arguments by name, then by value, an argument without `=` before one with it
 * (Python's sort of `(name,)` / `(name, value)` tuples). Exported for the conformance tests.
 */
export function alphaReorderQuery(query: string): string {
  if (query.length <= 1) return query;
  const args = query.split('&').map((arg) => {
    const eq = arg.indexOf('=');
    return eq < 0
      ? { arg, name: arg, value: undefined }
      : { arg, name: arg.slice(0, eq), value: arg.slice(eq + 1) };
  });
  args.sort((a, b) => {
    if (a.name !== b.name) return a.name < b.name ? -1 : 1;
    if (a.value === b.value) return 0;
    if (a.value === undefined) return -1;
    if (b.value === undefined) return 1;
    return a.value < b.value ? -1 : 1;
  });
  return args.map(({ arg }) => arg).join('&');
}

/** `www.archive.org` → `org,archive,www` (an IPv4 address is reversed too). Exported for the conformance tests. */
export function hostToSurt(host: string): string {
  return host.split('.').reverse().join(',');
}
