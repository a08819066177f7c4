/**
 * The aggregate function's work for one batch of result messages (docs/frontier.md, "Finalize" and
 * "Counters and completion"), over ports only:
 *
 *   validate → finalize each result (bounded parallelism) → one gzip JSONL index part per crawl →
 *   one `addCounters` per crawl → completion check → `crawls/<crawlId>/summary.json` once.
 *
 * ## Why finalize, then write (and how a crash loses nothing)
 *
 * Only the result that wins `finalize` (the conditional `st <> done → done` update of its URL item)
 * becomes an index line and is counted, so a duplicate result (a task fetched twice, a result sent
 * twice) never yields a second line or a second count. The index part is written after the
 * finalize calls, and the counters after the part:
 *
 * - crash (or error) before finalize: nothing happened; the redelivered message wins as usual.
 * - crash between finalize and the part PUT: the URL is `done` but has no line. The message was not
 *   deleted, so SQS redelivers it (ApproximateReceiveCount > 1). A redelivered result that loses
 *   finalize is therefore written again (the "rewrite path"): it may be the line the crashed
 *   invocation never wrote. If that invocation did write it (crash after the PUT), the line is now
 *   in two parts; readers keep the first line per `key` (cli/results-reader.ts). So a line can be
 *   duplicated after a crash, never lost.
 * - crash between the part PUT and `addCounters`: the rewrite path also counts the result, so `done`
 *   cannot stay below `queued` forever (which would keep the crawl from ever completing). If the
 *   crash came after `addCounters` instead, it is counted twice; completion reconciles `done`,
 *   `queued` and the outcome counts exactly from a Query of the URL items before it fires, so the
 *   over-count only triggers an early (exact) check. `bytes` and `requests` are not in the URL items
 *   and can drift by the re-counted results after such a crash, as docs/frontier.md allows. Once a
 *   crawl is complete the rewrite path does not count (its counters are final and exact).
 * - crash between `confirmCompletion` (state → complete, true for exactly one caller) and the
 *   summary PUT: the messages of that batch are redelivered, lose finalize, and see state `complete`
 *   on the rewrite path; the summary is then written again from the (final) counters. The summary is
 *   a function of the counters item, so rewriting it is idempotent.
 *
 * Checking before writing (read the URL item, write the line, then finalize) would also lose
 * nothing, but costs a read per result and lets two concurrent duplicates both write a line without
 * any crash; finalize-then-write makes duplicates possible only after a crash (or a failed step,
 * which is handled the same way: the message is retried).
 *
 * Any failed step of a crawl's results (finalize, PUT, counters, completion, summary) makes those
 * messages batch item failures: they are retried and take the paths above. Messages that are not
 * result records are `rejected` (batch item failures too) so they end in the ResultsDLQ.
 */
import { gzipSync } from 'node:zlib';
import { type IndexLine, indexLine } from './cdxj.ts';
import { OUTCOMES, type Outcome } from './outcome.ts';
import type { BlobWriter, CounterDeltas, CrawlCounters, FrontierFinalizer } from './ports.ts';
import { type CrawlResult, ResultSchema } from './result.ts';

export interface ResultMessage {
  id: string;
  body: string;
  /** SQS ApproximateReceiveCount: 1 on first delivery; > 1 after a crash, timeout or failure report. */
  receiveCount?: number;
}

export interface AggregateDeps {
  frontier: FrontierFinalizer;
  blobs: BlobWriter;
  invocationId: string;
  now?: () => Date;
  /** Finalize calls in flight at once (default 16). */
  concurrency?: number;
}

export interface AggregateReport {
  written: Array<{ crawlId: string; key: string; lines: number }>;
  /** Messages that are not result records: failed so the queue moves them to its DLQ for inspection. */
  rejected: Array<{ id: string; reason: string }>;
  /** Valid results whose processing failed at some step: failed so that they are retried. */
  retry: Array<{ id: string; crawlId: string; reason: string }>;
  /** Results that lost finalize on first delivery: someone else's result counts; dropped. */
  duplicates: Array<{ id: string; crawlId: string; key: string }>;
  /** Redelivered results that lost finalize and were written again (see the top of this file). */
  rewritten: Array<{ id: string; crawlId: string; key: string }>;
  /** Counters after this batch's update, by crawl. */
  counters: Record<string, CrawlCounters>;
  /** Crawls completed by this batch (or whose summary was rewritten on the recovery path). */
  summaries: Array<{ crawlId: string; key: string; completedNow: boolean }>;
}

export const DEFAULT_FINALIZE_CONCURRENCY = 16;

/** `results/<crawlId>/<UTC time>-<invocation id>.jsonl.gz`: keys sort by write time, then invocation. */
export function resultPartKey(crawlId: string, at: Date, invocationId: string): string {
  const stamp = at.toISOString().replace(/[:.]/g, '-');
  return `results/${crawlId}/${stamp}-${invocationId}.jsonl.gz`;
}

export function summaryKey(crawlId: string): string {
  return `crawls/${crawlId}/summary.json`;
}

/** `crawls/<crawlId>/summary.json`: the crawl's final numbers, written once when it completes. */
export interface CrawlSummaryRecord {
  crawlId: string;
  state: CrawlCounters['state'];
  startedAt?: string;
  endedAt: string;
  /** Wall time from startedAt to endedAt. */
  seconds?: number;
  queued: number;
  /** URLs with a result (every outcome). */
  done: number;
  /** Every outcome, zeros included. */
  byOutcome: Record<Outcome, number>;
  /** Payload bytes stored. */
  bytes: number;
  /** Results that came from an HTTP response (fetched, redirected, failed with a status). */
  requests: number;
  /** Fetched pages (outcome `fetched`) per second of `seconds`. */
  pagesPerSecond?: number;
}

/** The summary of a crawl from its counters item; `now` stands in for a missing `endedAt`. */
export function summaryFromCounters(crawlId: string, counters: CrawlCounters, now: Date): CrawlSummaryRecord {
  const byOutcome = Object.fromEntries(OUTCOMES.map((o) => [o, counters.byOutcome[o] ?? 0])) as Record<
    Outcome,
    number
  >;
  const endedAt = counters.endedAt ?? now.toISOString();
  const started = counters.startedAt === undefined ? Number.NaN : Date.parse(counters.startedAt);
  const ended = Date.parse(endedAt);
  const seconds =
    Number.isNaN(started) || Number.isNaN(ended) ? undefined : Math.max(0.001, (ended - started) / 1000);
  return {
    crawlId,
    state: counters.state,
    ...(counters.startedAt === undefined ? {} : { startedAt: counters.startedAt }),
    endedAt,
    ...(seconds === undefined
      ? {}
      : {
          seconds: Number(seconds.toFixed(3)),
          pagesPerSecond: Number((byOutcome.fetched / seconds).toFixed(2)),
        }),
    queued: counters.queued,
    done: counters.done,
    byOutcome,
    bytes: counters.bytes,
    requests: counters.requests,
  };
}

interface Item {
  message: ResultMessage;
  result: CrawlResult;
}

export async function processResultBatch(
  messages: readonly ResultMessage[],
  deps: AggregateDeps,
): Promise<AggregateReport> {
  const report: AggregateReport = {
    written: [],
    rejected: [],
    retry: [],
    duplicates: [],
    rewritten: [],
    counters: {},
    summaries: [],
  };
  const valid: Item[] = [];
  for (const message of messages) {
    const parsed = parseResultMessage(message.body);
    if (parsed.ok) valid.push({ message, result: parsed.result });
    else report.rejected.push({ id: message.id, reason: parsed.reason });
  }
  for (const [crawlId, items] of Map.groupBy(valid, (item) => item.result.crawlId))
    await processCrawl(crawlId, items, deps, report);
  return report;
}

export function parseResultMessage(
  body: string,
): { ok: true; result: CrawlResult } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, reason: `not JSON: ${(error as Error).message}` };
  }
  const parsed = ResultSchema.safeParse(json);
  if (parsed.success) return { ok: true, result: parsed.data };
  return {
    ok: false,
    reason: `not a result record: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
  };
}

async function processCrawl(
  crawlId: string,
  items: readonly Item[],
  deps: AggregateDeps,
  report: AggregateReport,
): Promise<void> {
  const now = deps.now ?? (() => new Date());
  // Two messages of one batch for one URL: both finalize; the loser is a plain duplicate.
  const winners: Array<Item & { created: boolean }> = [];
  const rewrites: Item[] = [];
  const outcomes = await mapLimit(items, deps.concurrency ?? DEFAULT_FINALIZE_CONCURRENCY, async (item) => {
    const { result } = item;
    return deps.frontier.finalize(crawlId, result.key, result.url, result.outcome);
  });
  for (const [i, outcome] of outcomes.entries()) {
    const item = items[i]!;
    if (outcome.status === 'rejected') {
      report.retry.push({ id: item.message.id, crawlId, reason: `finalize: ${describe(outcome.reason)}` });
    } else if (outcome.value.won) {
      winners.push({ ...item, created: outcome.value.created });
    } else if ((item.message.receiveCount ?? 1) > 1) {
      rewrites.push(item);
      report.rewritten.push({ id: item.message.id, crawlId, key: item.result.key });
    } else {
      report.duplicates.push({ id: item.message.id, crawlId, key: item.result.key });
    }
  }
  const lines = [...winners, ...rewrites];
  if (lines.length === 0) return;
  const fail = (step: string, error: unknown) => {
    for (const item of lines)
      report.retry.push({ id: item.message.id, crawlId, reason: `${step}: ${describe(error)}` });
  };

  // The rewrite path (rare: only after a crash or a failed step) reads the counters first, so that
  // results of a completed crawl are not counted again and its summary can be rewritten.
  let before: CrawlCounters | undefined;
  if (rewrites.length > 0) {
    try {
      before = await deps.frontier.readCounters(crawlId);
    } catch (error) {
      return fail('read counters', error);
    }
  }
  const crawlComplete = before?.state === 'complete';

  const part = lines.map((item) => indexLine(item.result)).sort(compareLines);
  const key = resultPartKey(crawlId, now(), deps.invocationId);
  try {
    await deps.blobs.put(key, gzipSync(part.map((line) => `${JSON.stringify(line)}\n`).join('')), JSONL);
  } catch (error) {
    return fail('write index part', error);
  }
  report.written.push({ crawlId, key, lines: part.length });

  const counted = crawlComplete ? winners : lines;
  let counters = before;
  if (counted.length > 0) {
    try {
      counters = await deps.frontier.addCounters(crawlId, deltasOf(counted));
    } catch (error) {
      return fail('add counters', error);
    }
  }
  if (!counters) return;
  report.counters[crawlId] = counters;

  let completedNow = false;
  if (counters.state === 'running' && counters.done >= counters.queued) {
    try {
      const confirmed = await deps.frontier.confirmCompletion(crawlId, now());
      completedNow = confirmed.completedNow;
      counters = confirmed.counters;
      report.counters[crawlId] = counters;
    } catch (error) {
      return fail('confirm completion', error);
    }
  }
  if (completedNow || (crawlComplete && counters.state === 'complete')) {
    const summary = summaryFromCounters(crawlId, counters, now());
    try {
      await deps.blobs.put(
        summaryKey(crawlId),
        new TextEncoder().encode(`${JSON.stringify(summary, null, 2)}\n`),
        'application/json',
      );
    } catch (error) {
      return fail('write summary', error);
    }
    report.summaries.push({ crawlId, key: summaryKey(crawlId), completedNow });
  }
}

const JSONL = 'application/x-ndjson';

function deltasOf(items: ReadonlyArray<Item & { created?: boolean }>): CounterDeltas {
  const byOutcome: Partial<Record<Outcome, number>> = {};
  let bytes = 0;
  let requests = 0;
  let queued = 0;
  for (const { result, created } of items) {
    byOutcome[result.outcome] = (byOutcome[result.outcome] ?? 0) + 1;
    bytes += result.bytes;
    if (result.status !== undefined) requests += 1;
    if (created) queued += 1;
  }
  return { done: items.length, queued, bytes, requests, byOutcome };
}

function compareLines(a: IndexLine, b: IndexLine): number {
  return a.urlkey < b.urlkey
    ? -1
    : a.urlkey > b.urlkey
      ? 1
      : a.timestamp < b.timestamp
        ? -1
        : a.timestamp > b.timestamp
          ? 1
          : 0;
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Like Promise.allSettled over `items`, with at most `limit` calls of `fn` in flight. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<Array<PromiseSettledResult<R>>> {
  const settled: Array<PromiseSettledResult<R>> = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      try {
        settled[index] = { status: 'fulfilled', value: await fn(items[index] as T, index) };
      } catch (reason) {
        settled[index] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return settled;
}
