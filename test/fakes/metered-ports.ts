/**
 * The in-memory fakes of test/fakes/, each call described as the AWS requests its adapter makes
 * (lambdas/adapters/*), for the scale simulation (bench/scale.ts): the meter (aws-meter.ts) waits
 * their latency on the virtual clock, bills them and applies DynamoDB's partition throughput; then
 * the fake does what the adapter would. The fakes are wrapped, not changed: their semantics are the
 * ones test/integration/port-contracts.test.ts checks against the adapters.
 *
 * Requests per call, as the adapters make them (docs/frontier.md has the item layout):
 * - admit: BatchGetItem of the candidates (100 keys a call, eventually consistent, projected), then
 *   one conditional UpdateItem per candidate not found, 16 in flight; addQueued: one UpdateItem;
 * - page: one consistent Query of the host's partition (`Limit`; 1 MB at most); get: consistent
 *   BatchGetItem, 100 keys a call, each item billed alone; postpone, finalize, repoint: one
 *   UpdateItem (billed on the larger of the item before and after);
 * - wake: UpdateItem (ADD), plus the claim's UpdateItem when it claims the send; acquire: UpdateItem
 *   (plus the DONE# GetItem of a host item without a pace: new, or woken after a drain); release: UpdateItem; drain: PutItem of
 *   DONE#, DeleteItem of HOST#; anyActive: Query Limit 1 per shard up to the first with a host;
 *   doneTotals: Query of every DONE# item, shard after shard (host, DONE# and robots items are on
 *   the shard partitions `CRAWL#<id>#NN`, frontier-schema.ts);
 * - robots: GetItem / UpdateItem of ROBOTS#; configs: one consistent GetItem per crawl per container
 *   (cached); crawl state: one eventually consistent GetItem per crawl per container per 5 s;
 * - counters: UpdateItem (ADD), completion: the HOST# and DONE# Queries twice over, UpdateItem;
 * - S3: PutObject, HeadObject, ListObjectsV2 (1,000 keys a page); SQS: SendMessageBatch of at most
 *   10 entries and 256 KiB a message (checked), billed per 64 KiB chunk of the request.
 */

import { QUEUE } from '../../cdk/limits.ts';
import { crawlShardPk, shardOf } from '../../lambdas/adapters/frontier-schema.ts';
import { FRONTIER_SHARDS } from '../../lambdas/core/base/index.ts';
import { type DrainedSender, settledTotals } from '../../lambdas/core/batches/index.ts';
import {
  type Admission,
  type AdmitOptions,
  type CounterDeltas,
  type CrawlConfig,
  type CrawlConfigReader,
  type CrawlCounters,
  type CrawlStateCheck,
  type CrawlStateName,
  type DeadLetter,
  type DeadLetterSender,
  type FinalizeEntry,
  type FinalizeOutcome,
  type FrontierAdmission,
  type FrontierFinalizer,
  type FrontierUrl,
  frontierHost,
  type HostBusy,
  type HostLease,
  type HostPace,
  type HostRelease,
  type HostTally,
  type HostUrl,
  type HostUrlPage,
  type HostUrlStore,
  type HostVisits,
  type OutgoingVisit,
  type RenderHold,
  type ResultSender,
  type ResultStore,
  type RobotsState,
  type RobotsStore,
  type TaskSender,
} from '../../lambdas/core/crawl/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';
import { SQS_LIMITS } from '../../local/strict-limits.ts';
import { type AwsMeter, type AwsRequest, readUnits, writeUnits } from './aws-meter.ts';
import type { MemoryCrawlConfigs } from './crawl-configs.ts';
import type { MemoryFrontierFinalizer } from './frontier-finalizer.ts';
import type { MemoryFrontierUrls, UrlItem } from './frontier-urls.ts';
import type { MemoryHostVisits } from './host-visits.ts';
import type { MemoryRobotsStore } from './robots-store.ts';

const BATCH_GET_KEYS = 100;
const ADMIT_CONCURRENCY = 16;
const QUERY_PAGE_BYTES = 1_048_576;
const LIST_PAGE_KEYS = 1000;
const STATE_CACHE_MS = 5_000;
/** An expiresAt timestamp as stored (10 digits). */
const EXPIRES_AT = 1_900_000_000;

/** An item's size as DynamoDB counts it: attribute names plus values (numbers ~1 byte per 2 digits). */
export function itemSize(item: Record<string, unknown>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value === undefined) continue;
    size += Buffer.byteLength(name) + valueSize(value);
  }
  return size;
}

function valueSize(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return Math.ceil(String(value).replace(/[-.]/g, '').length / 2) + 1;
  if (typeof value === 'boolean') return 1;
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, v) => sum + 1 + valueSize(v), 0);
  if (value !== null && typeof value === 'object') return 3 + itemSize(value as Record<string, unknown>);
  return 1;
}

const urlsPk = (crawlId: string, host: string) => `URLS#${crawlId}#${host}`;
const crawlPk = (crawlId: string) => `CRAWL#${crawlId}`;
/** The shard partition of a host's or origin's items (frontier-schema.ts). */
const shardPk = (crawlId: string, name: string) => crawlShardPk(crawlId, shardOf(name));

/**
 * A URL item's size, attribute by attribute (names as frontier-schema.ts ATTR spells them, short):
 * computed without building the item, as a visit's Query meters every item of its host.
 */
function urlItemBytes(crawlId: string, item: Partial<UrlItem> & { key: string; url: string }): number {
  // pk (URLS#<crawl>#<host>), sk (64 hex), url, depth, st, expiresAt.
  let size = 2 + 6 + crawlId.length + frontierHost(item.url).length + 2 + 64 + 3 + item.url.length;
  size += 5 + 2 + 2 + 4 + 9 + 6;
  if (item.parent !== undefined) size += 6 + item.parent.length;
  if (item.redirects !== undefined) size += 9 + 2;
  if (item.attempts !== undefined) size += 3 + 2;
  if (item.retryAt !== undefined) size += 7 + 8;
  if (item.outcome !== undefined) size += 7 + item.outcome.length;
  if (item.bytes !== undefined) size += 5 + 4;
  if (item.requests !== undefined) size += 8 + 2;
  if (item.part !== undefined) size += 4 + item.part.length;
  if (item.rid !== undefined) size += 3 + item.rid.length;
  if (item.prior !== undefined) size += 5 + JSON.stringify(item.prior).length;
  return size;
}

/** A URL item's size as a read is billed: `rid` is not projected but billed (~40 bytes on a done item). */
const readBytes = (crawlId: string, url: HostUrl): number =>
  urlItemBytes(crawlId, url) + (url.st === 'done' ? 40 : 0);

const COUNTERS_BYTES = 400;

/** FrontierAdmission & HostUrlStore (FrontierUrls, FrontierCounters) over MemoryFrontierUrls. */
export class MeteredFrontierUrls implements FrontierAdmission, HostUrlStore {
  readonly #urls: MemoryFrontierUrls;
  readonly #meter: AwsMeter;

  constructor(urls: MemoryFrontierUrls, meter: AwsMeter) {
    this.#urls = urls;
    this.#meter = meter;
  }

  async admit(
    crawlId: string,
    parentKey: string,
    candidates: readonly FrontierUrl[],
    options: AdmitOptions = {},
  ): Promise<Admission> {
    const unique = [...new Map(candidates.map((c) => [c.key, c])).values()];
    const gets: AwsRequest[] = [];
    for (let start = 0; options.probe !== false && start < unique.length; start += BATCH_GET_KEYS) {
      const keys = unique.slice(start, start + BATCH_GET_KEYS);
      gets.push({
        op: 'DynamoDB:BatchGetItem',
        kind: 'url',
        pk: urlsPk(crawlId, frontierHost(keys[0]!.url)),
        rcu: keys.length * readUnits(0, false),
      });
    }
    await this.#meter.serial(gets);
    const puts: AwsRequest[] = unique
      .filter((c) => this.#urls.item(crawlId, frontierHost(c.url), c.key) === undefined)
      .map((c) => {
        const bytes = urlItemBytes(crawlId, { ...c, parent: parentKey, st: c.held ? 'held' : 'new' });
        return {
          op: 'DynamoDB:UpdateItem',
          kind: 'url',
          pk: urlsPk(crawlId, frontierHost(c.url)),
          wcu: writeUnits(bytes),
          itemBytes: bytes,
        };
      });
    await this.#meter.parallel(puts, ADMIT_CONCURRENCY);
    return this.#urls.admit(crawlId, parentKey, candidates);
  }

  async reservePages(crawlId: string, wanted: number, maxPages: number): Promise<number> {
    await this.#meter.request(counterWrite(crawlId));
    return this.#urls.reservePages(crawlId, wanted, maxPages);
  }

  async promote(crawlId: string, urls: readonly FrontierUrl[]): Promise<void> {
    await this.#meter.parallel(
      urls.map((url) => ({
        op: 'DynamoDB:UpdateItem',
        kind: 'url',
        pk: urlsPk(crawlId, frontierHost(url.url)),
        wcu: writeUnits(urlItemBytes(crawlId, url)),
      })),
      ADMIT_CONCURRENCY,
    );
    return this.#urls.promote(crawlId, urls);
  }

  async addQueued(crawlId: string, count: number): Promise<void> {
    await this.#meter.request(counterWrite(crawlId));
    return this.#urls.addQueued(crawlId, count);
  }

  async page(crawlId: string, host: string, after: string | undefined, limit: number): Promise<HostUrlPage> {
    const page = await this.#urls.page(crawlId, host, after, limit);
    let bytes = 0;
    for (const url of page.urls) bytes += readBytes(crawlId, url);
    // One Query, billed on the bytes it read together; past 1 MB DynamoDB would cut it (one more call).
    const calls: AwsRequest[] = [];
    for (let left = Math.max(1, bytes); left > 0; left -= QUERY_PAGE_BYTES)
      calls.push({
        op: 'DynamoDB:Query',
        kind: 'url',
        pk: urlsPk(crawlId, host),
        rcu: readUnits(Math.min(left, QUERY_PAGE_BYTES), true),
      });
    await this.#meter.serial(calls);
    return page;
  }

  async get(crawlId: string, host: string, keys: readonly string[]): Promise<HostUrl[]> {
    const urls = await this.#urls.get(crawlId, host, keys);
    const found = new Map(urls.map((url) => [url.key, url]));
    const unique = [...new Set(keys)];
    const calls: AwsRequest[] = [];
    // BatchGetItem: 100 keys a call, each item billed on its own (rounded up to 4 KB), found or not.
    for (let start = 0; start < unique.length; start += BATCH_GET_KEYS) {
      let rcu = 0;
      for (const key of unique.slice(start, start + BATCH_GET_KEYS)) {
        const url = found.get(key);
        rcu += readUnits(url ? readBytes(crawlId, url) : 0, true);
      }
      calls.push({ op: 'DynamoDB:BatchGetItem', kind: 'url', pk: urlsPk(crawlId, host), rcu });
    }
    await this.#meter.serial(calls);
    return urls;
  }

  async postpone(crawlId: string, host: string, key: string, attempts: number, retryAt: number) {
    const item = this.#urls.item(crawlId, host, key);
    const bytes = item ? urlItemBytes(crawlId, item) + 20 : 200;
    await this.#meter.request({
      op: 'DynamoDB:UpdateItem',
      kind: 'url',
      pk: urlsPk(crawlId, host),
      wcu: writeUnits(bytes),
    });
    return this.#urls.postpone(crawlId, host, key, attempts, retryAt);
  }

  async finalize(crawlId: string, entry: FinalizeEntry): Promise<FinalizeOutcome> {
    const host = frontierHost(entry.url);
    const before = this.#urls.item(crawlId, host, entry.key);
    const after = urlItemBytes(crawlId, { ...(before ?? {}), ...entry, st: 'done' });
    const bytes = Math.max(after, before ? urlItemBytes(crawlId, before) : 0);
    await this.#meter.request({
      op: 'DynamoDB:UpdateItem',
      kind: 'url',
      pk: urlsPk(crawlId, host),
      wcu: writeUnits(bytes),
      itemBytes: bytes,
    });
    return this.#urls.finalize(crawlId, entry);
  }
}

function counterWrite(crawlId: string): AwsRequest {
  return {
    op: 'DynamoDB:UpdateItem',
    kind: 'counters',
    pk: crawlPk(crawlId),
    wcu: writeUnits(COUNTERS_BYTES),
    itemBytes: COUNTERS_BYTES,
  };
}

/** HostVisits (FrontierHosts) over MemoryHostVisits. */
export class MeteredHostVisits implements HostVisits {
  readonly #hosts: MemoryHostVisits;
  readonly #meter: AwsMeter;
  /** FrontierHosts.anyActive's memory of the shard where it last found a host (per container there, one here). */
  readonly #lastActiveShard = new Map<string, number>();

  constructor(hosts: MemoryHostVisits, meter: AwsMeter) {
    this.#hosts = hosts;
    this.#meter = meter;
  }

  #hostWrite(crawlId: string, host: string, extraBytes = 0): AwsRequest {
    const item = this.#hosts.host(crawlId, host);
    const bytes =
      itemSize({ pk: shardPk(crawlId, host), sk: `HOST#${host}`, ...(item ?? {}), expiresAt: EXPIRES_AT }) +
      extraBytes;
    return {
      op: 'DynamoDB:UpdateItem',
      kind: 'host',
      pk: shardPk(crawlId, host),
      wcu: writeUnits(bytes),
      itemBytes: bytes,
    };
  }

  async wake(crawlId: string, host: string, now: number): Promise<string | undefined> {
    await this.#meter.request(this.#hostWrite(crawlId, host, 20));
    const ticket = await this.#hosts.wake(crawlId, host, now);
    if (ticket !== undefined) await this.#meter.request(this.#hostWrite(crawlId, host));
    return ticket;
  }

  async confirmSent(crawlId: string, host: string, ticket: string): Promise<void> {
    await this.#meter.request(this.#hostWrite(crawlId, host, 8));
    return this.#hosts.confirmSent(crawlId, host, ticket);
  }

  async unwake(crawlId: string, host: string, ticket: string): Promise<void> {
    await this.#meter.request(this.#hostWrite(crawlId, host));
    return this.#hosts.unwake(crawlId, host, ticket);
  }

  async acquire(
    crawlId: string,
    host: string,
    holder: string,
    leaseUntil: number,
    now: number,
    ticket?: string,
  ): Promise<HostLease | HostBusy> {
    const fresh = this.#hosts.host(crawlId, host)?.next === undefined;
    await this.#meter.request(this.#hostWrite(crawlId, host, 80));
    const lease = await this.#hosts.acquire(crawlId, host, holder, leaseUntil, now, ticket);
    // A host item without a pace (new, or woken after a drain) takes it from DONE#: one more read.
    if (!('busy' in lease) && fresh)
      await this.#meter.request({ op: 'DynamoDB:GetItem', kind: 'done', pk: shardPk(crawlId, host), rcu: 1 });
    return lease;
  }

  async release(crawlId: string, host: string, holder: string, state: HostRelease): Promise<void> {
    const after = state.inflight.reduce((sum, key) => sum + key.length + 1, 0);
    const before = this.#hosts.host(crawlId, host)?.inflight.reduce((s, k) => s + k.length + 1, 0) ?? 0;
    await this.#meter.request(this.#hostWrite(crawlId, host, Math.max(0, after - before) + 40));
    return this.#hosts.release(crawlId, host, holder, state);
  }

  async drain(
    crawlId: string,
    host: string,
    holder: string,
    wakeSeen: number,
    tally: HostTally,
    pace: HostPace,
  ): Promise<boolean> {
    const doneBytes = itemSize({ pk: shardPk(crawlId, host), sk: `DONE#${host}`, ...tally, ...pace });
    await this.#meter.request({
      op: 'DynamoDB:PutItem',
      kind: 'done',
      pk: shardPk(crawlId, host),
      wcu: writeUnits(doneBytes),
      itemBytes: doneBytes,
    });
    const remove = this.#hostWrite(crawlId, host);
    await this.#meter.request({ ...remove, op: 'DynamoDB:DeleteItem' });
    return this.#hosts.drain(crawlId, host, holder, wakeSeen, tally, pace);
  }

  /** A Query Limit 1 per shard, from the shard where the last look found a host, up to the first that holds one. */
  async anyActive(crawlId: string): Promise<boolean> {
    const active = new Set(this.#hosts.hosts(crawlId, 'active').map(shardOf));
    const start = this.#lastActiveShard.get(crawlId) ?? 0;
    const queries: AwsRequest[] = [];
    for (let i = 0; i < FRONTIER_SHARDS; i++) {
      const shard = (start + i) % FRONTIER_SHARDS;
      queries.push({ op: 'DynamoDB:Query', kind: 'host', pk: crawlShardPk(crawlId, shard), rcu: 1 });
      if (active.has(shard)) {
        this.#lastActiveShard.set(crawlId, shard);
        break;
      }
    }
    await this.#meter.serial(queries);
    return this.#hosts.anyActive(crawlId);
  }

  /** A consistent Query of every shard's host items (keys and `aw`: ~80 bytes each). */
  async awaiting(crawlId: string): Promise<string[]> {
    await this.#meter.serial(this.#shardQueries(crawlId, 'active', 80));
    return this.#hosts.awaiting(crawlId);
  }

  async hurry(crawlId: string, host: string, now: number): Promise<string | undefined> {
    await this.#meter.request(this.#hostWrite(crawlId, host));
    return this.#hosts.hurry(crawlId, host, now);
  }

  async holdForRender(crawlId: string, host: string, holder: string, hold: RenderHold): Promise<boolean> {
    await this.#meter.request(this.#hostWrite(crawlId, host, 50));
    return this.#hosts.holdForRender(crawlId, host, holder, hold);
  }

  async renderHold(crawlId: string, host: string): Promise<RenderHold | undefined> {
    await this.#meter.request({ op: 'DynamoDB:GetItem', kind: 'host', pk: shardPk(crawlId, host), rcu: 1 });
    return this.#hosts.renderHold(crawlId, host);
  }

  async endRender(
    crawlId: string,
    host: string,
    token: string,
    nextAt: number,
    now: number,
  ): Promise<string | undefined> {
    await this.#meter.request(this.#hostWrite(crawlId, host));
    return this.#hosts.endRender(crawlId, host, token, nextAt, now);
  }

  /** The DONE# items of every shard (keys, counts by outcome, bytes, requests, pace: ~150 bytes each). */
  async doneTotals(crawlId: string): Promise<HostTally & { hosts: number }> {
    await this.#meter.serial(this.#shardQueries(crawlId, 'done', 150));
    return this.#hosts.doneTotals(crawlId);
  }

  /** A consistent Query of each of the crawl's shards, shard after shard, in pages of 1 MB of items. */
  #shardQueries(crawlId: string, which: 'active' | 'done', itemBytes: number): AwsRequest[] {
    const perShard = new Array<number>(FRONTIER_SHARDS).fill(0);
    for (const host of this.#hosts.hosts(crawlId, which)) perShard[shardOf(host)]! += 1;
    const pages: AwsRequest[] = [];
    for (const [shard, hosts] of perShard.entries()) {
      for (let left = Math.max(1, hosts * itemBytes); left > 0; left -= QUERY_PAGE_BYTES)
        pages.push({
          op: 'DynamoDB:Query',
          kind: which === 'done' ? 'done' : 'host',
          pk: crawlShardPk(crawlId, shard),
          rcu: readUnits(Math.min(left, QUERY_PAGE_BYTES), true),
        });
    }
    return pages;
  }
}

/** RobotsStore (FrontierRobots) over MemoryRobotsStore. */
export class MeteredRobots implements RobotsStore {
  readonly #robots: MemoryRobotsStore;
  readonly #meter: AwsMeter;

  constructor(robots: MemoryRobotsStore, meter: AwsMeter) {
    this.#robots = robots;
    this.#meter = meter;
  }

  #bytes(crawlId: string, origin: string, extra = 0): number {
    const item = this.#robots.item(crawlId, origin);
    return itemSize({ pk: shardPk(crawlId, origin), sk: `ROBOTS#${origin}`, ...(item ?? {}) }) + extra;
  }

  async read(crawlId: string, origin: string): Promise<RobotsState> {
    const bytes = this.#bytes(crawlId, origin);
    await this.#meter.request({
      op: 'DynamoDB:GetItem',
      kind: 'robots',
      pk: shardPk(crawlId, origin),
      rcu: readUnits(bytes, true),
    });
    return this.#robots.read(crawlId, origin);
  }

  async claim(crawlId: string, origin: string, leaseMs: number, now: number): Promise<boolean> {
    await this.#write(this.#bytes(crawlId, origin, 40), crawlId, origin);
    return this.#robots.claim(crawlId, origin, leaseMs, now);
  }

  async saveReady(crawlId: string, origin: string, policyJson: string, fetchedAt: number): Promise<void> {
    await this.#write(this.#bytes(crawlId, origin, policyJson.length), crawlId, origin);
    return this.#robots.saveReady(crawlId, origin, policyJson, fetchedAt);
  }

  async saveUnavailable(crawlId: string, origin: string, retryAt: number): Promise<number> {
    await this.#write(this.#bytes(crawlId, origin, 20), crawlId, origin);
    return this.#robots.saveUnavailable(crawlId, origin, retryAt);
  }

  #write(bytes: number, crawlId: string, origin: string): Promise<void> {
    return this.#meter.request({
      op: 'DynamoDB:UpdateItem',
      kind: 'robots',
      pk: shardPk(crawlId, origin),
      wcu: writeUnits(bytes),
      itemBytes: bytes,
    });
  }
}

/** CrawlConfigReader (CrawlConfigStore: cached per warm container) over MemoryCrawlConfigs. */
export class MeteredConfigs implements CrawlConfigReader {
  readonly #configs: MemoryCrawlConfigs;
  readonly #meter: AwsMeter;
  readonly #cache = new Map<string, Promise<CrawlConfig>>();

  constructor(configs: MemoryCrawlConfigs, meter: AwsMeter) {
    this.#configs = configs;
    this.#meter = meter;
  }

  get(crawlId: string): Promise<CrawlConfig> {
    let pending = this.#cache.get(crawlId);
    if (pending === undefined) {
      pending = this.#load(crawlId);
      pending.catch(() => this.#cache.delete(crawlId));
      this.#cache.set(crawlId, pending);
    }
    return pending;
  }

  async #load(crawlId: string): Promise<CrawlConfig> {
    const config = await this.#configs.get(crawlId);
    const bytes = configBytes(config);
    await this.#meter.request({
      op: 'DynamoDB:GetItem',
      kind: 'config',
      pk: crawlPk(crawlId),
      rcu: readUnits(bytes, true),
      itemBytes: bytes,
    });
    return config;
  }
}

/** The config item's size: the config as JSON plus its keys. */
export const configBytes = (config: CrawlConfig): number => Buffer.byteLength(JSON.stringify(config)) + 40;

/** CrawlStateCheck (CrawlCancellation: one read per crawl per container per 5 s) over the counters. */
export class MeteredCrawlStates implements CrawlStateCheck {
  readonly #finalizer: MemoryFrontierFinalizer;
  readonly #meter: AwsMeter;
  readonly #now: () => number;
  readonly #cache = new Map<string, { at: number; answer: Promise<CrawlStateName> }>();

  constructor(finalizer: MemoryFrontierFinalizer, meter: AwsMeter, now: () => number) {
    this.#finalizer = finalizer;
    this.#meter = meter;
    this.#now = now;
  }

  stateOf(crawlId: string): Promise<CrawlStateName> {
    const now = this.#now();
    const hit = this.#cache.get(crawlId);
    if (hit && (now - hit.at < STATE_CACHE_MS || hit.at === Number.POSITIVE_INFINITY)) return hit.answer;
    const entry = { at: now, answer: this.#read(crawlId) };
    this.#cache.set(crawlId, entry);
    entry.answer.then((state) => {
      // A cancelled or complete crawl stays so: cached for good.
      if (state !== 'running' && this.#cache.get(crawlId) === entry) entry.at = Number.POSITIVE_INFINITY;
    });
    return entry.answer;
  }

  async #read(crawlId: string): Promise<CrawlStateName> {
    await this.#meter.request({ op: 'DynamoDB:GetItem', kind: 'counters', pk: crawlPk(crawlId), rcu: 0.5 });
    return this.#finalizer.counters(crawlId)?.state ?? 'running';
  }
}

/** FrontierFinalizer (FrontierUrls.finalize/repoint, FrontierCounters) over MemoryFrontierFinalizer. */
export class MeteredFinalizer implements FrontierFinalizer {
  readonly #finalizer: MemoryFrontierFinalizer;
  readonly #urls: MeteredFrontierUrls;
  readonly #hosts: MeteredHostVisits;
  readonly #meter: AwsMeter;

  constructor(
    finalizer: MemoryFrontierFinalizer,
    urls: MeteredFrontierUrls,
    hosts: MeteredHostVisits,
    meter: AwsMeter,
  ) {
    this.#finalizer = finalizer;
    this.#urls = urls;
    this.#hosts = hosts;
    this.#meter = meter;
  }

  finalize(crawlId: string, entry: FinalizeEntry): Promise<FinalizeOutcome> {
    return this.#urls.finalize(crawlId, entry);
  }

  async repoint(crawlId: string, url: string, key: string, rid: string, part: string): Promise<void> {
    await this.#meter.request({
      op: 'DynamoDB:UpdateItem',
      kind: 'url',
      pk: urlsPk(crawlId, frontierHost(url)),
      wcu: 1,
    });
    return this.#finalizer.repoint(crawlId, url, key, rid, part);
  }

  async addCounters(crawlId: string, deltas: CounterDeltas): Promise<CrawlCounters> {
    await this.#meter.request(counterWrite(crawlId));
    return this.#finalizer.addCounters(crawlId, deltas);
  }

  async readCounters(crawlId: string): Promise<CrawlCounters | undefined> {
    await this.#meter.request({ op: 'DynamoDB:GetItem', kind: 'counters', pk: crawlPk(crawlId), rcu: 1 });
    return this.#finalizer.readCounters(crawlId);
  }

  async confirmCompletion(
    crawlId: string,
    now: Date,
    partsWritten: (parts: ReadonlySet<string>) => Promise<boolean>,
  ): Promise<{ completedNow: boolean; counters: CrawlCounters }> {
    // The same steps as the fake, each metered: the settled totals (completion-check.ts), the flip.
    const totals = await settledTotals(this.#hosts, crawlId);
    if (totals === undefined || !(await partsWritten(new Set(totals.parts)))) return this.#notYet(crawlId);
    await this.#meter.request(counterWrite(crawlId));
    return this.#finalizer.confirmCompletion(crawlId, now, partsWritten);
  }

  async #notYet(crawlId: string): Promise<{ completedNow: false; counters: CrawlCounters }> {
    const counters = await this.readCounters(crawlId);
    return {
      completedNow: false,
      counters: counters ?? {
        queued: 0,
        done: 0,
        admitted: 0,
        bytes: 0,
        requests: 0,
        byOutcome: {},
        state: 'running',
      },
    };
  }
}

/** ResultStore (S3Blobs) over a bucket fake. */
export class MeteredBlobs implements ResultStore {
  readonly #blobs: ResultStore;
  readonly #meter: AwsMeter;

  constructor(blobs: ResultStore, meter: AwsMeter) {
    this.#blobs = blobs;
    this.#meter = meter;
  }

  async put(key: string, body: Uint8Array, contentType: string): Promise<void> {
    await this.#meter.request({ op: 'S3:PutObject', bytes: body.length });
    return this.#blobs.put(key, body, contentType);
  }

  async putIfAbsent(key: string, body: Uint8Array, contentType: string): Promise<boolean> {
    await this.#meter.request({ op: 'S3:PutObject', bytes: body.length });
    return this.#blobs.putIfAbsent(key, body, contentType);
  }

  async exists(key: string): Promise<boolean> {
    await this.#meter.request({ op: 'S3:HeadObject' });
    return this.#blobs.exists(key);
  }

  async *list(prefix: string): AsyncGenerator<string> {
    let listed = 0;
    for await (const key of this.#blobs.list(prefix)) {
      if (listed++ % LIST_PAGE_KEYS === 0) await this.#meter.request({ op: 'S3:ListObjectsV2' });
      yield key;
    }
    if (listed === 0) await this.#meter.request({ op: 'S3:ListObjectsV2' });
  }
}

/** A queue the metered senders put messages on (the simulation's SQS queue). */
export interface MessageSink {
  send(messages: ReadonlyArray<{ body: string; delaySeconds?: number }>): void;
}

/**
 * SendMessageBatch as the adapters make it (lambdas/adapters/sqs-batch-sender.ts): 10 entries a call;
 * each message checked against the queue's 256 KiB and DelaySeconds' 900.
 */
async function sendBatches(
  meter: AwsMeter,
  sink: MessageSink,
  messages: ReadonlyArray<{ body: string; delaySeconds?: number }>,
): Promise<void> {
  for (let start = 0; start < messages.length; start += SQS_LIMITS.maxBatchEntries) {
    const batch = messages.slice(start, start + SQS_LIMITS.maxBatchEntries);
    let bytes = 0;
    for (const message of batch) {
      const size = Buffer.byteLength(message.body);
      bytes += size;
      if (size > QUEUE.maxMessageSizeBytes) meter.violation('SQS message over 256 KiB');
      if ((message.delaySeconds ?? 0) > SQS_LIMITS.maxDelaySeconds)
        meter.violation('SQS DelaySeconds over 900');
    }
    await meter.request({ op: 'SQS:SendMessageBatch', bytes });
    sink.send(batch);
  }
}

/** TaskSender (SqsTaskSender): visit messages as JSON, with their delay. */
export class MeteredTaskSender implements TaskSender {
  readonly #meter: AwsMeter;
  readonly #sink: MessageSink;

  constructor(meter: AwsMeter, sink: MessageSink) {
    this.#meter = meter;
    this.#sink = sink;
  }

  sendVisits(visits: readonly OutgoingVisit[]): Promise<void> {
    return sendBatches(
      this.#meter,
      this.#sink,
      visits.map(({ visit, delaySeconds }) => ({
        body: JSON.stringify(visit),
        ...(delaySeconds ? { delaySeconds } : {}),
      })),
    );
  }
}

/** ResultSender & DrainedSender (SqsResultSender): one message per result record. */
export class MeteredResultSender implements ResultSender, DrainedSender {
  readonly #meter: AwsMeter;
  readonly #sink: MessageSink;

  constructor(meter: AwsMeter, sink: MessageSink) {
    this.#meter = meter;
    this.#sink = sink;
  }

  sendResults(results: readonly CrawlResult[]): Promise<void> {
    return sendBatches(
      this.#meter,
      this.#sink,
      results.map((result) => ({ body: JSON.stringify(result) })),
    );
  }

  /** Messages sent again as they are (lambdas/adapters/sqs-redelivery.ts `resend`). */
  sendRaw(bodies: readonly string[]): Promise<void> {
    return sendBatches(
      this.#meter,
      this.#sink,
      bodies.map((body) => ({ body })),
    );
  }

  sendDrained(crawlId: string): Promise<void> {
    return sendBatches(this.#meter, this.#sink, [
      { body: JSON.stringify({ v: 1, kind: 'drained', crawlId }) },
    ]);
  }
}

/** DeadLetterSender (SqsDeadLetterSender). */
export class MeteredDeadLetters implements DeadLetterSender {
  readonly #meter: AwsMeter;
  readonly #sink: MessageSink;

  constructor(meter: AwsMeter, sink: MessageSink) {
    this.#meter = meter;
    this.#sink = sink;
  }

  send(letters: readonly DeadLetter[]): Promise<void> {
    return sendBatches(
      this.#meter,
      this.#sink,
      letters.map((letter) => ({ body: letter.body })),
    );
  }
}
