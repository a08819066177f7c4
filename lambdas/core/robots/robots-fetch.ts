/**
 * The claimer's request for robots.txt (robots-gate.ts, "Fetching" and "Statuses" in its module
 * comment): GET /robots.txt through the crawl's fetcher, redirects followed by hand with each hop
 * through its host's slot, and the body decoded and parsed under the 512 KiB cap. It says what the
 * chain came to; what is stored, cached and returned for it is the gate's. Apart from the gate
 * because it talks to the network only, never to the RobotsStore.
 */

import {
  decodeContent,
  describeError,
  FatalError,
  headerValue,
  isCrawlError,
  OutOfTime,
  PermanentError,
  RetryableError,
  retryAfterMs,
} from '../base/index.ts';
import {
  type CrawlConfig,
  type HostSlots,
  hostKey,
  type PageFetcher,
  type PageResponse,
  reservedGapMs,
  slotPlan,
} from '../crawl/index.ts';
import { ALLOW_ALL, DEFAULT_MAX_ROBOTS_BYTES, parseRobots, type RobotsPolicy } from './robots.ts';

export const MAX_ROBOTS_REDIRECTS = 5;
/** Bytes of robots.txt read (RFC 9309: at least 500 KiB). */
export const MAX_ROBOTS_BYTES = DEFAULT_MAX_ROBOTS_BYTES;

/** @internal What a robots.txt request needs of the gate's check (robots-gate.ts). */
export interface RobotsFetchContext {
  readonly config: CrawlConfig;
  readonly robotsUrl: URL;
  readonly deps: {
    readonly slots: HostSlots;
    readonly fetcher: PageFetcher;
    readonly now: () => number;
  };
  readonly maxWaitMs: number;
  readonly sleep: (ms: number) => Promise<void>;
}

/** @internal What the request chain for robots.txt came to. */
export type RobotsChainOutcome =
  | { kind: 'policy'; policy: RobotsPolicy; originRequestAt: number | undefined }
  | { kind: 'unreachable'; reason: string; retryAfterMs?: number }
  /** The origin's own robots.txt request was refused by the address guard (its message). */
  | { kind: 'blocked'; refusal: string }
  /** The caller's deadline came before the next request could start: not a failed attempt. */
  | { kind: 'out-of-time' };

/** @internal GET /robots.txt, following up to 5 redirects by hand, each hop through a slot of the visit. */
export async function fetchRobotsChain(ctx: RobotsFetchContext): Promise<RobotsChainOutcome> {
  const { deps, config } = ctx;
  const originHost = hostKey(ctx.robotsUrl);
  let originRequestAt: number | undefined;
  const allowAll = (): RobotsChainOutcome => ({ kind: 'policy', policy: ALLOW_ALL, originRequestAt });
  let target = ctx.robotsUrl;
  for (let hop = 0; ; hop += 1) {
    const host = hostKey(target);
    if (hop > 0) {
      const busy = await waitForHopSlot(ctx, target);
      if (busy !== undefined) return busy;
    }
    if (host === originHost) originRequestAt = deps.now();

    let response: PageResponse;
    try {
      response = await deps.fetcher.fetch({
        url: target,
        userAgent: config.userAgent,
        allowPrivate: config.allowPrivate,
        limits: { ...config.limits, maxBodyBytes: MAX_ROBOTS_BYTES },
      });
    } catch (error) {
      return requestFailure(error, hop, config, allowAll);
    }

    const status = response.status;
    if (status >= 200 && status < 300) return bodyOutcome(response, originRequestAt);
    if (status >= 300 && status < 400) {
      const next = redirectTarget(response, target);
      if (!next) return allowAll();
      if (hop >= MAX_ROBOTS_REDIRECTS) return allowAll(); // more than 5 redirects: "unavailable"
      next.hash = '';
      target = next;
      continue;
    }
    if (status === 429 || status >= 500 || status < 200) return retryLater(ctx, response);
    return allowAll(); // 4xx other than 429, including 401 and 403
  }
}

/** Waits for a redirect hop's slot of the visit; a slot too far away makes the chain unreachable. */
async function waitForHopSlot(ctx: RobotsFetchContext, target: URL): Promise<RobotsChainOutcome | undefined> {
  const { deps, config } = ctx;
  const now = deps.now();
  const slot = await deps.slots.reserve(reservedGapMs(config.delayMs), now);
  const plan = slotPlan(slot, now, { maxWaitMs: ctx.maxWaitMs + Math.max(0, config.delayMs) });
  if (plan.kind === 'defer') {
    return {
      kind: 'unreachable',
      reason: `redirect to ${target.host}: no politeness slot before ${new Date(slot).toISOString()}`,
      retryAfterMs: slot - now,
    };
  }
  if (plan.kind === 'wait') await ctx.sleep(plan.ms);
  return undefined;
}

/** What a request that threw comes to; anything but a crawl error (or a FatalError) is rethrown. */
function requestFailure(
  error: unknown,
  hop: number,
  config: CrawlConfig,
  allowAll: () => RobotsChainOutcome,
): RobotsChainOutcome {
  if (error instanceof OutOfTime) {
    // A chain that started and cannot end in this invocation may never fit in one: it counts
    // as a failed attempt (backoff, at most MAX_ROBOTS_FAILURES), so it cannot loop for ever.
    if (hop > 0)
      return {
        kind: 'unreachable',
        reason: `redirect ${hop} not followed before the invocation's deadline`,
      };
    return { kind: 'out-of-time' };
  }
  if (error instanceof PermanentError && error.outcome === 'blocked') {
    // The origin itself is refused: so are all its URLs. A refused redirect target is a
    // redirect that cannot be followed: robots.txt unavailable, allow all (RFC 9309 §2.3.1.3).
    if (hop === 0) return { kind: 'blocked', refusal: describeError(error) };
    return allowAll();
  }
  if (isCrawlError(error) && !(error instanceof FatalError)) {
    const retryAfter =
      error instanceof RetryableError && error.retryAfterMs !== undefined
        ? Math.min(error.retryAfterMs, config.maxRetryAfterMs)
        : undefined;
    return {
      kind: 'unreachable',
      reason: `${error.code}: ${describeError(error)}`,
      ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }),
    };
  }
  throw error;
}

/** A 2xx: its policy, unless the body was cut by the deadline or cannot be decoded. */
async function bodyOutcome(
  response: PageResponse,
  originRequestAt: number | undefined,
): Promise<RobotsChainOutcome> {
  if (response.truncated === 'time') {
    return { kind: 'unreachable', reason: 'timeout: the body did not arrive within the deadline' };
  }
  const policy = await policyFromBody(response);
  if (policy === undefined) {
    return { kind: 'unreachable', reason: 'robots.txt content-encoding cannot be decoded' };
  }
  return { kind: 'policy', policy, originRequestAt };
}

/** A 3xx's http(s) Location, resolved against the request's URL; null when there is none. */
function redirectTarget(response: PageResponse, target: URL): URL | null {
  const location = headerValue(response.headers, 'location')?.trim();
  const next = location ? URL.parse(location, target.href) : null;
  if (!next || (next.protocol !== 'http:' && next.protocol !== 'https:')) return null;
  return next;
}

/** A 429 or 5xx (or a status below 200): unreachable, its Retry-After pushed onto the visit's slots. */
async function retryLater(ctx: RobotsFetchContext, response: PageResponse): Promise<RobotsChainOutcome> {
  const { deps, config } = ctx;
  const now = deps.now();
  // Honoured up to the crawl's cap: a server cannot park the host (and the crawl) for years.
  const asked = retryAfterMs(headerValue(response.headers, 'retry-after'), now);
  const after = asked === undefined ? undefined : Math.min(asked, config.maxRetryAfterMs);
  if (after !== undefined && after > 0) await deps.slots.pushBack(now + after);
  return {
    kind: 'unreachable',
    reason: `HTTP ${response.status}`,
    ...(after === undefined ? {} : { retryAfterMs: after }),
  };
}

/** Undoes Content-Encoding and parses at most 512 KiB; a line cut by any cap is dropped. */
async function policyFromBody(response: PageResponse): Promise<RobotsPolicy | undefined> {
  const decoded = await decodeContent(
    response.body,
    headerValue(response.headers, 'content-encoding'),
    MAX_ROBOTS_BYTES + 1,
  );
  if (decoded.error !== undefined && decoded.bytes.length === 0 && response.body.length > 0) return undefined;
  const bytes = decoded.bytes;
  if (bytes.length > MAX_ROBOTS_BYTES) return parseRobots(bytes, { maxBytes: MAX_ROBOTS_BYTES });
  const cut = decoded.truncated || decoded.error !== undefined || response.truncated === 'length';
  if (!cut) return parseRobots(bytes, { maxBytes: MAX_ROBOTS_BYTES });
  // Make the parser see more than it may read, so that it drops the cut last line.
  const padded = new Uint8Array(bytes.length + 1);
  padded.set(bytes);
  padded[bytes.length] = 0x0a;
  return parseRobots(padded, { maxBytes: bytes.length });
}
