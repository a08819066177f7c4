/**
 * The robots.txt gate (docs/frontier.md, "robots.txt"): may this URL be fetched now, and with which
 * Crawl-delay? robots.txt is fetched once per (crawl, origin) by whichever visit claims it in the
 * RobotsStore, at its host's pace, and shared through the store (and a small per-container cache) with
 * every other visit.
 *
 * Verdicts:
 * - `allowed` (with the group's Crawl-delay, if any) / `disallowed` (with a reason): decided by
 *   `isAllowed(policy, config.userAgent, url)`. `respectRobots: false` and `/robots.txt` itself are
 *   always allowed (the latter without any I/O); so is a non-http(s) URL (the fetcher refuses it).
 * - `defer` until `untilMs`: robots.txt is being fetched by another visit (come back a few seconds
 *   after its request goes out), is `unavailable` until `retryAt`, or its host's next slot is more
 *   than `maxWaitMs` away (nothing is claimed then). A visit hands its whole host back until then
 *   (host-visit.ts): no URL of the host is fetched before its robots.txt is known.
 * - `failed`: `robots-unavailable` after 4 failed attempts (5xx, 429, timeouts, network errors);
 *   `address-blocked` when the origin itself is refused by the address guard (chosen over letting
 *   the PermanentError propagate, so the gate never throws for what a host does). A refusal is not a
 *   failed attempt: it is never retried. An IP-literal host the guard refuses by its spelling alone
 *   (without --allow-private) is refused before any I/O: no claim, no slot, no request. A host
 *   refused when robots.txt is requested (a name that resolves to a refused address, or a host-local
 *   address on Lambda) has the refusal stored in the origin's place (`ready` with a refusal instead
 *   of a policy, kept like a policy), so every other URL of the origin, in any visit, ends
 *   `address-blocked` at once instead of waiting on the claim's lease.
 *
 * Slots. `deps.slots` is, in a visit, the visit's own pacer: only the holder of the host's lease
 * sends to the host, so its slots are kept in memory and nobody else reserves them.
 *
 * Fetching (the claimer). The host slot is reserved first (with the crawl's `delayMs`); a slot more
 * than `maxWaitMs` away defers the caller without a claim (in a visit, which waits for its host's
 * pace before each URL, the slot is now). Then the origin is claimed with a lease of (slot wait +
 * fetch budget), so a claim outlives the wait for its slot, and the slot is waited for.
 * The request: GET /robots.txt through the crawl's fetcher (the address guard applies to every hop),
 * at most 512 KiB (`maxBodyBytes`; Content-Encoding undone with the same cap, a line cut by the cap
 * is dropped), up to 5 redirects followed by hand, cross-origin allowed, each hop through a slot of
 * `deps.slots` for its host (waited for up to `maxWaitMs + delayMs`; a busier hop host counts as
 * unreachable). A visit's pacer is its own host's, so a hop to another host is paced with the visit's
 * host, not by the other host's visit.
 * Statuses (RFC 9309 §2.3.1): 2xx → parse; 4xx (401 and 403 too), more than 5 redirects, or a 3xx
 * without a usable Location → allow all; 5xx, 429 (Retry-After honoured and pushed onto the host's
 * slot), timeouts (also a body cut by the deadline), network and TLS errors, undecodable content →
 * `saveUnavailable` with `retryAt = now + 30 s · 2^(earlier failures)` and defer. After a fetch the
 * host's next slot is pushed back to honour a Crawl-delay above `delayMs`. The fetcher may refuse a
 * request with `OutOfTime` (the visit's deadline): robots.txt itself then saves nothing and counts
 * no failure (defer until the claim's lease ends); a redirect hop counts as unreachable, since a
 * chain too slow for one invocation would otherwise be started again for ever.
 *
 * Store expectations (the adapter's conditional writes): `claim` succeeds when the item is missing,
 * `fetching` with an expired lease, `unavailable` with `retryAt <= now`, or `ready` but older than
 * 24 h; it sets `lease = now + leaseMs` and keeps `failures`. `saveUnavailable` increments and
 * returns `failures`; `saveReady` resets it. If the store cannot re-claim a stale `ready` item, the
 * stale policy is used rather than nothing. A fetched policy is cached before it is saved, and its
 * save is retried (retryStep). Store errors propagate (the visit fails: its host is released and its
 * message retried).
 *
 * Beside it: the per-container cache (robots-cache.ts), the request chain (robots-fetch.ts) and the
 * reading of stored policies (robots-policy-json.ts).
 */

import { ADDRESS_BLOCKED, backoffMs, RETRY_BACKOFF, retryStep } from '../base/index.ts';
import {
  type CrawlConfig,
  DEFAULT_MAX_WAIT_MS,
  effectiveDelayMs,
  type HostSlots,
  type PageFetcher,
  type RobotsState,
  type RobotsStore,
  reservedGapMs,
  slotPlan,
} from '../crawl/index.ts';
import { literalHostRefusal } from '../urls/index.ts';
import { crawlDelaySeconds, isAllowed, productToken, type RobotsPolicy } from './robots.ts';
import { ROBOTS_TTL_MS, type RobotsCache, type RobotsResolution } from './robots-cache.ts';
import { fetchRobotsChain, MAX_ROBOTS_REDIRECTS } from './robots-fetch.ts';
import { policyFromJson, refusalFromJson } from './robots-policy-json.ts';

/** The 4th failed fetch ends the origin's URLs as `failed` / `robots-unavailable`. */
export const MAX_ROBOTS_FAILURES = 4;
/** How long a visit waits for another visit's robots.txt fetch before looking again. */
export const ROBOTS_POLL_MS = 5_000;

export type RobotsVerdict =
  | { kind: 'allowed'; crawlDelaySeconds?: number }
  | { kind: 'disallowed'; reason: string }
  | { kind: 'defer'; untilMs: number; reason: string }
  | { kind: 'failed'; code: 'robots-unavailable' | typeof ADDRESS_BLOCKED; reason: string };

export interface RobotsGateDeps {
  store: RobotsStore;
  slots: HostSlots;
  fetcher: PageFetcher;
  crawlId: string;
  now: () => number;
  cache?: RobotsCache;
  /** Longest in-function wait for a slot; default 2000 ms (as for pages). */
  maxWaitMs?: number;
  /** Default: setTimeout. */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * How long a robots.txt claim must last beyond its slot: every request of the redirect chain with
 * its deadline and its wait for a slot.
 */
export function robotsFetchBudgetMs(
  config: Pick<CrawlConfig, 'delayMs' | 'limits'>,
  maxWaitMs = DEFAULT_MAX_WAIT_MS,
): number {
  return (
    (MAX_ROBOTS_REDIRECTS + 1) * (config.limits.totalTimeoutMs + maxWaitMs + Math.max(0, config.delayMs))
  );
}

interface GateContext {
  readonly url: URL;
  readonly config: CrawlConfig;
  readonly origin: string;
  readonly robotsUrl: URL;
  readonly deps: RobotsGateDeps;
  readonly maxWaitMs: number;
  readonly budgetMs: number;
  readonly sleep: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Decides whether `url` may be fetched under robots.txt; see the module comment for the contract. */
export async function checkRobots(
  url: URL,
  config: CrawlConfig,
  deps: RobotsGateDeps,
): Promise<RobotsVerdict> {
  if (!config.respectRobots) return { kind: 'allowed' };
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { kind: 'allowed' };
  // Refused by its spelling: nothing to claim, wait for or fetch (a refusal is never retried).
  const literal = config.allowPrivate ? undefined : literalHostRefusal(url.hostname);
  if (literal !== undefined) return refusedVerdict(literal);
  const origin = url.origin;
  const cache = deps.cache;
  const cached = cache?.get(deps.crawlId, origin, deps.now());
  if (cached)
    return 'refused' in cached ? refusedVerdict(cached.refused) : decide(cached.policy, url, config);
  if (url.pathname === '/robots.txt') return { kind: 'allowed' };

  const maxWaitMs = deps.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  const ctx: GateContext = {
    url,
    config,
    origin,
    robotsUrl: new URL('/robots.txt', origin),
    deps,
    maxWaitMs,
    budgetMs: robotsFetchBudgetMs(config, maxWaitMs),
    sleep: deps.sleep ?? defaultSleep,
  };
  if (cache) {
    const shared = cache.inflight(deps.crawlId, origin);
    if (shared) return verdictFor(await shared, ctx);
    return verdictFor(await cache.lead(deps.crawlId, origin, () => resolve(ctx)), ctx);
  }
  return verdictFor(await resolve(ctx), ctx);
}

/** The verdict for an origin the address guard refuses; `refusal` is the guard's message. */
function refusedVerdict(refusal: string): Extract<RobotsVerdict, { kind: 'failed' }> {
  return { kind: 'failed', code: ADDRESS_BLOCKED, reason: `${ADDRESS_BLOCKED}: ${refusal}` };
}

function decide(policy: RobotsPolicy, url: URL, config: CrawlConfig): RobotsVerdict {
  if (isAllowed(policy, config.userAgent, url)) {
    const delay = crawlDelaySeconds(policy, config.userAgent);
    return delay === undefined ? { kind: 'allowed' } : { kind: 'allowed', crawlDelaySeconds: delay };
  }
  const agent = productToken(config.userAgent) || config.userAgent;
  return {
    kind: 'disallowed',
    reason: `robots.txt of ${url.origin} disallows ${url.pathname}${url.search} for ${agent}`,
  };
}

/** Turns a resolution (this check's own, or one it joined in this container) into the URL's verdict. */
function verdictFor(resolution: RobotsResolution, ctx: GateContext): RobotsVerdict {
  switch (resolution.kind) {
    case 'policy':
      return decide(resolution.policy, ctx.url, ctx.config);
    case 'failed':
    case 'defer':
      return resolution;
  }
}

async function resolve(ctx: GateContext): Promise<RobotsResolution> {
  const state = await ctx.deps.store.read(ctx.deps.crawlId, ctx.origin);
  return fromState(state, ctx, true);
}

function poll(ctx: GateContext, why: string): RobotsResolution {
  return {
    kind: 'defer',
    untilMs: ctx.deps.now() + ROBOTS_POLL_MS,
    reason: `robots.txt of ${ctx.origin} ${why}`,
  };
}

async function fromState(state: RobotsState, ctx: GateContext, mayClaim: boolean): Promise<RobotsResolution> {
  const { deps, origin } = ctx;
  const now = deps.now();
  switch (state.state) {
    case 'ready': {
      const refused = refusalFromJson(state.policyJson);
      if (refused !== undefined && now - state.fetchedAt < ROBOTS_TTL_MS) {
        deps.cache?.refuse(deps.crawlId, origin, refused, state.fetchedAt);
        return refusedVerdict(refused);
      }
      const policy = policyFromJson(state.policyJson);
      if (policy && now - state.fetchedAt < ROBOTS_TTL_MS) {
        deps.cache?.set(deps.crawlId, origin, policy, state.fetchedAt);
        return { kind: 'policy', policy };
      }
      // Older than 24 h (or unreadable): fetch it again; a stale policy in hand beats waiting.
      if (!mayClaim) return policy ? { kind: 'policy', policy } : poll(ctx, 'is being fetched');
      return acquire(ctx, 0, policy);
    }
    case 'fetching': {
      if (state.lease > now) {
        // The claimer's request goes out at (lease - budget); look again a little after that.
        const until = Math.min(state.lease, Math.max(now, state.lease - ctx.budgetMs) + ROBOTS_POLL_MS);
        return {
          kind: 'defer',
          untilMs: until,
          reason: `robots.txt of ${origin} is being fetched by another task`,
        };
      }
      return mayClaim ? acquire(ctx, 0) : poll(ctx, 'is being fetched');
    }
    case 'unavailable': {
      if (state.failures >= MAX_ROBOTS_FAILURES) {
        return {
          kind: 'failed',
          code: 'robots-unavailable',
          reason: `robots.txt of ${origin} unavailable after ${state.failures} attempts`,
        };
      }
      if (state.retryAt > now) {
        return {
          kind: 'defer',
          untilMs: state.retryAt,
          reason: `robots.txt of ${origin} unavailable (${state.failures} failed attempts); retried at ${new Date(state.retryAt).toISOString()}`,
        };
      }
      return mayClaim ? acquire(ctx, state.failures) : poll(ctx, 'is being fetched');
    }
    case 'missing':
      return mayClaim ? acquire(ctx, 0) : poll(ctx, 'is being fetched');
  }
}

/** Reserve a slot, claim the origin with a lease that outlives it, fetch. */
async function acquire(
  ctx: GateContext,
  priorFailures: number,
  stale?: RobotsPolicy,
): Promise<RobotsResolution> {
  const { deps, config, origin } = ctx;
  const reservedAt = deps.now();
  const slot = await deps.slots.reserve(reservedGapMs(config.delayMs), reservedAt);
  const now = deps.now();
  // Not claimed for a slot this far away: a claim held while away would hold every other check back.
  if (slotPlan(slot, now, { maxWaitMs: ctx.maxWaitMs }).kind === 'defer')
    return {
      kind: 'defer',
      untilMs: slot,
      reason: `robots.txt of ${origin} is fetched at the host's next politeness slot`,
    };
  const leaseMs = Math.max(slot, now) - now + ctx.budgetMs;
  const claimed = await deps.store.claim(deps.crawlId, origin, leaseMs, now);
  if (!claimed) {
    // Someone else got there first: see what they left (without claiming again).
    const again = await deps.store.read(deps.crawlId, origin);
    if (
      again.state === 'ready' &&
      policyFromJson(again.policyJson) === undefined &&
      refusalFromJson(again.policyJson) === undefined
    ) {
      // An unreadable stored policy (a bug, version skew) that the store will not hand out: repair it.
      return fetchAt(ctx, slot, 0);
    }
    const resolution = await fromState(again, ctx, false);
    if (resolution.kind === 'defer' && stale) return { kind: 'policy', policy: stale };
    return resolution;
  }
  return fetchAt(ctx, slot, priorFailures);
}

/** The claimer's part: wait for the slot (at most `maxWaitMs` away), fetch, store. */
async function fetchAt(ctx: GateContext, slot: number, priorFailures: number): Promise<RobotsResolution> {
  const { deps, config, origin } = ctx;
  const wait = slot - deps.now();
  if (wait > 0) await ctx.sleep(wait);

  const outcome = await fetchRobotsChain(ctx);
  const now = deps.now();
  switch (outcome.kind) {
    case 'policy': {
      // Cached first and saved with retries: a lost save is a second request for robots.txt, by
      // whichever visit claims the origin after this claim's lease (throttled crawl test).
      deps.cache?.set(deps.crawlId, origin, outcome.policy, now);
      const policyJson = JSON.stringify(outcome.policy);
      await retryStep(() => deps.store.saveReady(deps.crawlId, origin, policyJson, now));
      const delay = effectiveDelayMs(config, crawlDelaySeconds(outcome.policy, config.userAgent));
      if (delay.delayMs > config.delayMs && outcome.originRequestAt !== undefined) {
        await deps.slots.pushBack(outcome.originRequestAt + delay.delayMs);
      }
      return { kind: 'policy', policy: outcome.policy };
    }
    case 'blocked': {
      // Stored, so the origin's other URLs (in this visit or any other) end at once, not after the
      // claim's lease; never retried: the same guard would refuse the same request.
      deps.cache?.refuse(deps.crawlId, origin, outcome.refusal, now);
      const refusalJson = JSON.stringify({ refused: outcome.refusal });
      await retryStep(() => deps.store.saveReady(deps.crawlId, origin, refusalJson, now));
      return refusedVerdict(outcome.refusal);
    }
    case 'out-of-time':
      // Nothing is saved: the claim stands until its lease ends, and the origin is fetched again then.
      return {
        kind: 'defer',
        untilMs: now + ctx.budgetMs,
        reason: `robots.txt of ${origin} not fetched: the invocation's time ran out`,
      };
    case 'unreachable': {
      const backoff = backoffMs(priorFailures + 1, RETRY_BACKOFF.robotsUnreachable);
      const retryAt = now + Math.max(backoff, outcome.retryAfterMs ?? 0);
      const failures = await deps.store.saveUnavailable(deps.crawlId, origin, retryAt);
      if (failures >= MAX_ROBOTS_FAILURES) {
        return {
          kind: 'failed',
          code: 'robots-unavailable',
          reason: `robots.txt of ${origin} unavailable after ${failures} attempts (last: ${outcome.reason})`,
        };
      }
      return {
        kind: 'defer',
        untilMs: retryAt,
        reason: `robots.txt of ${origin} unreachable (${outcome.reason}); attempt ${failures} of ${MAX_ROBOTS_FAILURES} failed`,
      };
    }
  }
}
