/**
 * Imitates the aggregate side of the FrontierTable (FrontierFinalizer: lambdas/adapters/frontier-urls.ts
 * `finalize` and `repoint`, frontier-counters.ts for the counters and `confirmCompletion`) over the
 * existing fakes: URL items are MemoryFrontierUrls' (its `finalize` is the adapter's condition), hosts
 * MemoryHostVisits' (completion settles `anyActive` and `doneTotals` by completion-check.ts, as the adapter does), and the
 * counters item lives here: ADDs that may drift, and the conditional flip running → complete that
 * rewrites every counter from the drained hosts' tallies, true for exactly one caller. Admission's
 * `addQueued` (MemoryFrontierUrls') adds to the same item in the adapter, so a running crawl's
 * `queued` read here includes it.
 */

import type { Outcome } from '../../lambdas/core/base/index.ts';
import { settledTotals } from '../../lambdas/core/batches/index.ts';
import {
  type CounterDeltas,
  type CrawlCounters,
  type FinalizeEntry,
  type FinalizeOutcome,
  type FrontierFinalizer,
  frontierHost,
} from '../../lambdas/core/crawl/index.ts';
import type { MemoryFrontierUrls } from './frontier-urls.ts';
import type { MemoryHostVisits } from './host-visits.ts';

export class MemoryFrontierFinalizer implements FrontierFinalizer {
  readonly #urls: MemoryFrontierUrls;
  readonly #hosts: MemoryHostVisits;
  readonly #counters = new Map<string, CrawlCounters>();

  constructor(urls: MemoryFrontierUrls, hosts: MemoryHostVisits) {
    this.#urls = urls;
    this.#hosts = hosts;
  }

  /** The counters item as stored (a copy), if any. */
  counters(crawlId: string): CrawlCounters | undefined {
    const counters = this.#counters.get(crawlId);
    return counters && this.#asStored(crawlId, counters);
  }

  /** A copy, with admission's `queued` while the crawl runs (completion rewrites it from the tallies). */
  #asStored(crawlId: string, counters: CrawlCounters): CrawlCounters {
    const copy = structuredClone(counters);
    if (copy.state === 'running') copy.queued += this.#urls.counters(crawlId).queued;
    return copy;
  }

  /** The crawl's counters item as submit creates it (its start time). */
  start(crawlId: string, startedAt: Date): void {
    this.#counter(crawlId).startedAt = startedAt.toISOString();
  }

  finalize(crawlId: string, entry: FinalizeEntry): Promise<FinalizeOutcome> {
    return this.#urls.finalize(crawlId, entry);
  }

  async repoint(crawlId: string, url: string, key: string, rid: string, part: string): Promise<void> {
    await tick();
    const item = this.#urls.item(crawlId, frontierHost(url), key);
    // Conditional on the result that won the URL: another result's repoint changes nothing.
    if (item?.st === 'done' && item.rid === rid) item.part = part;
  }

  async addCounters(crawlId: string, deltas: CounterDeltas): Promise<CrawlCounters> {
    await tick();
    const counters = this.#counter(crawlId);
    counters.queued += deltas.queued ?? 0;
    counters.done += deltas.done ?? 0;
    counters.bytes += deltas.bytes ?? 0;
    counters.requests += deltas.requests ?? 0;
    for (const [outcome, count] of Object.entries(deltas.byOutcome ?? {}) as Array<[Outcome, number]>)
      counters.byOutcome[outcome] = (counters.byOutcome[outcome] ?? 0) + count;
    return this.#asStored(crawlId, counters);
  }

  async readCounters(crawlId: string): Promise<CrawlCounters | undefined> {
    await tick();
    return this.counters(crawlId);
  }

  async confirmCompletion(
    crawlId: string,
    now: Date,
    partsWritten: (parts: ReadonlySet<string>) => Promise<boolean>,
  ): Promise<{ completedNow: boolean; counters: CrawlCounters }> {
    const notYet = async () => ({
      completedNow: false,
      counters: (await this.readCounters(crawlId)) ?? emptyCounters(),
    });
    const totals = await settledTotals(this.#hosts, crawlId);
    if (totals === undefined || !(await partsWritten(new Set(totals.parts)))) return notYet();
    const counters = this.#counter(crawlId);
    if (counters.state !== 'running') return notYet();
    counters.queued = totals.total;
    counters.done = totals.total;
    counters.bytes = totals.bytes;
    counters.requests = totals.requests;
    counters.byOutcome = { ...totals.byOutcome };
    counters.state = 'complete';
    counters.endedAt = now.toISOString();
    counters.startedAt ??= counters.endedAt;
    return { completedNow: true, counters: structuredClone(counters) };
  }

  #counter(crawlId: string): CrawlCounters {
    let counters = this.#counters.get(crawlId);
    if (counters === undefined) {
      counters = emptyCounters();
      this.#counters.set(crawlId, counters);
    }
    return counters;
  }
}

function emptyCounters(): CrawlCounters {
  return { queued: 0, done: 0, admitted: 0, bytes: 0, requests: 0, byOutcome: {}, state: 'running' };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
