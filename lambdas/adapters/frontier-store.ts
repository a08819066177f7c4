/**
 * The FrontierTable adapter (docs/frontier.md). `createFrontierStore` returns one object that is the
 * FrontierWriter, the HostSlots and the FrontierFinalizer; the RobotsStore is its `robots` property,
 * because FrontierWriter and RobotsStore both name a method `claim`.
 *
 * Item layout and attribute names: frontier-schema.ts. No transactions (dynalite has none): every
 * decision is one conditional write on one item.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { FrontierFinalizer, FrontierWriter, HostSlots, RobotsStore } from '../core/ports.ts';
import { FrontierCounters } from './frontier-counters.ts';
import { FrontierHostSlots } from './frontier-host-slots.ts';
import { FrontierRobots } from './frontier-robots.ts';
import { type FrontierStoreOptions, resolveOptions } from './frontier-schema.ts';
import { FrontierUrls } from './frontier-urls.ts';

export type { UrlTally } from './frontier-counters.ts';
export { INLINE_POLICY_MAX_BYTES, OVERSIZED_POLICY_JSON } from './frontier-robots.ts';
export { ConflictError, DEFAULT_TTL_SECONDS, type FrontierStoreOptions } from './frontier-schema.ts';

export interface FrontierStore extends FrontierWriter, HostSlots, FrontierFinalizer {
  /** The shared robots.txt cache (a property: its `claim` is not the URL claim). */
  robots: RobotsStore;
}

export function createFrontierStore(
  dynamodb: DynamoDBClient,
  table: string,
  options?: FrontierStoreOptions,
): FrontierStore {
  const resolved = resolveOptions(options);
  const counters = new FrontierCounters(dynamodb, table, resolved);
  const urls = new FrontierUrls(dynamodb, table, resolved, counters);
  const slots = new FrontierHostSlots(dynamodb, table, resolved);
  return {
    // FrontierWriter
    admit: (crawlId, parentKey, candidates) => urls.admit(crawlId, parentKey, candidates),
    reservePages: (crawlId, wanted, maxPages) => counters.reservePages(crawlId, wanted, maxPages),
    claim: (crawlId, url, leaseMs, now) => urls.claim(crawlId, url, leaseMs, now),
    release: (crawlId, key, unsentLinks) => urls.release(crawlId, key, unsentLinks),
    postpone: (crawlId, key, attempts, retryAt) => urls.postpone(crawlId, key, attempts, retryAt),
    addQueued: (crawlId, count) => counters.addQueued(crawlId, count),
    // HostSlots
    reserve: (crawlId, host, delayMs, now) => slots.reserve(crawlId, host, delayMs, now),
    pushBack: (crawlId, host, notBefore) => slots.pushBack(crawlId, host, notBefore),
    pausedUntil: (crawlId, host) => slots.pausedUntil(crawlId, host),
    // FrontierFinalizer
    finalize: (crawlId, entry) => urls.finalize(crawlId, entry),
    repoint: (crawlId, key, rid, part) => urls.repoint(crawlId, key, rid, part),
    addCounters: (crawlId, deltas) => counters.addCounters(crawlId, deltas),
    readCounters: (crawlId) => counters.readCounters(crawlId),
    confirmCompletion: (crawlId, now, partsWritten) => counters.confirmCompletion(crawlId, now, partsWritten),
    robots: new FrontierRobots(dynamodb, table, resolved),
  };
}
