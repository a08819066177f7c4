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
import { endEventMarkerKey, resultPartKey, resultsPrefix, summaryKey } from '../../shared/contracts.ts';
import { mapLimit } from '../../shared/map-limit.ts';
import { type IndexLine, indexLine } from '../archive/index.ts';
import { type Outcome, retryStep } from '../base/index.ts';
import {
  type CounterDeltas,
  type CrawlConfigReader,
  type CrawlCounters,
  DEFAULT_CRAWL_ID,
  type FinalizeOutcome,
  type FrontierFinalizer,
  type ResultStore,
} from '../crawl/index.ts';
import { type HurryDeps, hurryAwaitingHosts } from '../frontier/index.ts';
import { bareResult, type CrawlResult, parseResultsMessage } from '../results/index.ts';
import { type EventPublisher, endEvent, eventOf } from './crawl-events.ts';
import { summaryFromCounters } from './crawl-summary.ts';

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
  /** Results that had won before (a crash or a lost answer) and were written again (see the top of this file). */
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

export const DEFAULT_FINALIZE_CONCURRENCY = 16;

interface Item {
  message: ResultMessage;
  result: CrawlResult;
  /** The record's id (result-message.ts): finalize is idempotent for it. */
  rid: string;
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
    late: [],
    rewritten: [],
    counters: {},
    summaries: [],
    deferred: [],
    hurried: [],
  };
  const now = deps.now ?? (() => new Date());
  const outOfTime = () => deps.deadline !== undefined && now().getTime() >= deps.deadline;
  const valid: Item[] = [];
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

/** Confirms completion (when no host is active) and writes summary.json once. Throws on a failed call. */
async function complete(
  crawlId: string,
  before: CrawlCounters,
  deps: AggregateDeps & Checked,
  report: AggregateReport,
): Promise<CrawlCounters> {
  deps.checked.add(crawlId);
  // The default crawl takes bare URLs for ever: it is never complete (a completed crawl's counters
  // and summary are final, and it would keep taking messages). Its summary is its numbers so far.
  if (crawlId === DEFAULT_CRAWL_ID) {
    await writeSnapshot(crawlId, before, deps, report);
    return before;
  }
  // A crash between the state flip and the summary: whoever comes next writes it (once).
  if (before.state === 'complete') {
    await writeSummary(crawlId, before, false, deps, report);
    return before;
  }
  if (before.state !== 'running') return before;
  const now = deps.now ?? (() => new Date());
  const confirmed = await deps.frontier.confirmCompletion(crawlId, now(), (parts) =>
    allWritten(deps.blobs, crawlId, parts),
  );
  report.counters[crawlId] = confirmed.counters;
  // Complete but not by this call: also a flip whose answer was lost and is checked again (retryStep).
  if (confirmed.completedNow || confirmed.counters.state === 'complete')
    await writeSummary(crawlId, confirmed.counters, confirmed.completedNow, deps, report);
  return confirmed.counters;
}

async function writeSummary(
  crawlId: string,
  counters: CrawlCounters,
  completedNow: boolean,
  deps: AggregateDeps,
  report: AggregateReport,
): Promise<void> {
  const now = deps.now ?? (() => new Date());
  // Written once: a repeat after a crash between completion and this write writes it then.
  const summary = summaryFromCounters(crawlId, counters, now());
  const written = await deps.blobs.putIfAbsent(
    summaryKey(crawlId),
    new TextEncoder().encode(`${JSON.stringify(summary, null, 2)}\n`),
    'application/json',
  );
  if (written) report.summaries.push({ crawlId, key: summaryKey(crawlId), completedNow });
  await announceEnd(crawlId, counters, deps);
}

/**
 * The crawl's end event, once: published, then marked done (endEventMarkerKey). A repeat finds the
 * mark and publishes nothing; a crash between the publish and the mark publishes it again (the same
 * `eventId`).
 */
async function announceEnd(crawlId: string, counters: CrawlCounters, deps: AggregateDeps): Promise<void> {
  if (deps.events === undefined) return;
  const marker = endEventMarkerKey(crawlId);
  if (await deps.blobs.exists(marker)) return;
  const now = deps.now ?? (() => new Date());
  const at = counters.endedAt === undefined ? now() : new Date(counters.endedAt);
  const event = endEvent(
    crawlId,
    counters,
    { summaryKey: summaryKey(crawlId), resultsPrefix: resultsPrefix(crawlId) },
    at,
  );
  await deps.events.publisher.publish([event]);
  await deps.blobs.putIfAbsent(
    marker,
    new TextEncoder().encode(`${JSON.stringify(event)}\n`),
    'application/json',
  );
}

/** A re-crawl with `--page-events`: a `Page Changed` event for each of these lines that is not `same`. */
async function publishPageEvents(
  crawlId: string,
  items: readonly Item[],
  deps: AggregateDeps,
): Promise<void> {
  if (deps.events === undefined) return;
  const changed = items.filter((item) => item.result.change !== undefined && item.result.change !== 'same');
  if (changed.length === 0) return;
  const config = await deps.events.configs.get(crawlId);
  if (!config.pageEvents || config.since === undefined) return;
  const since = config.since;
  const at = (deps.now ?? (() => new Date()))().toISOString();
  await deps.events.publisher.publish(
    changed.map(({ result }) =>
      eventOf('pageChanged', {
        v: 1,
        eventId: `${crawlId}:page:${result.key}`,
        crawlId,
        at,
        url: result.url,
        key: result.key,
        change: result.change as 'new' | 'changed' | 'removed',
        ...(result.status === undefined ? {} : { status: result.status }),
        since,
      }),
    ),
  );
}

/** An open-ended crawl's summary, rewritten after each batch that counted its results: state `running`. */
async function writeSnapshot(
  crawlId: string,
  counters: CrawlCounters,
  deps: AggregateDeps,
  report: AggregateReport,
): Promise<void> {
  const now = deps.now ?? (() => new Date());
  const summary = summaryFromCounters(crawlId, counters, now());
  await deps.blobs.put(
    summaryKey(crawlId),
    new TextEncoder().encode(`${JSON.stringify(summary, null, 2)}\n`),
    'application/json',
  );
  report.summaries.push({ crawlId, key: summaryKey(crawlId), completedNow: false });
}

/** The crawls whose completion this batch has checked (once each). */
interface Checked {
  checked: Set<string>;
}

async function processCrawl(
  crawlId: string,
  items: readonly Item[],
  deps: AggregateDeps & Checked,
  report: AggregateReport,
): Promise<void> {
  const now = deps.now ?? (() => new Date());
  const part = resultPartKey(crawlId, now(), deps.invocationId);
  // One message sent twice (an SQS send retried after a lost answer) can arrive twice in one batch:
  // both copies would win (the second as a repeat), so the copies are dropped here.
  const byId = new Map<string, Item>();
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
    return;
  }
  const winners: Array<Item & FinalizeOutcome> = [];
  for (const [i, outcome] of finalized.entries()) {
    const item = unique[i]!;
    const value = (outcome as PromiseFulfilledResult<FinalizeOutcome>).value;
    if (value.won) winners.push({ ...item, ...value });
    else report.duplicates.push({ id: item.message.id, crawlId, key: item.result.key });
  }
  if (winners.length === 0) return;
  for (const item of winners)
    if (item.repeat) report.rewritten.push({ id: item.message.id, crawlId, key: item.result.key });
  let kept = winners;
  // A message is retried whole: its records that were done already come back as repeats.
  const fail = (step: string, error: unknown) => {
    for (const message of messagesOf(kept))
      report.retry.push({ id: message.id, crawlId, reason: `${step}: ${describe(error)}` });
  };

  // A repeat (rare: after a crash or a lost answer) or a URL the crawl never had reads the counters
  // first: a completed crawl's counters are final, and its summary may still have to be written.
  let before: CrawlCounters | undefined;
  if (winners.some((item) => item.repeat || item.created)) {
    try {
      before = await retryStep(() => deps.frontier.readCounters(crawlId));
    } catch (error) {
      return fail('read counters', error);
    }
  }
  // (The default crawl never completes; one stored as complete by an older version keeps counting.)
  const crawlComplete = before?.state === 'complete' && crawlId !== DEFAULT_CRAWL_ID;
  // The default crawl is open-ended (bare URLs join it at any time); any other crawl ends for good.
  const finished = before !== undefined && before.state !== 'running' && crawlId !== DEFAULT_CRAWL_ID;
  if (finished) {
    kept = winners.filter((item) => !item.created);
    for (const item of winners)
      if (item.created) report.late.push({ id: item.message.id, crawlId, url: item.result.url });
    if (kept.length === 0) return;
  }

  // A repeat whose earlier win's part exists has its line there already: written again it would
  // be a second line. One whose part is missing (a crash before the PUT) moves to this part.
  let fresh: typeof kept;
  try {
    fresh = await retryStep(() => unindexed(kept, part, crawlId, deps));
  } catch (error) {
    return fail('check earlier parts', error);
  }
  // Before the part: a publish that fails is retried with the batch, its lines still unwritten. A
  // failure after it publishes again (at least once; `eventId` tells a repeat).
  try {
    await retryStep(() => publishPageEvents(crawlId, fresh, deps));
  } catch (error) {
    return fail('publish page events', error);
  }
  const lines = fresh.flatMap((item) => linesOf(item.result)).sort(compareLines);
  if (lines.length > 0) {
    try {
      const body = gzipSync(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
      await retryStep(() => deps.blobs.put(part, body, JSONL));
    } catch (error) {
      return fail('write index part', error);
    }
    report.written.push({ crawlId, key: part, lines: lines.length });
  }

  let counters = before;
  if (!crawlComplete) {
    try {
      // An ADD repeated after a lost answer counts twice: counters are hints, rewritten exactly at
      // completion; failing the batch instead would make every winner a repeat.
      counters = await retryStep(() => deps.frontier.addCounters(crawlId, deltasOf(kept)));
    } catch (error) {
      return fail('add counters', error);
    }
  }
  if (!counters) return;
  report.counters[crawlId] = counters;

  // At the crawl's end only (every URL admitted has a result, as the counters' hints tell): a host
  // out of URLs mid-crawl is mostly woken again by other hosts' links moments later, and draining it
  // at once made it drain and wake again, more visits for nothing (docs/frontier.md, "Hurry").
  // After the part is written: the visit it calls may drain the host, which needs the part.
  if (deps.hurry && counters.state === 'running' && counters.done >= counters.queued) {
    const hurryDeps = { ...deps.hurry, now: () => now().getTime() };
    // A host not hurried is visited at its own recheck: a failure here costs time, not results.
    const hosts = await hurryAwaitingHosts(crawlId, hurryDeps).catch(() => 0);
    if (hosts > 0) report.hurried.push({ crawlId, hosts });
  }

  // Completion is confirmed from the hosts (none active) rather than guessed from the counters.
  try {
    const known = counters;
    if (known.state === 'running' || crawlComplete)
      await retryStep(() => complete(crawlId, known, deps, report));
  } catch (error) {
    return fail('confirm completion', error);
  }
}

/**
 * The winners whose line this batch must write: first wins, and repeats whose earlier part does not
 * exist (those are pointed at `part` first, so a failed PUT leaves them pointing at a missing part
 * and completion waits for their next delivery). One HEAD per distinct earlier part.
 */
async function unindexed<T extends Item & FinalizeOutcome>(
  winners: readonly T[],
  part: string,
  crawlId: string,
  deps: AggregateDeps,
): Promise<T[]> {
  const earlier = new Map<string, Promise<boolean>>();
  const fresh: T[] = [];
  for (const item of winners) {
    if (item.part === undefined || item.part === part) {
      fresh.push(item);
      continue;
    }
    let exists = earlier.get(item.part);
    if (!exists) {
      exists = deps.blobs.exists(item.part);
      earlier.set(item.part, exists);
    }
    if (await exists) continue;
    await deps.frontier.repoint(crawlId, item.result.url, item.result.key, item.rid, part);
    fresh.push(item);
  }
  return fresh;
}

/** Whether every one of `parts` (index part keys of the crawl) exists: one listing of the crawl's parts. */
async function allWritten(blobs: ResultStore, crawlId: string, parts: ReadonlySet<string>): Promise<boolean> {
  if (parts.size === 0) return true;
  const missing = new Set(parts);
  for await (const key of blobs.list(resultsPrefix(crawlId))) {
    missing.delete(key);
    if (missing.size === 0) return true;
  }
  return false;
}

/** A result's index lines: its own (without what it carries), then one per skipped link it carries. */
function linesOf({ skipped, ...result }: CrawlResult): IndexLine[] {
  return [
    indexLine(result),
    // Found when its page was fetched: the page's time, as the record has it.
    ...(skipped ?? []).map(({ code, reason, ...link }) =>
      indexLine({
        ...bareResult({ crawlId: result.crawlId, ...link }, 'skipped', FOUND_AT, { code, reason }),
        fetchedAt: result.fetchedAt,
      }),
    ),
  ];
}

/** Replaced by the page's `fetchedAt` (a string the schema does not parse). */
const FOUND_AT = new Date(0);

/** The messages that carried `items`, each once. */
function messagesOf(items: readonly Item[]): ResultMessage[] {
  return [...new Set(items.map((item) => item.message))];
}

const JSONL = 'application/x-ndjson';

function deltasOf(items: ReadonlyArray<Item & { created?: boolean }>): CounterDeltas {
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
