/**
 * Imitates the FrontierTable's URL items and crawl counters as the fetch side uses them
 * (lambdas/adapters/frontier-urls.ts FrontierUrls, and frontier-counters.ts for `reservePages` and
 * `addQueued`): FrontierAdmission and HostUrlStore, plus `finalize` (FrontierFinalizer's), which is
 * what makes a URL done. Each URL item lives in its host's partition (frontierHost of its URL), and
 * every decision has the adapter's condition: admission creates an item once (a page's own earlier
 * admission, not yet attempted or carried, is admitted again unchanged; a carried link is created
 * done), a postponed retry never touches a done item, the first result to finalize a URL wins it. Checked against the DynamoDB adapter on dynalite
 * by test/integration/port-contracts.test.ts (frontierUrlsContract in test/contracts/frontier-urls.ts).
 */

import {
  type Admission,
  type AdmitOptions,
  type FinalizeEntry,
  type FinalizeOutcome,
  type FrontierAdmission,
  type FrontierUrl,
  frontierHost,
  type HostUrl,
  type HostUrlPage,
  type HostUrlStore,
} from '../../lambdas/core/crawl/index.ts';
import { Faults } from './faults.ts';

/** The index of the first of the sorted `keys` after `after`. */
function firstAfter(keys: readonly string[], after: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((keys[mid] as string) <= after) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** An item as a read returns it: a copy, without `rid` (not projected). */
/** An item as FrontierUrls reads it: no `rid`, and a capture only on a URL still to fetch. */
const asRead = ({ rid: _rid, prior, ...url }: UrlItem): HostUrl =>
  url.st === 'new' && prior !== undefined ? { ...url, prior } : { ...url };

/** A URL item as stored: what a visit reads, and the winning result's id once done. */
export interface UrlItem extends HostUrl {
  rid?: string;
}

export type FrontierUrlsMethod =
  | 'admit'
  | 'reservePages'
  | 'promote'
  | 'addQueued'
  | 'urls'
  | 'page'
  | 'get'
  | 'postpone'
  | 'finalize';

export class MemoryFrontierUrls implements FrontierAdmission, HostUrlStore {
  /** Per partition (`<crawlId>#<host>`), its URL items by key. */
  readonly #partitions = new Map<string, Map<string, UrlItem>>();
  readonly #counters = new Map<string, { queued: number; admitted: number }>();
  readonly #sortedKeys = new Map<string, string[]>();
  readonly faults = new Faults<FrontierUrlsMethod>();
  /** Every postponed retry, in order. */
  readonly postponed: Array<{ host: string; key: string; attempts: number; retryAt: number }> = [];

  /** Puts URL items as they are (test set-up: a partition as an earlier crawl left it). */
  seed(crawlId: string, items: readonly UrlItem[]): void {
    for (const item of items) this.#partition(crawlId, frontierHost(item.url)).set(item.key, { ...item });
  }

  /** Finalizes every URL of the host as fetched, `bytes` each (test set-up: all its results are in). */
  async finalizeHost(crawlId: string, host: string, bytes: number): Promise<void> {
    for (const url of await this.urls(crawlId, host))
      await this.finalize(crawlId, {
        ...url,
        outcome: 'fetched',
        bytes,
        requests: 1,
        rid: url.key,
        part: 'p',
      });
  }

  /** The URL item as stored (the object itself: a test may change it, as another writer would). */
  item(crawlId: string, host: string, key: string): UrlItem | undefined {
    return this.#partitions.get(`${crawlId}#${host}`)?.get(key);
  }

  /** Every URL item of the crawl, in all partitions. */
  all(crawlId: string): UrlItem[] {
    return [...this.#partitions]
      .filter(([partition]) => partition.startsWith(`${crawlId}#`))
      .flatMap(([, items]) => [...items.values()]);
  }

  counters(crawlId: string): { queued: number; admitted: number } {
    return { ...(this.#counters.get(crawlId) ?? { queued: 0, admitted: 0 }) };
  }

  async admit(
    crawlId: string,
    parentKey: string,
    candidates: readonly FrontierUrl[],
    options: AdmitOptions = {},
  ): Promise<Admission> {
    return this.faults.run('admit', [crawlId, parentKey, candidates], async () => {
      // Duplicate keys in one call are tried once: the first of them.
      const unique = candidates.filter(
        (candidate, index) => candidates.findIndex((other) => other.key === candidate.key) === index,
      );
      const admission: Admission = { admitted: [], settled: [] };
      for (const candidate of unique) {
        const partition = this.#partition(crawlId, frontierHost(candidate.url));
        const existing = partition.get(candidate.key);
        const { carried: _carried, ...url } = candidate;
        if (existing === undefined) {
          const item: UrlItem = {
            key: candidate.key,
            url: candidate.url,
            depth: candidate.depth,
            st: candidate.carried ? 'done' : candidate.held ? 'held' : 'new',
            parent: parentKey,
          };
          if (candidate.redirects !== undefined) item.redirects = candidate.redirects;
          if (candidate.prior !== undefined) item.prior = candidate.prior;
          if (candidate.carried) item.carried = true;
          partition.set(candidate.key, item);
          admission.admitted.push({ ...candidate, fresh: true });
        } else if (
          existing.st !== 'done' &&
          existing.parent === parentKey &&
          existing.attempts === undefined
        ) {
          // This page's own earlier admission, not yet attempted: admitted again, the item unchanged.
          admission.admitted.push({ ...url, fresh: false });
        } else if (existing.carried && existing.parent === parentKey) {
          // Carried by this page: its result, sent again, carries it again.
          admission.admitted.push({ ...url, carried: true, fresh: false });
        } else if (existing.st !== 'held' && !existing.carried && options.probe !== false)
          // Known settled only by the read a probe makes; a put alone just fails.
          admission.settled.push(candidate.key);
      }
      return admission;
    });
  }

  async reservePages(crawlId: string, wanted: number, maxPages: number): Promise<number> {
    return this.faults.run('reservePages', [crawlId, wanted, maxPages], async () => {
      const want = Math.floor(wanted);
      const max = Math.floor(maxPages);
      if (!(want > 0) || !(max > 0)) return 0;
      const counters = this.#counter(crawlId);
      const grant = Math.min(want, max - counters.admitted);
      if (!(grant > 0)) return 0;
      counters.admitted += grant;
      return grant;
    });
  }

  async promote(crawlId: string, urls: readonly FrontierUrl[]): Promise<void> {
    return this.faults.run('promote', [crawlId, urls], async () => {
      for (const url of urls) {
        const item = this.item(crawlId, frontierHost(url.url), url.key);
        if (item?.st === 'held') item.st = 'new';
      }
    });
  }

  async addQueued(crawlId: string, count: number): Promise<void> {
    return this.faults.run('addQueued', [crawlId, count], async () => {
      this.#counter(crawlId).queued += count;
    });
  }

  /** Every URL item of the host, in key order (a test's look at the partition; no visit reads so). */
  async urls(crawlId: string, host: string): Promise<HostUrl[]> {
    return this.faults.run('urls', [crawlId, host], async () => this.#sorted(crawlId, host).map(asRead));
  }

  async page(crawlId: string, host: string, after: string | undefined, limit: number): Promise<HostUrlPage> {
    return this.faults.run('page', [crawlId, host, after, limit], async () => {
      const partition = this.#partitions.get(`${crawlId}#${host}`);
      const keys = this.#keys(crawlId, host);
      const from = after === undefined ? 0 : firstAfter(keys, after);
      const items = keys.slice(from, from + limit).flatMap((key) => {
        const item = partition?.get(key);
        return item ? [asRead(item)] : [];
      });
      const page: HostUrlPage = { urls: items };
      // As a Query's LastEvaluatedKey: named whenever the page is full, even if nothing follows.
      const last = items.at(-1);
      if (items.length === limit && last !== undefined) page.next = last.key;
      return page;
    });
  }

  async get(crawlId: string, host: string, keys: readonly string[]): Promise<HostUrl[]> {
    return this.faults.run('get', [crawlId, host, keys], async () => {
      const partition = this.#partitions.get(`${crawlId}#${host}`);
      return [...new Set(keys)].flatMap((key) => {
        const item = partition?.get(key);
        return item ? [asRead(item)] : [];
      });
    });
  }

  /** The host's partition in sort key order, as a Query returns it. */
  #sorted(crawlId: string, host: string): UrlItem[] {
    const partition = this.#partitions.get(`${crawlId}#${host}`);
    return this.#keys(crawlId, host).flatMap((key) => partition?.get(key) ?? []);
  }

  /** The partition's keys in order, kept until a key is added (a pass over a big host pages many times). */
  #keys(crawlId: string, host: string): string[] {
    const id = `${crawlId}#${host}`;
    const partition = this.#partitions.get(id);
    let keys = this.#sortedKeys.get(id);
    if (keys === undefined || keys.length !== (partition?.size ?? 0)) {
      keys = [...(partition?.keys() ?? [])].sort();
      this.#sortedKeys.set(id, keys);
    }
    return keys;
  }

  async postpone(
    crawlId: string,
    host: string,
    key: string,
    attempts: number,
    retryAt: number,
  ): Promise<void> {
    return this.faults.run('postpone', [crawlId, host, key, attempts, retryAt], async () => {
      const item = this.item(crawlId, host, key);
      if (item !== undefined && item.st !== 'done') {
        item.attempts = attempts;
        item.retryAt = retryAt;
        this.postponed.push({ host, key, attempts, retryAt });
      }
    });
  }

  async finalize(crawlId: string, entry: FinalizeEntry): Promise<FinalizeOutcome> {
    return this.faults.run('finalize', [crawlId, entry], async () => {
      const partition = this.#partition(crawlId, frontierHost(entry.url));
      const before = partition.get(entry.key);
      if (before?.st === 'done' && before.rid !== entry.rid)
        return { won: false, created: false, repeat: false };
      const repeat = before?.st === 'done';
      const item: UrlItem = {
        ...(before ?? { key: entry.key, url: entry.url, depth: 0 }),
        st: 'done',
        outcome: entry.outcome,
        rid: entry.rid,
        part: before?.part ?? entry.part,
        bytes: entry.bytes,
        requests: entry.requests,
        ...(entry.kids ? { kids: entry.kids } : {}),
      };
      delete item.retryAt;
      partition.set(entry.key, item);
      return {
        won: true,
        created: before === undefined,
        repeat,
        part: (repeat ? before?.part : undefined) ?? entry.part,
      };
    });
  }

  #partition(crawlId: string, host: string): Map<string, UrlItem> {
    const id = `${crawlId}#${host}`;
    let partition = this.#partitions.get(id);
    if (!partition) {
      partition = new Map();
      this.#partitions.set(id, partition);
    }
    return partition;
  }

  #counter(crawlId: string): { queued: number; admitted: number } {
    let counters = this.#counters.get(crawlId);
    if (!counters) {
      counters = { queued: 0, admitted: 0 };
      this.#counters.set(crawlId, counters);
    }
    return counters;
  }
}
