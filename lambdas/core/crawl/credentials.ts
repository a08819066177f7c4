/**
 * A crawl's credentials: request headers, cookies and HTTP Basic credentials, each sent only to the
 * hosts it is scoped to (docs/crawling.md, "Credentials").
 *
 * - The bundle is a secret: it never goes into the crawl's config item, only into an SSM SecureString
 *   parameter the config names (adapters/credential-store.ts), which the fetch function reads.
 * - Scope is checked per request against the URL being fetched, so a redirect to another host (a URL
 *   of its own in the frontier) never carries them.
 * - The WARC request record keeps the header's name and `REDACTED` in place of its value.
 */
import { z } from 'zod';
import { CREDENTIAL_LIMITS } from '../base/index.ts';

/** What a request record holds in place of a secret header's value. */
export const REDACTED = 'REDACTED';

/** RFC 9110 token characters: a header or cookie name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A field value: visible characters, spaces and tabs (no CR, LF or NUL can split the request). */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** A cookie value (RFC 6265 cookie-octet, and the DQUOTE form). */
const COOKIE_VALUE = /^("?)[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*\1$/;
/** Set by the fetcher itself (http-fetcher.ts): a crawl cannot configure them. */
const FETCHER_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'te',
  'upgrade',
]);

const HostsSchema = z.array(z.string().min(1)).min(1);

export const CredentialBundleSchema = z.object({
  v: z.literal(1),
  /** Headers (Basic credentials are an `authorization` header), each for its hosts (`host[:port]`). */
  headers: z.array(
    z.object({ name: z.string().regex(TOKEN), value: z.string().regex(FIELD_VALUE), hosts: HostsSchema }),
  ),
  /** The crawl's proxy's `Proxy-Authorization` (from `--proxy http://user:password@host`), sent on CONNECT only. */
  proxyAuthorization: z.string().regex(FIELD_VALUE).optional(),
  cookies: z.array(
    z.object({
      /** A host name, without a leading dot. */
      domain: z.string().min(1),
      /** Also sent to the domain's subdomains (a cookie file's second field). */
      subdomains: z.boolean(),
      path: z.string().startsWith('/'),
      /** Only over https. */
      secure: z.boolean(),
      /** Epoch seconds; 0: a session cookie, never expires during the crawl. */
      expires: z.number().int().min(0),
      name: z.string().regex(TOKEN),
      value: z.string().regex(COOKIE_VALUE),
    }),
  ),
});

export type CredentialBundle = z.infer<typeof CredentialBundleSchema>;
export type CredentialCookie = CredentialBundle['cookies'][number];

/** A mistake in a credential option or cookie file: its message is the one line the user sees. */
export class CredentialError extends Error {}

/** `Name: value` of `--header`. */
export function parseHeaderOption(text: string): { name: string; value: string } {
  const colon = text.indexOf(':');
  const name = colon === -1 ? '' : text.slice(0, colon).trim();
  if (!TOKEN.test(name))
    throw new CredentialError(`--header ${clip(text)}: expected 'Name: value' with a header name`);
  const value = text.slice(colon + 1).trim();
  if (!FIELD_VALUE.test(value)) {
    throw new CredentialError(
      `--header ${name}: the value has a control character (CR, LF or NUL); expected one line`,
    );
  }
  if (FETCHER_HEADERS.has(name.toLowerCase())) {
    throw new CredentialError(`--header ${name}: set by the crawler itself; it cannot be configured`);
  }
  return { name, value };
}

/** `name=value` of `--cookie`. */
export function parseCookieOption(text: string): { name: string; value: string } {
  const equals = text.indexOf('=');
  const name = equals === -1 ? '' : text.slice(0, equals).trim();
  const value = text.slice(equals + 1).trim();
  if (!TOKEN.test(name) || !COOKIE_VALUE.test(value)) {
    throw new CredentialError(
      `--cookie ${clip(text)}: expected name=value, a token name and a value without spaces, quotes, commas, semicolons or backslashes`,
    );
  }
  return { name, value };
}

/** `user:password` of `--basic-auth`, as the `authorization` header it becomes (RFC 7617). */
export function basicAuthHeader(text: string): { name: string; value: string } {
  const colon = text.indexOf(':');
  if (colon <= 0)
    throw new CredentialError('--basic-auth: expected user:password (the user may not be empty)');
  if (/\p{Cc}/u.test(text)) throw new CredentialError('--basic-auth: control characters are not allowed');
  return { name: 'authorization', value: `Basic ${Buffer.from(text, 'utf8').toString('base64')}` };
}

/**
 * A cookie file in the Netscape format curl, wget and browser extensions write: one cookie a line,
 * seven tab-separated fields (domain, subdomains TRUE/FALSE, path, secure TRUE/FALSE, expiry, name,
 * value); `#` comments, and the `#HttpOnly_` prefix on a domain. `source` names the file in errors.
 */
export function parseCookieFile(text: string, source: string): CredentialCookie[] {
  const cookies: CredentialCookie[] = [];
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.startsWith('#HttpOnly_')) line = line.slice('#HttpOnly_'.length);
    else if (line.startsWith('#') || line.trim() === '') continue;
    const where = `${source} line ${index + 1}`;
    const fields = line.split('\t');
    if (fields.length !== 7) {
      throw new CredentialError(
        `${where}: ${fields.length} tab-separated fields; a Netscape cookie line has 7`,
      );
    }
    const [domainField, subdomains, path, secure, expires, name, value] = fields as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const domain = domainField.replace(/^\./, '').toLowerCase();
    const flag = (field: string, what: string) => {
      if (field !== 'TRUE' && field !== 'FALSE')
        throw new CredentialError(`${where}: ${what} is ${clip(field)}; expected TRUE or FALSE`);
      return field === 'TRUE';
    };
    const cookie = {
      domain,
      subdomains: flag(subdomains, 'the subdomains field') || domainField.startsWith('.'),
      path,
      secure: flag(secure, 'the secure field'),
      expires: /^\d{1,12}$/.test(expires) ? Number(expires) : Number.NaN,
      name,
      value,
    };
    const checked = CredentialBundleSchema.shape.cookies.element.safeParse(cookie);
    if (!checked.success || !/^[a-z0-9.-]+$/.test(domain)) {
      throw new CredentialError(
        `${where}: expected a host name, a path starting with /, an expiry in epoch seconds, a token name and a cookie value`,
      );
    }
    cookies.push(checked.data);
  }
  return cookies;
}

/** The bundle's size as stored: an SSM SecureString of the standard tier holds 4 KB. */
export function checkBundleSize(bundle: CredentialBundle): void {
  const bytes = Buffer.byteLength(JSON.stringify(bundle));
  if (bytes > CREDENTIAL_LIMITS.bundleBytes) {
    throw new CredentialError(
      `the crawl's credentials take ${bytes} bytes; at most ${CREDENTIAL_LIMITS.bundleBytes} are kept (one SSM SecureString parameter)`,
    );
  }
}

/** The headers `bundle` gives a request to `url` at `nowSeconds`: its scoped headers and matching cookies. */
export function credentialHeaders(
  bundle: CredentialBundle | undefined,
  url: URL,
  nowSeconds: number,
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (bundle === undefined) return headers;
  const host = url.host.toLowerCase();
  for (const header of bundle.headers)
    if (header.hosts.includes(host)) headers[header.name.toLowerCase()] = header.value;
  const cookies = bundle.cookies.filter((cookie) => cookieMatches(cookie, url, nowSeconds));
  if (cookies.length > 0)
    headers.cookie = cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
  return headers;
}

/** RFC 6265 section 5.4: domain-match, path-match, secure only over https, not expired. */
function cookieMatches(cookie: CredentialCookie, url: URL, nowSeconds: number): boolean {
  const host = url.hostname.toLowerCase();
  const domainOk = host === cookie.domain || (cookie.subdomains && host.endsWith(`.${cookie.domain}`));
  if (!domainOk) return false;
  if (cookie.secure && url.protocol !== 'https:') return false;
  if (cookie.expires !== 0 && cookie.expires <= nowSeconds) return false;
  const path = url.pathname;
  return (
    path === cookie.path ||
    (path.startsWith(cookie.path) && (cookie.path.endsWith('/') || path[cookie.path.length] === '/'))
  );
}

/** Names (lower case) whose values a request record must not keep. */
export function secretHeaderNames(bundle: CredentialBundle | undefined): Set<string> {
  const names = new Set<string>();
  for (const header of bundle?.headers ?? []) names.add(header.name.toLowerCase());
  if ((bundle?.cookies.length ?? 0) > 0) names.add('cookie');
  return names;
}

/** `headers` with the value of every secret one replaced by REDACTED. */
export function redactHeaders(
  headers: ReadonlyArray<[string, string]>,
  secret: ReadonlySet<string>,
): Array<[string, string]> {
  return headers.map(([name, value]) => [name, secret.has(name.toLowerCase()) ? REDACTED : value]);
}

function clip(text: string): string {
  const shown = JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
  return shown;
}
