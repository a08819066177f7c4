/**
 * The FrontierTable adapter (docs/frontier.md, docs/design/host-visits.md). `createFrontierStore`
 * returns one object that is the FrontierAdmission, the HostUrlStore (a host's URL items), the
 * HostVisits (host items, drained-host tallies) and the FrontierFinalizer; the RobotsStore is its
 * `robots` property, because RobotsStore and HostVisits have methods of other meanings.
 *
 * Item layout and attribute names: frontier-schema.ts. No transactions (dynalite has none): every
 * decision is one conditional write on one item.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  FrontierAdmission,
  FrontierFinalizer,
  HostUrlStore,
  HostVisits,
  RobotsStore,
} from '../core/crawl/index.ts';
import { FrontierCounters } from './frontier-counters.ts';
import { FrontierHosts } from './frontier-hosts.ts';
import { FrontierRobots } from './frontier-robots.ts';
import { type FrontierStoreOptions, resolveOptions } from './frontier-schema.ts';
import { FrontierUrls } from './frontier-urls.ts';

export { VISIT_GRACE_MS } from './frontier-hosts.ts';
export { INLINE_POLICY_MAX_BYTES, OVERSIZED_POLICY_JSON } from './frontier-robots.ts';
export { ConflictError, DEFAULT_TTL_SECONDS, type FrontierStoreOptions } from './frontier-schema.ts';

export interface FrontierStore extends FrontierAdmission, HostUrlStore, HostVisits, FrontierFinalizer {
  /** The shared robots.txt cache (a property: its `claim` and `read` are its own). */
  robots: RobotsStore;
}

export function createFrontierStore(
  dynamodb: DynamoDBClient,
  table: string,
  options?: FrontierStoreOptions,
): FrontierStore {
  const resolved = resolveOptions(options);
  const hosts = new FrontierHosts(dynamodb, table, resolved);
  const counters = new FrontierCounters(dynamodb, table, resolved, hosts);
  const urls = new FrontierUrls(dynamodb, table, resolved);
  return {
    // FrontierAdmission
    admit: (crawlId, parentKey, candidates, options) => urls.admit(crawlId, parentKey, candidates, options),
    reservePages: (crawlId, wanted, maxPages) => counters.reservePages(crawlId, wanted, maxPages),
    promote: (crawlId, candidates) => urls.promote(crawlId, candidates),
    addQueued: (crawlId, count) => counters.addQueued(crawlId, count),
    // HostUrlStore
    page: (crawlId, host, after, limit) => urls.page(crawlId, host, after, limit),
    get: (crawlId, host, keys) => urls.get(crawlId, host, keys),
    postpone: (crawlId, host, key, attempts, retryAt) => urls.postpone(crawlId, host, key, attempts, retryAt),
    // HostVisits
    wake: (crawlId, host, now) => hosts.wake(crawlId, host, now),
    unwake: (crawlId, host, ticket) => hosts.unwake(crawlId, host, ticket),
    confirmSent: (crawlId, host, ticket) => hosts.confirmSent(crawlId, host, ticket),
    acquire: (crawlId, host, holder, leaseUntil, now, ticket) =>
      hosts.acquire(crawlId, host, holder, leaseUntil, now, ticket),
    release: (crawlId, host, holder, state) => hosts.release(crawlId, host, holder, state),
    drain: (crawlId, host, holder, wakeSeen, tally, pace) =>
      hosts.drain(crawlId, host, holder, wakeSeen, tally, pace),
    anyActive: (crawlId) => hosts.anyActive(crawlId),
    doneTotals: (crawlId) => hosts.doneTotals(crawlId),
    awaiting: (crawlId) => hosts.awaiting(crawlId),
    hurry: (crawlId, host, now) => hosts.hurry(crawlId, host, now),
    holdForRender: (crawlId, host, holder, hold) => hosts.holdForRender(crawlId, host, holder, hold),
    renderHold: (crawlId, host) => hosts.renderHold(crawlId, host),
    endRender: (crawlId, host, token, nextAt, now) => hosts.endRender(crawlId, host, token, nextAt, now),
    // FrontierFinalizer
    finalize: (crawlId, entry) => urls.finalize(crawlId, entry),
    repoint: (crawlId, url, key, rid, part) => urls.repoint(crawlId, url, key, rid, part),
    addCounters: (crawlId, deltas) => counters.addCounters(crawlId, deltas),
    readCounters: (crawlId) => counters.readCounters(crawlId),
    confirmCompletion: (crawlId, now, partsWritten) => counters.confirmCompletion(crawlId, now, partsWritten),
    robots: new FrontierRobots(dynamodb, table, resolved),
  };
}
