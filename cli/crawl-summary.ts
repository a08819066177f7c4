/** The summary.json `crawler crawl --out` and `crawler export` write, counted one result at a time. */
import type { CrawlResult } from '../lambdas/core/results/index.ts';
import type { CrawlCostReport } from '../lambdas/shared/aws-prices.ts';

export interface CrawlSummary {
  crawlId: string;
  /** How the crawl stood when this was written: `interrupted` (Ctrl-C) can be resumed. */
  state?: 'complete' | 'cancelled' | 'interrupted' | 'running';
  /** The seeds given as arguments (a seeds file's are counted in `seedCount`, not listed). */
  seeds: string[];
  /** How many seeds the crawl was submitted with, a seeds file's included. */
  seedCount: number;
  startedAt: string;
  endedAt: string;
  seconds: number;
  urls: number;
  byOutcome: Record<string, number>;
  bytes: number;
  /** Pages this run fetched (from `startedAt`: a resumed crawl's earlier runs are not counted) per second of it. */
  pagesPerSecond: number;
  warcFiles: number;
  /** Lines of pages.jsonl: pages with a content record. */
  contentRecords?: number;
  /** Files written under --markdown-dir. */
  markdownFiles?: number;
  /** Counted AWS requests per page and the cost per million pages they imply (lambdas/shared/aws-prices.ts). */
  aws?: CrawlCostReport;
}

export interface SummaryInfo {
  crawlId: string;
  seeds: string[];
  /** Default: the seeds listed. */
  seedCount?: number;
  startedAt: Date;
  endedAt: Date;
  warcFiles: number;
}

/**
 * Counts results one at a time, so a summary never needs the crawl's results in memory. Pages per
 * second count the pages fetched since `runStartedAt` only: after a resume, the pages of the runs
 * before it took time that this run's seconds do not hold.
 */
export class SummaryAccumulator {
  #urls = 0;
  #bytes = 0;
  #fetchedThisRun = 0;
  readonly #byOutcome: Record<string, number> = {};
  readonly #runStartedAt: number;

  constructor(runStartedAt: Date) {
    this.#runStartedAt = runStartedAt.getTime();
  }

  add(result: Pick<CrawlResult, 'outcome' | 'bytes' | 'fetchedAt'>): void {
    this.#urls++;
    this.#byOutcome[result.outcome] = (this.#byOutcome[result.outcome] ?? 0) + 1;
    this.#bytes += result.bytes;
    if (result.outcome === 'fetched' && Date.parse(result.fetchedAt) >= this.#runStartedAt)
      this.#fetchedThisRun++;
  }

  /** Pages fetched since the run started: what its counted AWS calls paid for. */
  get fetchedThisRun(): number {
    return this.#fetchedThisRun;
  }

  /** `info.startedAt` is the run's start the accumulator was made with. */
  summary(info: SummaryInfo): CrawlSummary {
    const seconds = Math.max(0.001, (info.endedAt.getTime() - info.startedAt.getTime()) / 1000);
    return {
      crawlId: info.crawlId,
      seeds: info.seeds,
      seedCount: info.seedCount ?? info.seeds.length,
      startedAt: info.startedAt.toISOString(),
      endedAt: info.endedAt.toISOString(),
      seconds: Number(seconds.toFixed(3)),
      urls: this.#urls,
      byOutcome: { ...this.#byOutcome },
      bytes: this.#bytes,
      pagesPerSecond: Number((this.#fetchedThisRun / seconds).toFixed(2)),
      warcFiles: info.warcFiles,
    };
  }
}
