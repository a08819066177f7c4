/**
 * Politeness arithmetic (docs/frontier.md, "Politeness"). Pure: a host's pace lives in the visit that
 * holds the host (VisitPacer, the per-URL step's HostSlots), in memory; this module only says how long the
 * gap is and what to do with a slot.
 *
 * - The gap between two requests to one host is the crawl's `delayMs`, or the robots.txt Crawl-delay
 *   when that is larger, capped at `maxCrawlDelayMs` (and the cap is reported, so it can be recorded).
 *   The cap only ever shortens what robots.txt asked for: a `delayMs` above the cap is kept.
 * - A slot is used at once, waited for in the function (up to `maxWaitMs`), or deferred: the robots
 *   gate defers a robots.txt fetch whose slot is further away (robots-gate.ts). A visit waits for its
 *   host's pace itself before each request (host-visit.ts), a Crawl-delay just found included.
 * - Slots are per host:port (`hostKey`), not per origin: http://a and https://a share one host.
 */
import type { CrawlConfig } from './crawl-config.ts';

export const DEFAULT_MAX_WAIT_MS = 2_000;

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

export type SlotPlan = { kind: 'now' } | { kind: 'wait'; ms: number } | { kind: 'defer' };

export interface SlotPlanOptions {
  /** Longest wait spent inside the function; a slot further away is deferred. */
  maxWaitMs?: number;
}

/**
 * The gap actually reserved between two requests to a host: the delay plus a margin of 10 % (at most
 * 100 ms), so that scheduling jitter (a request leaving a little after its slot, the next exactly on
 * time) never brings two requests closer than the delay itself.
 */
export function reservedGapMs(delayMs: number): number {
  return delayMs + Math.min(100, Math.round(delayMs / 10));
}

/** What to do with a reserved slot (epoch ms) at time `now`: go, wait `ms`, or defer (more than `maxWaitMs` away). */
export function slotPlan(slot: number, now: number, options: SlotPlanOptions = {}): SlotPlan {
  const maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  const wait = slot - now;
  if (!(wait > 0)) return { kind: 'now' };
  if (wait <= maxWaitMs) return { kind: 'wait', ms: wait };
  return { kind: 'defer' };
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
