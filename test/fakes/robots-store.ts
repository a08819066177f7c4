/**
 * Imitates the FrontierTable's robots.txt cache (lambdas/adapters/frontier-robots.ts, FrontierRobots)
 * in memory: the same claim condition (nobody's entry, a lapsed lease, an unavailable origin whose
 * retry time has come, a ready policy older than the max age), the same failure count, and a policy
 * too large for an item read back as disallow-all. Checked against FrontierRobots on dynalite by
 * test/integration/port-contracts.test.ts (robotsStoreContract in test/contracts/robots-store.ts).
 */
import { gzipSync } from 'node:zlib';
import { INLINE_POLICY_MAX_BYTES, OVERSIZED_POLICY_JSON } from '../../lambdas/adapters/frontier-robots.ts';
import { ROBOTS_LIMITS } from '../../lambdas/core/base/index.ts';
import type { RobotsState, RobotsStore } from '../../lambdas/core/crawl/index.ts';

/** The robots item as stored; attributes the adapter keeps but `read` does not show are kept too. */
export interface RobotsItem {
  st: 'fetching' | 'ready' | 'unavailable';
  lease: number;
  policyJson: string;
  fetchedAt: number;
  retryAt: number;
  failures: number;
}

/** Every call yields once, as a network call does: concurrent callers interleave between calls. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class MemoryRobotsStore implements RobotsStore {
  readonly items = new Map<string, RobotsItem>();
  readonly calls = { read: 0, claim: 0, saveReady: 0, saveUnavailable: 0 };
  /** The lease end of every claim granted, in order. */
  readonly leases: number[] = [];
  readonly #maxAgeMs: number;

  /** `maxAgeMs`: the adapter's `robotsMaxAgeMs` (default: a day, ROBOTS_LIMITS.ttlMs). */
  constructor(options: { maxAgeMs?: number } = {}) {
    this.#maxAgeMs = options.maxAgeMs ?? ROBOTS_LIMITS.ttlMs;
  }

  item(crawlId: string, origin: string): RobotsItem | undefined {
    return this.items.get(`${crawlId} ${origin}`);
  }

  async read(crawlId: string, origin: string): Promise<RobotsState> {
    this.calls.read += 1;
    await tick();
    const item = this.item(crawlId, origin);
    if (!item) return { state: 'missing' };
    if (item.st === 'ready')
      return { state: 'ready', policyJson: stored(item.policyJson), fetchedAt: item.fetchedAt };
    if (item.st === 'fetching') return { state: 'fetching', lease: item.lease };
    return { state: 'unavailable', retryAt: item.retryAt, failures: item.failures };
  }

  async claim(crawlId: string, origin: string, leaseMs: number, now: number): Promise<boolean> {
    this.calls.claim += 1;
    await tick();
    const item = this.item(crawlId, origin);
    const claimable =
      !item ||
      (item.st === 'fetching' && item.lease < now) ||
      (item.st === 'unavailable' && item.retryAt <= now) ||
      (item.st === 'ready' && item.fetchedAt <= now - this.#maxAgeMs);
    if (!claimable) return false;
    this.leases.push(now + leaseMs);
    this.items.set(`${crawlId} ${origin}`, {
      st: 'fetching',
      lease: now + leaseMs,
      policyJson: item?.policyJson ?? '',
      fetchedAt: item?.fetchedAt ?? 0,
      retryAt: item?.retryAt ?? 0,
      failures: item?.failures ?? 0,
    });
    return true;
  }

  /** Unconditional, like the adapter's: the claim only decides who fetches. Failures start over. */
  async saveReady(crawlId: string, origin: string, policyJson: string, fetchedAt: number): Promise<void> {
    this.calls.saveReady += 1;
    await tick();
    this.items.set(`${crawlId} ${origin}`, {
      st: 'ready',
      lease: 0,
      policyJson,
      fetchedAt,
      retryAt: 0,
      failures: 0,
    });
  }

  async saveUnavailable(crawlId: string, origin: string, retryAt: number): Promise<number> {
    this.calls.saveUnavailable += 1;
    await tick();
    const item = this.item(crawlId, origin);
    const failures = (item?.failures ?? 0) + 1;
    this.items.set(`${crawlId} ${origin}`, {
      st: 'unavailable',
      lease: 0,
      policyJson: item?.policyJson ?? '',
      fetchedAt: item?.fetchedAt ?? 0,
      retryAt,
      failures,
    });
    return failures;
  }
}

/** What the adapter reads back: the policy, unless even gzipped it is too large for an item. */
function stored(policyJson: string): string {
  if (Buffer.byteLength(policyJson, 'utf8') <= INLINE_POLICY_MAX_BYTES) return policyJson;
  return gzipSync(policyJson).byteLength <= INLINE_POLICY_MAX_BYTES ? policyJson : OVERSIZED_POLICY_JSON;
}
