/**
 * The aggregate function's work for one batch of result messages (docs/frontier.md, "Finalize",
 * "Completion" and "Counters"), over ports only:
 *
 *   validate → finalize each result (bounded parallelism) → one gzip JSONL index part per crawl →
 *   one `addCounters` per crawl → completion check → `crawls/<crawlId>/summary.json` once.
 *
 * The `default` crawl (bare URLs) never completes: it has no check, and its summary.json is rewritten
 * from its counters after each batch that counts its results (docs/deploy.md).
 *
 * Completion comes from the hosts, not from the counters: a visit that finds its host drained records
 * the host's exact counts (`DONE#<host>`) and deletes its host item, so the crawl is complete when no
 * host is active; `confirmCompletion` then sums the drained hosts' tallies (O(hosts)). The check runs
 * for every running crawl whose results the batch finalized, and for every crawl a `drained` record
 * (sent by the visit that drained a host) names, so it also runs when no result follows the last drain.
 *
 * ## Why finalize, then write (and how a crash or a fault loses nothing)
 *
 * Only the result that wins `finalize` (the conditional update of its URL item to `done`, recording
 * the result's id and the index part its line goes to) becomes an index line and is counted, so a
 * second result for a URL (a URL fetched twice) never yields a second line.
 * The same result finalized again (its id matches) wins again, as a `repeat`: an SDK retry of a
 * finalize whose answer was lost, or a redelivery after a crash or a failed step. The URL item keeps
 * the part its first win named, and a repeat looks there first (one HEAD per distinct part), so:
 *
 * A page's result may carry its skipped links (`skipped`: docs/frontier.md, "Skipped links"): their
 * lines go with the page's line, to the same part, under the same rule, and finalize records how many
 * on the page's URL item (`kids`), so its host's tally counts them. Their URL items were created done
 * at admission, so no other result ever wins them: each is one line, written when its page's is.
 *
 * - crash (or failure) before the part is written: the URLs point at a part that does not exist;
 *   the messages are redelivered, win as repeats, find the part missing, point the URL at their own
 *   part and write their lines there. Completion is never confirmed while a done URL points at a
 *   missing part (`confirmCompletion`'s `partsWritten`).
 * - crash (or a failed later step) after the part PUT: the repeat finds its line in the part its URL
 *   names and writes nothing. A line is written twice only when two invocations hold one message at
 *   once (its visibility ran out while the first still worked) or one result was sent twice and the
 *   copies race; the lines are identical, and readers keep the first per `key`. Never lost, and
 *   never written for a second result.
 * - counters: the ADDs of `addCounters` may count a repeat twice; they are hints for `crawler status`
 *   and completion never uses their numbers. It rewrites every counter from the sum of the drained hosts'
 *   `DONE#` tallies (each made by the visit that drained the host, from its URL items), so a completed
 *   crawl's numbers are exact. Once a crawl is complete nothing is counted again.
 * - crash between `confirmCompletion` (state → complete, true for exactly one caller) and the
 *   summary PUT: the redelivered messages are repeats, see the crawl complete and write the summary
 *   (`putIfAbsent`: it is written once).
 *
 * Every step is repeated in the function a few times before it fails the batch (finalize, the PUT,
 * reads and completion are idempotent; a repeated counter ADD only skews hints). A batch that failed
 * comes back whole, as repeats, so a step that failed it each time would walk a whole batch into
 * the ResultsDLQ, and a result parked there holds its host's visit until it is redriven. If finalize
 * keeps failing, every message of that crawl in the batch is retried and nothing is written. Any
 * later step that keeps failing (PUT, counters, completion, summary) makes the winners batch item
 * failures: they come back as repeats. Messages that are not result records are `rejected` (batch
 * item failures too) so they end in the ResultsDLQ.
 *
 * Time: with `deadline`, no crawl's results are started after it; the messages left are `deferred`
 * (nothing was done for them), and the handler sends them again as new messages, so running out of
 * time never spends a receive toward the DLQ (docs/failure-model.md, "Deadlines").
 */
import { gzipSync } from 'node:zlib';
import { resultPartKey } from '../../shared/contracts.ts';
import { mapLimit } from '../../shared/map-limit.ts';
import { type Outcome, retryStep } from '../base/index.ts';
import {
  type CounterDeltas,
  type CrawlCounters,
  DEFAULT_CRAWL_ID,
  type FinalizeOutcome,
} from '../crawl/index.ts';
import { hurryAwaitingHosts } from '../frontier/index.ts';
import { parseResultsMessage } from '../results/index.ts';
import { publishPageEvents } from './aggregate-events.ts';
import type {
  AggregateDeps,
  AggregateReport,
  CheckedCrawls,
  ResultItem,
  ResultMessage,
} from './aggregate-types.ts';
import { complete } from './crawl-completion.ts';
import { compareLines, JSONL, linesOf, unindexed } from './index-part.ts';

export const DEFAULT_FINALIZE_CONCURRENCY = 16;

export async function processResultBatch(
  messages: readonly ResultMessage[],
  deps: AggregateDeps,
): Promise<AggregateReport> {
  const report: AggregateReport = {
    written: [],
    rejected: [],
    retry: [],
    duplicates: [],
    late: [],
    rewritten: [],
    counters: {},
    summaries: [],
    deferred: [],
    hurried: [],
  };
  const now = deps.now ?? (() => new Date());
  const outOfTime = () => deps.deadline !== undefined && now().getTime() >= deps.deadline;
  const valid: ResultItem[] = [];
  const drained = new Map<string, ResultMessage[]>();
  for (const message of messages) {
    const record = parseDrainedRecord(message.body);
    if (record) {
      drained.set(record.crawlId, [...(drained.get(record.crawlId) ?? []), message]);
      continue;
    }
    const parsed = parseResultsMessage(message.body);
    if (parsed.ok) for (const { result, rid } of parsed.results) valid.push({ message, result, rid });
    else report.rejected.push({ id: message.id, reason: parsed.reason });
  }
  const checked = new Set<string>();
  // One crawl's results at a time, each started only before the deadline: a crawl's results are
  // one unit (one index part), never cut in the middle.
  const skipped = new Set<string>();
  for (const [crawlId, items] of Map.groupBy(valid, (item) => item.result.crawlId)) {
    if (outOfTime()) {
      skipped.add(crawlId);
      for (const message of new Set(items.map((item) => item.message)))
        report.deferred.push({ id: message.id, crawlId });
      continue;
    }
    await processCrawl(crawlId, items, { ...deps, checked }, report);
  }
  // A drained host: completion is checked here unless this batch's results of the crawl did (they
  // may not have: all of them lost finalize, or came late).
  for (const [crawlId, records] of drained) {
    if (checked.has(crawlId)) continue;
    if (skipped.has(crawlId) || outOfTime()) {
      for (const message of records) report.deferred.push({ id: message.id, crawlId });
      continue;
    }
    try {
      await retryStep(async () => {
        const counters = await deps.frontier.readCounters(crawlId);
        if (counters) await complete(crawlId, counters, { ...deps, checked }, report);
      });
    } catch (error) {
      for (const message of records)
        report.retry.push({ id: message.id, crawlId, reason: `confirm completion: ${describe(error)}` });
    }
  }
  return report;
}

/** Sent by a visit that drained a host (fetch-batch.ts), so completion is checked even if no result follows. */
export interface DrainedRecord {
  v: 1;
  kind: 'drained';
  crawlId: string;
}

function parseDrainedRecord(body: string): DrainedRecord | undefined {
  if (!body.includes('"drained"')) return undefined;
  try {
    const json = JSON.parse(body) as Partial<DrainedRecord>;
    return json.v === 1 && json.kind === 'drained' && typeof json.crawlId === 'string'
      ? { v: 1, kind: 'drained', crawlId: json.crawlId }
      : undefined;
  } catch {
    return undefined;
  }
}

type Winner = ResultItem & FinalizeOutcome;

/** One crawl's winners of the batch on their way to its index part, its counters and completion. */
interface CrawlWrite {
  crawlId: string;
  /** This batch's index part of the crawl. */
  part: string;
  deps: AggregateDeps & CheckedCrawls;
  report: AggregateReport;
  /** The winners written and counted: all of them, but the late ones of a finished crawl. */
  kept: Winner[];
}

async function processCrawl(
  crawlId: string,
  items: readonly ResultItem[],
  deps: AggregateDeps & CheckedCrawls,
  report: AggregateReport,
): Promise<void> {
  const now = deps.now ?? (() => new Date());
  const part = resultPartKey(crawlId, now(), deps.invocationId);
  const winners = await finalizeAll(crawlId, items, part, deps, report);
  if (winners === undefined || winners.length === 0) return;
  for (const item of winners)
    if (item.repeat) report.rewritten.push({ id: item.message.id, crawlId, key: item.result.key });
  const write: CrawlWrite = { crawlId, part, deps, report, kept: winners };

  // A repeat (rare: after a crash or a lost answer) or a URL the crawl never had reads the counters
  // first: a completed crawl's counters are final, and its summary may still have to be written.
  let before: CrawlCounters | undefined;
  if (winners.some((item) => item.repeat || item.created)) {
    try {
      before = await retryStep(() => deps.frontier.readCounters(crawlId));
    } catch (error) {
      return fail(write, 'read counters', error);
    }
  }
  // (The default crawl never completes; one stored as complete by an older version keeps counting.)
  const crawlComplete = before?.state === 'complete' && crawlId !== DEFAULT_CRAWL_ID;
  // The default crawl is open-ended (bare URLs join it at any time); any other crawl ends for good.
  const finished = before !== undefined && before.state !== 'running' && crawlId !== DEFAULT_CRAWL_ID;
  if (finished) {
    write.kept = winners.filter((item) => !item.created);
    for (const item of winners)
      if (item.created) report.late.push({ id: item.message.id, crawlId, url: item.result.url });
    if (write.kept.length === 0) return;
  }
  if (!(await writeIndexPart(write))) return;

  let counters = before;
  if (!crawlComplete) {
    try {
      // An ADD repeated after a lost answer counts twice: counters are hints, rewritten exactly at
      // completion; failing the batch instead would make every winner a repeat.
      counters = await retryStep(() => deps.frontier.addCounters(crawlId, deltasOf(write.kept)));
    } catch (error) {
      return fail(write, 'add counters', error);
    }
  }
  if (!counters) return;
  report.counters[crawlId] = counters;
  await hurryAtEnd(write, counters);

  // Completion is confirmed from the hosts (none active) rather than guessed from the counters.
  try {
    const known = counters;
    if (known.state === 'running' || crawlComplete)
      await retryStep(() => complete(crawlId, known, deps, report));
  } catch (error) {
    return fail(write, 'confirm completion', error);
  }
}

/**
 * Finalizes the crawl's results of the batch, each once: the winners, in order, or undefined when
 * a finalize kept failing (every message of the crawl in the batch is then retried).
 */
async function finalizeAll(
  crawlId: string,
  items: readonly ResultItem[],
  part: string,
  deps: AggregateDeps,
  report: AggregateReport,
): Promise<Winner[] | undefined> {
  // One message sent twice (an SQS send retried after a lost answer) can arrive twice in one batch:
  // both copies would win (the second as a repeat), so the copies are dropped here.
  const byId = new Map<string, ResultItem>();
  for (const item of items) {
    if (byId.has(item.rid)) report.duplicates.push({ id: item.message.id, crawlId, key: item.result.key });
    else byId.set(item.rid, item);
  }
  const unique = [...byId.values()];
  const finalized = await mapLimit(
    unique,
    deps.concurrency ?? DEFAULT_FINALIZE_CONCURRENCY,
    ({ rid, result }) =>
      // Finalize is idempotent for one result (its id), so a failed call is simply made again.
      retryStep(() =>
        deps.frontier.finalize(crawlId, {
          key: result.key,
          url: result.url,
          outcome: result.outcome,
          bytes: result.bytes,
          requests: result.status === undefined ? 0 : 1,
          rid,
          part,
          ...(result.skipped?.length ? { kids: result.skipped.length } : {}),
        }),
      ),
  );
  const failed = finalized.find((outcome) => outcome.status === 'rejected');
  if (failed) {
    // Some URLs now point at `part`, which is not written: completion waits until their retries
    // (every message of the crawl in this batch) have written them to a part of their own.
    for (const message of messagesOf(items))
      report.retry.push({ id: message.id, crawlId, reason: `finalize: ${describe(failed.reason)}` });
    return undefined;
  }
  const winners: Winner[] = [];
  for (const [i, outcome] of finalized.entries()) {
    const item = unique[i]!;
    const value = (outcome as PromiseFulfilledResult<FinalizeOutcome>).value;
    if (value.won) winners.push({ ...item, ...value });
    else report.duplicates.push({ id: item.message.id, crawlId, key: item.result.key });
  }
  return winners;
}

/** The kept winners' lines in this batch's part, after their page events; false once a step failed. */
async function writeIndexPart(write: CrawlWrite): Promise<boolean> {
  const { crawlId, part, deps, report } = write;
  // A repeat whose earlier win's part exists has its line there already: written again it would
  // be a second line. One whose part is missing (a crash before the PUT) moves to this part.
  let fresh: Winner[];
  try {
    fresh = await retryStep(() => unindexed(write.kept, part, crawlId, deps));
  } catch (error) {
    fail(write, 'check earlier parts', error);
    return false;
  }
  // Before the part: a publish that fails is retried with the batch, its lines still unwritten. A
  // failure after it publishes again (at least once; `eventId` tells a repeat).
  try {
    await retryStep(() => publishPageEvents(crawlId, fresh, deps));
  } catch (error) {
    fail(write, 'publish page events', error);
    return false;
  }
  const lines = fresh.flatMap((item) => linesOf(item.result)).sort(compareLines);
  if (lines.length > 0) {
    try {
      const body = gzipSync(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
      await retryStep(() => deps.blobs.put(part, body, JSONL));
    } catch (error) {
      fail(write, 'write index part', error);
      return false;
    }
    report.written.push({ crawlId, key: part, lines: lines.length });
  }
  return true;
}

/**
 * At the crawl's end only (every URL admitted has a result, as the counters' hints tell): a host
 * out of URLs mid-crawl is mostly woken again by other hosts' links moments later, and draining it
 * at once made it drain and wake again, more visits for nothing (docs/frontier.md, "Hurry").
 * After the part is written: the visit it calls may drain the host, which needs the part.
 */
async function hurryAtEnd({ crawlId, deps, report }: CrawlWrite, counters: CrawlCounters): Promise<void> {
  if (deps.hurry && counters.state === 'running' && counters.done >= counters.queued) {
    const now = deps.now ?? (() => new Date());
    const hurryDeps = { ...deps.hurry, now: () => now().getTime() };
    // A host not hurried is visited at its own recheck: a failure here costs time, not results.
    const hosts = await hurryAwaitingHosts(crawlId, hurryDeps).catch(() => 0);
    if (hosts > 0) report.hurried.push({ crawlId, hosts });
  }
}

/** A step failed: a message is retried whole, and its records that were done already come back as repeats. */
function fail({ crawlId, report, kept }: CrawlWrite, step: string, error: unknown): void {
  for (const message of messagesOf(kept))
    report.retry.push({ id: message.id, crawlId, reason: `${step}: ${describe(error)}` });
}

/** The messages that carried `items`, each once. */
function messagesOf(items: readonly ResultItem[]): ResultMessage[] {
  return [...new Set(items.map((item) => item.message))];
}

function deltasOf(items: ReadonlyArray<ResultItem & { created?: boolean }>): CounterDeltas {
  const byOutcome: Partial<Record<Outcome, number>> = {};
  let bytes = 0;
  let requests = 0;
  let queued = 0;
  let kids = 0;
  for (const { result, created } of items) {
    byOutcome[result.outcome] = (byOutcome[result.outcome] ?? 0) + 1;
    const carried = result.skipped?.length ?? 0;
    if (carried > 0) byOutcome.skipped = (byOutcome.skipped ?? 0) + carried;
    kids += carried;
    bytes += result.bytes;
    if (result.status !== undefined) requests += 1;
    if (created) queued += 1;
  }
  return { done: items.length + kids, queued, bytes, requests, byOutcome };
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
