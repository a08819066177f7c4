/**
 * Crawl scope: which discovered URLs belong to a crawl.
 *
 * | scope | a URL is in scope when | notes |
 * | --- | --- | --- |
 * | `host` | its host equals the host of some seed | compared after normalization (lower case, IDNA, trailing dot removed, default port removed). The port is part of the host: `a.com:8080` ≠ `a.com`, while `http://a.com/` and `https://a.com/` are the same host. `www.` is NOT stripped: `www.a.com` and `a.com` are different hosts (use `domain` to join them) |
 * | `domain` | its registrable domain (public suffix list, private suffixes included, so `alice.github.io` ≠ `bob.github.io`) equals that of some seed | any subdomain, scheme and port. A host without a registrable domain (IPv4, IPv6, `localhost`, a single label, a bare public suffix) has no subdomains to join: it compares as under `host`, port included (`127.0.0.1:8080` ≠ `127.0.0.1:9090`; 80 for http and 443 for https are "no port", so `http://127.0.0.1/` and `https://127.0.0.1/` match) |
 * | `prefix` | its normalized URL starts with a seed's normalized URL cut after the last `/` of the path | seed `https://a.com/docs/intro.html?x=1` → prefix `https://a.com/docs/`; seed `https://a.com/docs` → prefix `https://a.com/`. String prefix, so the scheme must match too |
 *
 * Then, in this order: any `exclude` pattern matching the normalized URL → `exclude` (exclude wins
 * over include); if `include` patterns are given and none matches → `include`. Patterns are tested
 * with `String.prototype.search`, so `g`/`y` flags and `lastIndex` do not matter. Only http(s) URLs
 * are ever in scope. Invalid seeds are ignored (listed in `invalidSeeds` of `compileScope`); with no
 * valid seed nothing is in scope.
 */
import { getDomain } from 'tldts';
import { normalizeHref } from './url-normalize.ts';

export type Scope = 'host' | 'domain' | 'prefix';

export const SCOPES: readonly Scope[] = ['host', 'domain', 'prefix'];

export interface ScopeRules {
  scope: Scope;
  seeds: string[];
  include: RegExp[];
  exclude: RegExp[];
}

export type ScopeReason = 'scope' | 'exclude' | 'include';

/** `detail` says, in words, why a URL was left out (for result records and logs). */
export type ScopeDecision = { ok: true } | { ok: false; reason: ScopeReason; detail: string };

export interface CompiledScope {
  readonly rules: ScopeRules;
  /** Normalized seed URLs that define the scope. */
  readonly seeds: readonly string[];
  /** Seeds that could not be normalized, with the reason. */
  readonly invalidSeeds: readonly { seed: string; reason: string }[];
  inScope(url: URL | string): ScopeDecision;
}

/** Normalization for comparisons only: no length cap (that is a separate, later check). */
const COMPARE_OPTIONS = { maxUrlLength: Number.POSITIVE_INFINITY };

/**
 * What `domain` scope compares: the registrable domain, or, for a host without one, the host with
 * its port, as `host` scope does (an IP has no subdomains; its ports are different servers). The
 * prefixes keep a domain from ever equalling a host.
 */
function domainKey(url: URL): string {
  const domain = getDomain(url.hostname, { allowPrivateDomains: true, extractHostname: false });
  return domain === null ? `host ${url.host}` : `domain ${domain}`;
}

function prefixOf(url: URL): string {
  const { href, pathname, search } = url;
  const fileName = pathname.length - (pathname.lastIndexOf('/') + 1);
  return href.slice(0, href.length - search.length - fileName);
}

function matchesAny(value: string, patterns: readonly RegExp[]): RegExp | undefined {
  for (const pattern of patterns) if (value.search(pattern) !== -1) return pattern;
  return undefined;
}

/**
 * What a seed contributes to its crawl's scope: its host (`host`), its registrable domain or host
 * (`domain`), or its URL up to the last `/` of the path (`prefix`). A crawl's scope is the set of
 * these keys, so a crawl of a million seeds on a thousand hosts stores a thousand keys.
 */
export function scopeKeyOf(scope: Scope, url: URL): string {
  if (scope === 'host') return url.host;
  if (scope === 'domain') return domainKey(url);
  return prefixOf(url);
}

/** A seed's scope key, or why the seed has none (it is not a valid http(s) URL). */
export function seedScopeKey(
  scope: Scope,
  seed: string,
): { ok: true; url: string; key: string } | { ok: false; reason: string } {
  const normalized = normalizeHref(seed, COMPARE_OPTIONS);
  if (!normalized.ok) return { ok: false, reason: normalized.reason };
  return { ok: true, url: normalized.url, key: scopeKeyOf(scope, new URL(normalized.url)) };
}

/** The rules of a scope given by its keys (`scopeKeyOf`) instead of its seeds. */
export interface ScopeKeyRules {
  scope: Scope;
  keys: Iterable<string>;
  include: RegExp[];
  exclude: RegExp[];
}

/** Precomputes the seeds' hosts, domains and prefixes; use it for many checks against one crawl. */
export function compileScope(rules: ScopeRules): CompiledScope {
  const seeds: string[] = [];
  const invalidSeeds: { seed: string; reason: string }[] = [];
  const keys: string[] = [];
  for (const seed of rules.seeds) {
    const key = seedScopeKey(rules.scope, seed);
    if (!key.ok) {
      invalidSeeds.push({ seed, reason: key.reason });
      continue;
    }
    seeds.push(key.url);
    keys.push(key.key);
  }
  const compiled = compileScopeKeys({ ...rules, keys });
  return { rules, seeds, invalidSeeds, inScope: compiled.inScope };
}

/**
 * A scope from its keys. Every check is a few Set lookups, whatever the number of keys: a prefix
 * ends with `/` (the path's last one), so the prefixes a URL can start with are its own cuts after
 * each `/`, looked up one by one.
 */
export function compileScopeKeys(rules: ScopeKeyRules): Pick<CompiledScope, 'inScope'> {
  const allowed = new Set(rules.keys);

  const describeAllowed = (): string => {
    if (allowed.size === 0) return 'no valid seed';
    const shown: string[] = [];
    for (const key of allowed) {
      if (shown.length === 3) break;
      shown.push(key);
    }
    return allowed.size > 3 ? `${shown.join(', ')} (+${allowed.size - 3} more)` : shown.join(', ');
  };

  const hasPrefixOf = (href: string): boolean => {
    for (let slash = href.indexOf('/'); slash !== -1; slash = href.indexOf('/', slash + 1))
      if (allowed.has(href.slice(0, slash + 1))) return true;
    return false;
  };

  const inScope = (input: URL | string): ScopeDecision => {
    const normalized = normalizeHref(input, COMPARE_OPTIONS);
    if (!normalized.ok) return { ok: false, reason: 'scope', detail: normalized.reason };
    const href = normalized.url;
    const url = new URL(href);

    let inside: boolean;
    let what: string;
    if (rules.scope === 'host') {
      inside = allowed.has(url.host);
      what = `host ${url.host}`;
    } else if (rules.scope === 'domain') {
      what = domainKey(url);
      inside = allowed.has(what);
    } else {
      inside = hasPrefixOf(href);
      what = href;
    }
    if (!inside) {
      return {
        ok: false,
        reason: 'scope',
        detail: `${what} is outside the ${rules.scope} scope; expected one of: ${describeAllowed()}`,
      };
    }

    const excluded = matchesAny(href, rules.exclude);
    if (excluded !== undefined) {
      return { ok: false, reason: 'exclude', detail: `${href} matches exclude pattern ${excluded}` };
    }
    if (rules.include.length > 0 && matchesAny(href, rules.include) === undefined) {
      return {
        ok: false,
        reason: 'include',
        detail: `${href} matches none of the include patterns ${rules.include.join(' ')}`,
      };
    }
    return { ok: true };
  };

  return { inScope };
}

const compiledCache = new WeakMap<ScopeRules, CompiledScope>();

/**
 * Whether `url` belongs to the crawl described by `rules`. The rules object is compiled once and
 * cached (by identity), so calling this per link is cheap; do not mutate `rules` afterwards.
 */
export function inScope(url: URL | string, rules: ScopeRules): ScopeDecision {
  let compiled = compiledCache.get(rules);
  if (compiled === undefined) {
    compiled = compileScope(rules);
    compiledCache.set(rules, compiled);
  }
  return compiled.inScope(url);
}
