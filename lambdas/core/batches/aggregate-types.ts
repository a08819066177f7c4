/**
 * The aggregate batch's messages, dependencies and report (aggregate-batch.ts), and the records its
 * steps pass along. Apart from the batch so that the modules of its steps (crawl-completion.ts,
 * aggregate-events.ts, index-part.ts) share them without importing the batch that imports them.
 */
import type { CrawlConfigReader, CrawlCounters, FrontierFinalizer, ResultStore } from '../crawl/index.ts';
import type { HurryDeps } from '../frontier/index.ts';
import type { CrawlResult } from '../results/index.ts';
import type { EventPublisher } from './crawl-events.ts';

export interface ResultMessage {
  id: string;
  body: string;
  /** SQS ApproximateReceiveCount: 1 on first delivery; > 1 after a crash, timeout or failure report. */
  receiveCount?: number;
}

export interface AggregateDeps {
  frontier: FrontierFinalizer;
  blobs: ResultStore;
  invocationId: string;
  now?: () => Date;
  /** Finalize calls in flight at once (default 16). */
  concurrency?: number;
  /**
   * Hosts and the task queue: a host that awaits only results (its last pages) is visited as soon
   * as they are written (core/frontier/host-hurry.ts). Absent: it is visited at its own recheck.
   */
  hurry?: Omit<HurryDeps, 'now'>;
  /**
   * Crawl events (crawl-events.ts): the crawl's end, once, and with `--page-events` a re-crawl's new,
   * changed and removed pages (the crawl's config says which). Absent: none are published.
   */
  events?: { publisher: EventPublisher; configs: CrawlConfigReader };
  /**
   * Epoch ms: no crawl's results (nor a drained record's completion check) are started after it.
   * What is left is `deferred`: not failed, so the caller hands it back without spending a receive.
   */
  deadline?: number;
}

export interface AggregateReport {
  written: Array<{ crawlId: string; key: string; lines: number }>;
  /** Messages that are not result records: failed so the queue moves them to its DLQ for inspection. */
  rejected: Array<{ id: string; reason: string }>;
  /** Valid results whose processing failed at some step: failed so that they are retried. */
  retry: Array<{ id: string; crawlId: string; reason: string }>;
  /** Results that lost finalize: another result of the URL counts; dropped. */
  duplicates: Array<{ id: string; crawlId: string; key: string }>;
  /**
   * Results for URLs a finished crawl never had (a task injected after its end): not indexed, so a
   * written summary stays true. Their messages are done with.
   */
  late: Array<{ id: string; crawlId: string; url: string }>;
  /** Results that had won before (a crash or a lost answer) and were written again (aggregate-batch.ts). */
  rewritten: Array<{ id: string; crawlId: string; key: string }>;
  /** Counters after this batch's update, by crawl. */
  counters: Record<string, CrawlCounters>;
  /** Crawls completed by this batch (or whose summary was rewritten on the recovery path). */
  summaries: Array<{ crawlId: string; key: string; completedNow: boolean }>;
  /** Messages not started before the deadline (nothing done for them): to be sent again as they are. */
  deferred: Array<{ id: string; crawlId: string }>;
  /** Hosts sent a visit at once because this batch wrote results they awaited (host-hurry.ts), by crawl. */
  hurried: Array<{ crawlId: string; hosts: number }>;
}

/** One result record of a batch's message. */
export interface ResultItem {
  message: ResultMessage;
  result: CrawlResult;
  /** The record's id (result-message.ts): finalize is idempotent for it. */
  rid: string;
}

/** The crawls whose completion this batch has checked (once each). */
export interface CheckedCrawls {
  checked: Set<string>;
}
