/**
 * The per-container cache of robots.txt policies behind the gate (robots-gate.ts): a bounded LRU of
 * parsed policies (and of the address guard's refusals), and the one resolution in progress per
 * origin that concurrent checks in this container share. Apart from the gate because it holds no
 * I/O and no policy of its own: the gate decides what goes in and when it is used.
 */

import { type ADDRESS_BLOCKED, ROBOTS_LIMITS } from '../base/index.ts';
import type { RobotsPolicy } from './robots.ts';

/** A stored or cached policy is used for at most this long after it was fetched (RFC 9309 §2.4). */
export const ROBOTS_TTL_MS: number = ROBOTS_LIMITS.ttlMs;
export const DEFAULT_ROBOTS_CACHE_ENTRIES: number = ROBOTS_LIMITS.cacheEntries;

/**
 * @internal What one resolution of an origin's policy came to (shared by concurrent checks in a
 * container).
 */
export type RobotsResolution =
  | { kind: 'policy'; policy: RobotsPolicy }
  | { kind: 'defer'; untilMs: number; reason: string }
  | { kind: 'failed'; code: 'robots-unavailable' | typeof ADDRESS_BLOCKED; reason: string };

/** A parsed policy, or the address guard's refusal of the origin (robots-gate.ts, `failed`). */
type CacheEntry = { policy: RobotsPolicy; fetchedAt: number } | { refused: string; fetchedAt: number };

/**
 * Per-container cache of parsed policies: a bounded LRU keyed by crawl id and origin, an entry
 * valid until `fetchedAt + ttlMs` (24 h). It also lets concurrent checks of one origin in this
 * container share a single store read / robots.txt fetch.
 */
export class RobotsCache {
  readonly maxEntries: number;
  readonly ttlMs: number;
  readonly #entries = new Map<string, CacheEntry>();
  readonly #inflight = new Map<string, Promise<RobotsResolution>>();

  constructor(maxEntries = DEFAULT_ROBOTS_CACHE_ENTRIES, ttlMs = ROBOTS_TTL_MS) {
    this.maxEntries = Math.max(1, Math.floor(maxEntries));
    this.ttlMs = Math.min(ttlMs, ROBOTS_TTL_MS);
  }

  get size(): number {
    return this.#entries.size;
  }

  get(crawlId: string, origin: string, now: number): CacheEntry | undefined {
    const key = cacheKey(crawlId, origin);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (!(now - entry.fetchedAt < this.ttlMs)) return undefined;
    this.#entries.set(key, entry); // most recently used last
    return entry;
  }

  set(crawlId: string, origin: string, policy: RobotsPolicy, fetchedAt: number): void {
    this.#put(crawlId, origin, { policy, fetchedAt });
  }

  /** Remembers that the address guard refuses the origin (its reason), like a policy fetched then. */
  refuse(crawlId: string, origin: string, reason: string, at: number): void {
    this.#put(crawlId, origin, { refused: reason, fetchedAt: at });
  }

  #put(crawlId: string, origin: string, entry: CacheEntry): void {
    const key = cacheKey(crawlId, origin);
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }

  clear(): void {
    this.#entries.clear();
  }

  /** @internal The resolution in progress for this origin, if any. */
  inflight(crawlId: string, origin: string): Promise<RobotsResolution> | undefined {
    return this.#inflight.get(cacheKey(crawlId, origin));
  }

  /** @internal Runs `resolve` as the one resolution of this origin in this container. */
  async lead(
    crawlId: string,
    origin: string,
    resolve: () => Promise<RobotsResolution>,
  ): Promise<RobotsResolution> {
    const key = cacheKey(crawlId, origin);
    const promise = resolve();
    this.#inflight.set(key, promise);
    try {
      return await promise;
    } finally {
      if (this.#inflight.get(key) === promise) this.#inflight.delete(key);
    }
  }
}

function cacheKey(crawlId: string, origin: string): string {
  return `${crawlId}\u0000${origin}`;
}

export function createRobotsCache(
  maxEntries = DEFAULT_ROBOTS_CACHE_ENTRIES,
  ttlMs = ROBOTS_TTL_MS,
): RobotsCache {
  return new RobotsCache(maxEntries, ttlMs);
}
