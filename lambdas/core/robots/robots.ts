/**
 * robots.txt (RFC 9309) parser and matcher. Pure: no I/O. Parse once per host, match many times.
 *
 * Decisions beyond the RFC text:
 * - Keys: `user-agent`, `allow`, `disallow`, `sitemap`, `crawl-delay`, case-insensitive; no
 *   misspellings (`disalow`, `useragent`) and no lines without a colon (both are ignored).
 * - A user-agent value is read as its leading product token (`FooBot/1.0` and `FooBot extra` name
 *   `foobot`), like the crawler's own User-Agent; `*` (alone or followed by whitespace) is the global
 *   group. Consecutive user-agent lines share one group; blank lines, `sitemap` and unknown lines do
 *   not end the list of agents; an `allow`, `disallow` or `crawl-delay` line does.
 * - All groups naming the crawler's token are combined; if none does, all `*` groups are combined; if
 *   there is none either, everything is allowed. Crawl-delay comes from the same selected groups
 *   (the largest valid value if several are given), never from `*` when a named group matched.
 * - A rule's pattern must start with `/` or `*` to match anything (the path always starts with `/`).
 * - The URL is matched by its path + query after WHATWG URL parsing (dot segments resolved, fragment
 *   dropped) and the shared canonical percent-encoding of robots-match.ts; `/robots.txt` is always
 *   allowed. A string that is not an absolute URL is read as a path reference (`''` is `/`); an
 *   unparseable URL is disallowed (fail closed).
 * - Input beyond `maxBytes` is ignored, and so is a line cut by that limit.
 * - Input is read as UTF-8. A byte order mark at the very start is skipped (text or bytes), so the
 *   first line is still a record; anywhere else U+FEFF is text. A partial or broken BOM is invalid
 *   UTF-8 like any other (U+FFFD) and spoils its line, as google/robotstxt-spec-test expects (Google's
 *   own parser skips partial BOMs).
 */
import { type CompiledPattern, canonicalizePath, compilePattern, matchesPattern } from './robots-match.ts';

export interface RobotsRule {
  readonly allow: boolean;
  /** The pattern as written (trimmed, comment removed). Empty matches nothing. */
  readonly pattern: string;
}

export interface RobotsGroup {
  /** Lower-cased product tokens this group names; `'*'` for the global group; `''` for a value with no token. */
  readonly agents: readonly string[];
  readonly rules: readonly RobotsRule[];
  /** Largest valid Crawl-delay in this group, in seconds. */
  readonly crawlDelay?: number;
}

/** A parsed robots.txt: plain, frozen, JSON-serialisable data. Matchers are compiled on first use. */
export interface RobotsPolicy {
  readonly groups: readonly RobotsGroup[];
  /** `Sitemap:` values in file order, duplicates removed. */
  readonly sitemaps: readonly string[];
  /** True when the input was longer than maxBytes and its tail was ignored. */
  readonly truncated: boolean;
}

export interface ParseRobotsOptions {
  /** Bytes (UTF-8) to read; the rest is ignored. Default 512 KiB (RFC 9309: at least 500 KiB). */
  maxBytes?: number;
}

export const DEFAULT_MAX_ROBOTS_BYTES = 512 * 1024;

const TOKEN_RE = /^[a-zA-Z_-]*/;

/**
 * The RFC 9309 product token of a User-Agent string: its leading run of `[a-zA-Z_-]`, lower-cased.
 * `'MyCrawler/1.0 (+http://x)'` → `'mycrawler'`. Empty when the string does not start with one.
 */
export function productToken(userAgent: string): string {
  return (TOKEN_RE.exec(userAgent.trimStart())?.[0] ?? '').toLowerCase();
}

/** The agent named by a robots.txt user-agent value: `'*'`, a lower-cased product token, or `''`. */
function agentOfValue(value: string): string {
  if (value === '*' || /^\*\s/.test(value)) return '*';
  return productToken(value);
}

const BOM = '\uFEFF';
const WS_RE = /^[ \t\f\v]+|[ \t\f\v]+$/g;
const CRAWL_DELAY_RE = /^(?:\d+(?:\.\d*)?|\.\d+)$/;

function decodeInput(text: string | Uint8Array, maxBytes: number): { text: string; truncated: boolean } {
  let bytes: Uint8Array | undefined;
  if (typeof text === 'string') {
    // A UTF-16 code unit is at most 3 UTF-8 bytes: only long strings can exceed the cap.
    if (text.length * 3 <= maxBytes)
      return { text: text.startsWith(BOM) ? text.slice(1) : text, truncated: false };
    bytes = new TextEncoder().encode(text);
  } else {
    bytes = text;
  }
  const truncated = bytes.length > maxBytes;
  // TextDecoder drops a leading BOM and replaces invalid sequences with U+FFFD.
  let decoded = new TextDecoder('utf-8').decode(truncated ? bytes.subarray(0, maxBytes) : bytes);
  if (truncated) {
    // The last line was cut by the limit: a shortened rule would be a different rule, so drop it.
    const lastBreak = Math.max(decoded.lastIndexOf('\n'), decoded.lastIndexOf('\r'));
    decoded = decoded.slice(0, lastBreak + 1);
  }
  return { text: decoded, truncated };
}

function parseCrawlDelay(value: string): number | undefined {
  if (!CRAWL_DELAY_RE.test(value)) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? seconds : undefined;
}

interface MutableGroup {
  agents: string[];
  rules: RobotsRule[];
  crawlDelay?: number;
}

/** Parses robots.txt text or bytes. Never throws; anything it does not understand is ignored. */
export function parseRobots(text: string | Uint8Array, options?: ParseRobotsOptions): RobotsPolicy {
  const maxBytes = Math.max(0, Math.floor(options?.maxBytes ?? DEFAULT_MAX_ROBOTS_BYTES));
  const input = decodeInput(text, maxBytes);
  const groups: MutableGroup[] = [];
  const sitemapList: string[] = [];
  let current: MutableGroup | undefined;
  // True while the current group is still collecting user-agent lines (no rule line seen yet).
  let collectingAgents = false;

  for (const rawLine of input.text.split(/\r\n|\r|\n/)) {
    const hash = rawLine.indexOf('#');
    const line = hash >= 0 ? rawLine.slice(0, hash) : rawLine;
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).replace(WS_RE, '').toLowerCase();
    const value = line.slice(colon + 1).replace(WS_RE, '');
    switch (key) {
      case 'user-agent': {
        if (!current || !collectingAgents) {
          current = { agents: [], rules: [] };
          groups.push(current);
          collectingAgents = true;
        }
        const agent = agentOfValue(value);
        if (!current.agents.includes(agent)) current.agents.push(agent);
        break;
      }
      case 'allow':
      case 'disallow':
        if (!current) break; // rules before any user-agent line belong to no group
        collectingAgents = false;
        current.rules.push({ allow: key === 'allow', pattern: value });
        break;
      case 'crawl-delay': {
        if (!current) break;
        collectingAgents = false;
        const seconds = parseCrawlDelay(value);
        if (seconds !== undefined && (current.crawlDelay === undefined || seconds > current.crawlDelay)) {
          current.crawlDelay = seconds;
        }
        break;
      }
      case 'sitemap':
        if (value !== '' && !sitemapList.includes(value)) sitemapList.push(value);
        break;
      default:
        break; // unknown keys are ignored and do not end a group
    }
  }

  return freezePolicy({ groups, sitemaps: sitemapList, truncated: input.truncated });
}

function freezePolicy(policy: {
  groups: MutableGroup[];
  sitemaps: string[];
  truncated: boolean;
}): RobotsPolicy {
  for (const group of policy.groups) {
    for (const rule of group.rules) Object.freeze(rule);
    Object.freeze(group.rules);
    Object.freeze(group.agents);
    Object.freeze(group);
  }
  Object.freeze(policy.groups);
  Object.freeze(policy.sitemaps);
  return Object.freeze(policy);
}

// ---------------------------------------------------------------------------------------------
// Matching

interface CompiledRule {
  readonly allow: boolean;
  readonly pattern: CompiledPattern;
}

interface CompiledGroupSet {
  /** Sorted by priority: longest pattern first, allow before disallow on a tie. */
  readonly rules: readonly CompiledRule[];
  readonly crawlDelay: number | undefined;
}

interface CompiledPolicy {
  readonly byAgent: ReadonlyMap<string, CompiledGroupSet>;
  readonly global: CompiledGroupSet | undefined;
}

const compiledCache = new WeakMap<RobotsPolicy, CompiledPolicy>();

function combine(groups: readonly RobotsGroup[]): CompiledGroupSet {
  const rules: CompiledRule[] = [];
  let crawlDelay: number | undefined;
  for (const group of groups) {
    for (const rule of group.rules) {
      const pattern = compilePattern(rule.pattern);
      if (pattern) rules.push({ allow: rule.allow, pattern });
    }
    if (group.crawlDelay !== undefined && (crawlDelay === undefined || group.crawlDelay > crawlDelay)) {
      crawlDelay = group.crawlDelay;
    }
  }
  rules.sort((a, b) => b.pattern.length - a.pattern.length || Number(b.allow) - Number(a.allow));
  return { rules, crawlDelay };
}

function compiled(policy: RobotsPolicy): CompiledPolicy {
  const cached = compiledCache.get(policy);
  if (cached) return cached;
  const groupsByAgent = new Map<string, RobotsGroup[]>();
  for (const group of policy.groups) {
    for (const agent of group.agents) {
      if (agent === '') continue;
      const list = groupsByAgent.get(agent);
      if (list) list.push(group);
      else groupsByAgent.set(agent, [group]);
    }
  }
  const byAgent = new Map<string, CompiledGroupSet>();
  let global: CompiledGroupSet | undefined;
  for (const [agent, groups] of groupsByAgent) {
    if (agent === '*') global = combine(groups);
    else byAgent.set(agent, combine(groups));
  }
  const result: CompiledPolicy = { byAgent, global };
  compiledCache.set(policy, result);
  return result;
}

function selectGroups(policy: RobotsPolicy, userAgent: string): CompiledGroupSet | undefined {
  const c = compiled(policy);
  const token = productToken(userAgent);
  return (token === '' ? undefined : c.byAgent.get(token)) ?? c.global;
}

const RELATIVE_BASE = 'http://robots.invalid/';

/** Path + query of a URL as sent in a request (fragment dropped; a bare `?` kept). */
function pathAndQuery(url: URL): string {
  const href = url.href;
  const hash = href.indexOf('#');
  const noFragment = hash >= 0 ? href.slice(0, hash) : href;
  // After serialisation `?` cannot occur in the scheme, userinfo, host or path: the first one starts the query.
  const query = noFragment.indexOf('?');
  return url.pathname + (query >= 0 ? noFragment.slice(query) : '');
}

function toUrl(url: string | URL): URL | undefined {
  if (typeof url !== 'string') return url;
  return URL.parse(url) ?? URL.parse(url, RELATIVE_BASE) ?? undefined;
}

/**
 * True when the crawler with this User-Agent (full header or bare product token) may fetch the URL.
 * A relative reference (`/path?q`) is accepted as a path; an unparseable URL is not allowed.
 */
export function isAllowed(policy: RobotsPolicy, userAgent: string, url: string | URL): boolean {
  const parsed = toUrl(url);
  if (!parsed) return false;
  if (parsed.pathname === '/robots.txt') return true;
  const set = selectGroups(policy, userAgent);
  if (!set || set.rules.length === 0) return true;
  const path = canonicalizePath(pathAndQuery(parsed));
  for (const rule of set.rules) {
    if (matchesPattern(rule.pattern, path)) return rule.allow;
  }
  return true;
}

/** Crawl-delay in seconds (fractions allowed) of the group that applies to this User-Agent, if any. */
export function crawlDelaySeconds(policy: RobotsPolicy, userAgent: string): number | undefined {
  return selectGroups(policy, userAgent)?.crawlDelay;
}

/** The `Sitemap:` URLs, as written, in file order (they belong to no group). */
export function sitemaps(policy: RobotsPolicy): string[] {
  return [...policy.sitemaps];
}

/** For a robots.txt answered with 4xx: no restrictions. */
export const ALLOW_ALL: RobotsPolicy = parseRobots('');

/** For a robots.txt answered with 5xx or unreachable: nothing but /robots.txt itself may be fetched. */
export const DISALLOW_ALL: RobotsPolicy = parseRobots('User-agent: *\nDisallow: /\n');
