/**
 * Politeness arithmetic (docs/frontier.md, "Politeness"). Pure: a host's pace lives in the visit that
 * holds the host (VisitPacer, the decision's HostSlots), in memory; this module only says how long the
 * gap is and what to do with a slot.
 *
 * - The gap between two requests to one host is the crawl's `delayMs`, or the robots.txt Crawl-delay
 *   when that is larger, capped at `maxCrawlDelayMs` (and the cap is reported, so it can be recorded).
 *   The cap only ever shortens what robots.txt asked for: a `delayMs` above the cap is kept.
 * - A slot is used at once, waited for in the function (up to `maxWaitMs`), or deferred. A visit waits
 *   for its host's next slot before it decides a URL, so a page's slot is deferred only when the
 *   decision itself pushed the pace (a robots.txt Crawl-delay above `maxWaitMs`): the visit then waits
 *   for it on its next round (host-visit.ts). A defer's `delaySeconds` and `notBefore` (the SQS delay
 *   and the held slot a task was re-sent with) date from per-URL scheduling; visits use neither.
 * - Slots are per host:port (`hostKey`), not per origin: http://a and https://a share one host.
 */
import type { CrawlConfig } from './crawl-config.ts';
import { AWS_LIMITS } from './limits.ts';

export const DEFAULT_MAX_WAIT_MS = 2_000;
/** SQS caps DelaySeconds at 15 minutes. */
export const MAX_SQS_DELAY_SECONDS: number = AWS_LIMITS.sqsMaxDelaySeconds;

export interface EffectiveDelay {
  /** Gap to keep between two requests to the host, in ms. */
  delayMs: number;
  /** True when robots.txt asked for more than `delayMs` (its Crawl-delay was above the cap). */
  capped: boolean;
}

/**
 * The per-host gap: `config.delayMs`, or the robots.txt Crawl-delay (seconds, fractions allowed)
 * when it is larger, capped at `config.maxCrawlDelayMs`.
 */
export function effectiveDelayMs(
  config: Pick<CrawlConfig, 'delayMs' | 'maxCrawlDelayMs'>,
  robotsCrawlDelaySeconds: number | undefined,
): EffectiveDelay {
  const base = Math.max(0, config.delayMs);
  const asked = robotsCrawlDelaySeconds;
  if (asked === undefined || Number.isNaN(asked) || asked <= 0) return { delayMs: base, capped: false };
  // Whole ms, rounded up, without float noise (1.1 s is 1100 ms, not 1101).
  const askedMs = Math.ceil(Math.round(asked * 1e6) / 1000);
  const delayMs = Math.max(base, Math.min(askedMs, Math.max(0, config.maxCrawlDelayMs)));
  return { delayMs, capped: askedMs > delayMs };
}

export type SlotPlan =
  | { kind: 'now' }
  | { kind: 'wait'; ms: number }
  | { kind: 'defer'; delaySeconds: number; notBefore: number };

export interface SlotPlanOptions {
  /** Longest wait spent inside the function; a slot further away is deferred. */
  maxWaitMs?: number;
  /** Cap on DelaySeconds (SQS: 900). */
  maxSqsDelaySeconds?: number;
}

/**
 * The gap actually reserved between two requests to a host: the delay plus a margin of 10 % (at most
 * 100 ms), so that scheduling jitter (a request leaving a little after its slot, the next exactly on
 * time) never brings two requests closer than the delay itself.
 */
export function reservedGapMs(delayMs: number): number {
  return delayMs + Math.min(100, Math.round(delayMs / 10));
}

/**
 * What to do with a reserved slot (epoch ms) at time `now`: go, wait `ms`, or defer (the slot is more
 * than `maxWaitMs` away; `delaySeconds` and `notBefore = slot` are what per-URL scheduling re-sent).
 */
export function slotPlan(slot: number, now: number, options: SlotPlanOptions = {}): SlotPlan {
  const maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  const maxDelay = options.maxSqsDelaySeconds ?? MAX_SQS_DELAY_SECONDS;
  const wait = slot - now;
  if (!(wait > 0)) return { kind: 'now' };
  if (wait <= maxWaitMs) return { kind: 'wait', ms: wait };
  // A message re-sent with this delay arrives at most maxWaitMs before the slot and waits the rest in
  // the function: one that arrived late (SQS delays are whole seconds, event sources batch) would
  // bunch up with its successors. Visits re-send nothing for a slot.
  const delaySeconds = Math.max(1, Math.min(maxDelay, Math.ceil((wait - maxWaitMs) / 1000)));
  return { kind: 'defer', delaySeconds, notBefore: slot };
}

/**
 * The politeness key of a URL: `host` or `host:port` as the WHATWG URL serialises it (lower-cased,
 * IDNA, a port equal to the scheme's default elided). Throws a TypeError for a string that is not
 * an absolute URL.
 */
export function hostKey(url: URL | string): string {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return parsed.host;
}

/** The host partition of a result that has no URL to speak of (an invalid task). */
export const NO_HOST = '-';

/** The host whose partition holds a URL item: `hostKey(url)`, or NO_HOST for what is not a URL with a host. */
export function frontierHost(url: string): string {
  try {
    return hostKey(url) || NO_HOST;
  } catch {
    return NO_HOST;
  }
}
