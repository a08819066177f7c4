/**
 * The scale simulation (issue 23, deliverable 1): `npm run bench -- --only scale`.
 *
 * The real core (lambdas/core/batches/fetch-batch.ts `processFetchBatch` with its visits, link admission and
 * pacing; lambdas/core/batches/aggregate-batch.ts `processResultBatch` with finalize, index parts and
 * completion; the submit's seed admission) runs on the in-memory fakes of test/fakes/, metered as the
 * adapters' AWS requests (test/fakes/metered-ports.ts: latencies, DynamoDB partition throughput and
 * throttling, item and message limits, the price table) on a virtual clock (test/fakes/virtual-clock.ts),
 * fed by SQS queues and Lambda event sources with the stack's settings (test/fakes/sim-queue.ts:
 * batch size, batching window, maximum concurrency, visibility timeout, maxReceiveCount, the function
 * timeout enforced), against a synthetic web (bench/scale-web.ts). Only the network and AWS are
 * simulated: the handlers' own few lines (deadline, hand-backs) are repeated here, thin.
 *
 * It must end exact and complete: every planned URL one result line, every page requested once
 * (robots.txt once per host), nothing in any DLQ, summary.json written once.
 *
 * Options: --seed N (1), --hosts N (10000), --urls N (1000000), --seeds N (urls / 10), --json FILE,
 * --max-hours H (virtual hours after which the run stops and reports what it got, not exact; 72).
 */
import { writeFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import {
  AGGREGATE_EVENT_SOURCE,
  AGGREGATE_FUNCTION,
  FETCH_EVENT_SOURCE,
  FETCH_FUNCTION,
  QUEUE,
} from '../cdk/limits.ts';
import { backoffSeconds, LruSet, RETRY_BACKOFF } from '../lambdas/core/base/index.ts';
import {
  type FetchBatchDeps,
  processFetchBatch,
  processResultBatch,
  type ResultMessage,
  type VisitOutcome,
} from '../lambdas/core/batches/index.ts';
import { parseCrawlConfig, type TaskSender } from '../lambdas/core/crawl/index.ts';
import { admitLinks } from '../lambdas/core/frontier/index.ts';
import { createRobotsCache } from '../lambdas/core/robots/index.ts';
import { costOf, perMillionPages } from '../lambdas/shared/aws-prices.ts';
import { resultsPrefix, summaryKey } from '../lambdas/shared/contracts.ts';
import { AwsMeter } from '../test/fakes/aws-meter.ts';
import { MemoryBlobs } from '../test/fakes/blobs.ts';
import { MemoryCrawlConfigs } from '../test/fakes/crawl-configs.ts';
import { MemoryFrontierFinalizer } from '../test/fakes/frontier-finalizer.ts';
import { MemoryFrontierUrls } from '../test/fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../test/fakes/host-visits.ts';
import {
  configBytes,
  MeteredBlobs,
  MeteredConfigs,
  MeteredCrawlStates,
  MeteredDeadLetters,
  MeteredFinalizer,
  MeteredFrontierUrls,
  MeteredHostVisits,
  MeteredResultSender,
  MeteredRobots,
  MeteredTaskSender,
} from '../test/fakes/metered-ports.ts';
import { MemoryRobotsStore } from '../test/fakes/robots-store.ts';
import {
  type FunctionUsage,
  type Invocation,
  type QueuedMessage,
  runEventSource,
  SimQueue,
} from '../test/fakes/sim-queue.ts';
import { VirtualClock } from '../test/fakes/virtual-clock.ts';
import { mulberry32, ScaleWeb } from './scale-web.ts';

export interface ScaleOptions {
  seed: number;
  hosts: number;
  urls: number;
  seeds?: number;
  maxHours?: number;
  /** Progress lines (virtual time, pages, queues) every virtual 10 minutes. */
  progress?: (line: string) => void;
}

export interface ScaleReport {
  exact: boolean;
  /** Why not exact (empty when exact). */
  problems: string[];
  seed: number;
  hosts: number;
  urls: number;
  seeds: number;
  planned: number;
  resultLines: number;
  fetchedPages: number;
  virtualSeconds: number;
  pagesPerSecond: number;
  boundPagesPerSecond: number;
  ratioToBound: number;
  shortGaps: number;
  minGapMs: number;
  writesPerPage: Record<string, number>;
  readsPerPage: Record<string, number>;
  writeUnitsPerPage: number;
  readUnitsPerPage: number;
  peakWcu: { pk: string; units: number };
  peakRcu: { pk: string; units: number };
  /** The peaks over the crawl's own keys (`CRAWL#<id>`, its shards `CRAWL#<id>#NN`). */
  peakCrawlWcu: { pk: string; units: number };
  peakCrawlRcu: { pk: string; units: number };
  largestItem: { kind: string; bytes: number };
  configItemBytes: number;
  throttledRequests: number;
  throttleFailures: number;
  limitViolations: Record<string, number>;
  visitsPerHost: number;
  /** Visit messages dropped (the host held, stale or idle), less the copies of hurried visits. */
  duplicateVisits: number;
  /** Visits the aggregate sent at once to hosts awaiting the results it wrote (core/frontier/host-hurry.ts). */
  hurriedVisits: number;
  visitsByEnd: Record<string, number>;
  invocations: { fetch: number; aggregate: number };
  timedOutInvocations: number;
  costPerMillionPages: { lambda: number; sqs: number; s3: number; dynamodb: number; total: number };
  lambdaGbSecondsPerPage: number;
  requestsPerPage: Record<string, number>;
  dlq: { task: number; results: number; deadLetters: number };
  summaryWrites: number;
  wallSeconds: number;
  events: number;
}

const CRAWL_ID = 'scale';
const START = Date.UTC(2026, 0, 1);
/** lambdas/fetch/handler.ts: the sends' reserve before the timeout, 10 s or a quarter of a short one. */
const SEND_RESERVE_MS = 10_000;
const SEND_RESERVE_SHARE = 0.25;
/** lambdas/aggregate/handler.ts reserveMs: 20 s, or a third of a short timeout, at least 1 s. */
const aggregateReserveMs = (remaining: number) => Math.min(20_000, Math.max(1_000, remaining / 3));
/** lambdas/submission/submit-crawl.ts: seeds admitted and sent 500 at a time. */
const SUBMIT_CHUNK = 500;
/** Per-container caches, as lambdas/fetch/fetch-deps.ts sizes them. */
const SEEN_CACHE_ENTRIES = 100_000;
const WRITTEN_PARTS_CACHE_ENTRIES = 10_000;
const PROGRESS_EVERY_MS = 10 * 60_000;

/** cdk/queue-with-dlq.ts visibilityTimeoutFor: 6x the function timeout plus the batching window. */
const visibilityMs = (timeoutSeconds: number, windowSeconds: number) =>
  (QUEUE.visibilityTimeoutFactor * timeoutSeconds + windowSeconds) * 1000;

/** Freezes a port of an abandoned invocation: nothing it starts after its timeout ends or takes effect. */
function frozenWhenKilled<T extends object>(port: T, invocation: Invocation): T {
  const never = new Promise<never>(() => {});
  return new Proxy(port, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (invocation.killed) return never;
        const out = value.apply(target, args);
        if (!(out instanceof Promise)) return out;
        return out.then(
          (answer) => (invocation.killed ? never : answer),
          (error: unknown) => (invocation.killed ? never : Promise.reject(error)),
        );
      };
    },
  });
}

export async function runScale(options: ScaleOptions): Promise<ScaleReport> {
  const wallStart = performance.now();
  const clock = new VirtualClock(START);
  const restore = clock.install();
  try {
    return await simulate(options, clock, wallStart);
  } finally {
    restore();
  }
}

async function simulate(options: ScaleOptions, clock: VirtualClock, wallStart: number): Promise<ScaleReport> {
  const meter = new AwsMeter(clock, mulberry32(options.seed ^ 0xa3));
  const web0 = { seed: options.seed, hosts: options.hosts, urls: options.urls };
  const seedList = new ScaleWeb(web0, clock, 0).seeds(options.seeds);
  const config = parseCrawlConfig({ crawlId: CRAWL_ID, seeds: seedList });
  const web = new ScaleWeb(web0, clock, config.delayMs);

  // The fakes, wrapped in the adapters' AWS requests.
  const urls = new MemoryFrontierUrls();
  const hosts = new MemoryHostVisits();
  const finalizer = new MemoryFrontierFinalizer(urls, hosts);
  const robots = new MemoryRobotsStore();
  const configs = new MemoryCrawlConfigs();
  const bucket = new MemoryBlobs();
  const lines = new Map<string, number>();
  const parts = new Set<string>();
  let partRewrites = 0;
  let summaryWrites = 0;
  const empty = new Uint8Array(0);
  bucket.afterWrite = ({ key }) => {
    const body = bucket.objects.get(key);
    if (key.startsWith(resultsPrefix(CRAWL_ID))) {
      if (parts.has(key)) {
        partRewrites++;
      } else if (body) {
        parts.add(key);
        for (const line of gunzipSync(body).toString('utf8').split('\n')) {
          if (line.trim() === '') continue;
          const url = (JSON.parse(line) as { url: string }).url;
          lines.set(url, (lines.get(url) ?? 0) + 1);
        }
      }
    }
    if (key === summaryKey(CRAWL_ID)) summaryWrites++;
    // WARC bodies and parts are not kept: their keys (exists, list) are all the crawl reads back.
    else if (body) bucket.objects.set(key, empty);
  };
  const mUrls = new MeteredFrontierUrls(urls, meter);
  const mHosts = new MeteredHostVisits(hosts, meter);
  const mRobots = new MeteredRobots(robots, meter);
  const mFinalizer = new MeteredFinalizer(finalizer, mUrls, mHosts, meter);
  const mBlobs = new MeteredBlobs(bucket, meter);

  const taskQueue = new SimQueue('task', clock, {
    visibilityMs: visibilityMs(FETCH_FUNCTION.timeoutSeconds, FETCH_EVENT_SOURCE.maxBatchingWindowSeconds),
    maxReceiveCount: QUEUE.maxReceiveCount,
  });
  const resultsQueue = new SimQueue('results', clock, {
    visibilityMs: visibilityMs(
      AGGREGATE_FUNCTION.timeoutSeconds,
      AGGREGATE_EVENT_SOURCE.maxBatchingWindowSeconds,
    ),
    maxReceiveCount: QUEUE.maxReceiveCount,
  });
  const deadLetterSink = new SimQueue('task-dlq', clock, { visibilityMs: 0, maxReceiveCount: 1 });
  const tasks = new MeteredTaskSender(meter, taskQueue);
  /** Tickets of hurried visits: each is a second copy of a message, one of which is dropped by design. */
  const hurried = new Set<string>();
  const hurryTasks: TaskSender = {
    sendVisits: async (visits) => {
      for (const { visit } of visits) if (visit.ticket !== undefined) hurried.add(visit.ticket);
      await tasks.sendVisits(visits);
    },
  };
  const results = new MeteredResultSender(meter, resultsQueue);
  const deadLetters = new MeteredDeadLetters(meter, deadLetterSink);

  // One warm container per concurrency slot: what fetch-deps.ts keeps between invocations.
  const containers = Array.from({ length: FETCH_EVENT_SOURCE.maxConcurrency }, () => {
    const writtenParts = new LruSet(WRITTEN_PARTS_CACHE_ENTRIES);
    return {
      configs: new MeteredConfigs(configs, meter),
      crawlStates: new MeteredCrawlStates(finalizer, meter, clock.now),
      robotsCache: createRobotsCache(),
      seen: new LruSet(SEEN_CACHE_ENTRIES),
      partExists: async (key: string) => {
        if (writtenParts.has(key)) return true;
        const exists = await mBlobs.exists(key);
        if (exists) writtenParts.add(key);
        return exists;
      },
    };
  });
  const fetcher = web.fetcher();
  const outcomes: VisitOutcome[] = [];
  let summaryAt: number | undefined;
  const fetchHandler = async (messages: QueuedMessage[], invocation: Invocation, slot: number) => {
    const container = containers[slot]!;
    const freeze = <T extends object>(port: T) => frozenWhenKilled(port, invocation);
    const remainingMs = invocation.end - clock.now();
    const reserve = Math.min(SEND_RESERVE_MS, remainingMs * SEND_RESERVE_SHARE);
    const deps: FetchBatchDeps = {
      fetcher: freeze(fetcher),
      configs: freeze(container.configs),
      frontier: freeze(mUrls),
      hosts: freeze(mHosts),
      robots: freeze(mRobots),
      robotsCache: container.robotsCache,
      crawlStates: freeze(container.crawlStates),
      seen: container.seen,
      blobs: freeze(mBlobs),
      partExists: (key) => freeze({ run: container.partExists }).run(key),
      results: freeze(results),
      tasks: freeze(tasks),
      deadLetters: freeze(deadLetters),
      invocationId: invocation.id,
      deadline: invocation.end - reserve,
      end: invocation.end,
      now: clock.now,
      sleep: (ms) => freeze({ sleep: clock.sleep }).sleep(ms),
    };
    const report = await processFetchBatch(messages, deps);
    outcomes.push(...report.outcomes);
    return report.retries.map((retry) => ({ id: retry.id, seconds: retry.delaySeconds }));
  };
  const aggregateHandler = async (messages: QueuedMessage[], invocation: Invocation) => {
    const remaining = invocation.end - clock.now();
    const report = await processResultBatch(messages as ResultMessage[], {
      frontier: frozenWhenKilled(mFinalizer, invocation),
      blobs: frozenWhenKilled(mBlobs, invocation),
      hurry: { hosts: frozenWhenKilled(mHosts, invocation), tasks: frozenWhenKilled(hurryTasks, invocation) },
      invocationId: invocation.id,
      now: () => new Date(clock.now()),
      deadline: clock.now() + remaining - aggregateReserveMs(remaining),
    });
    if (report.summaries.length > 0 && summaryAt === undefined) summaryAt = clock.now();
    const byId = new Map(messages.map((message) => [message.id, message]));
    const deferred = report.deferred.flatMap(({ id }) => byId.get(id) ?? []);
    await frozenWhenKilled(results, invocation).sendRaw(deferred.map((m) => m.body));
    return [
      ...report.rejected.map(({ id }) => ({ id, seconds: 0 })),
      ...report.retry.map(({ id }) => ({
        id,
        seconds: backoffSeconds(byId.get(id)?.receiveCount ?? 1, RETRY_BACKOFF.failedMessage),
      })),
    ];
  };

  const finished = () => summaryAt !== undefined && taskQueue.size === 0 && resultsQueue.size === 0;
  // Past --max-hours the event sources stop and the run reports what it got (not exact: not complete).
  const maxMs = (options.maxHours ?? 72) * 3_600_000;
  const stopped = () => finished() || clock.now() - submittedAt >= maxMs;
  let fetchUsage: FunctionUsage | undefined;
  let aggregateUsage: FunctionUsage | undefined;
  const submittedAt = clock.now();
  const main = async () => {
    await submit();
    options.progress?.(
      `submitted ${config.seeds.length} seeds in ${((clock.now() - submittedAt) / 1000).toFixed(0)} s virtual, ` +
        `${Math.round((performance.now() - wallStart) / 1000)} s wall`,
    );
    const progress = async () => {
      while (!stopped()) {
        await clock.sleep(PROGRESS_EVERY_MS);
        options.progress?.(
          `${((clock.now() - submittedAt) / 3_600_000).toFixed(2)} h virtual: ${lines.size} result lines, ` +
            `${web.requests} requests, queues ${taskQueue.size} tasks / ${resultsQueue.size} results, ` +
            `${Math.round((performance.now() - wallStart) / 1000)} s wall`,
        );
      }
    };
    [fetchUsage, aggregateUsage] = await Promise.all([
      runEventSource(
        taskQueue,
        clock,
        meter,
        { ...FETCH_EVENT_SOURCE, ...FETCH_FUNCTION },
        fetchHandler,
        stopped,
      ),
      runEventSource(
        resultsQueue,
        clock,
        meter,
        { ...AGGREGATE_EVENT_SOURCE, ...AGGREGATE_FUNCTION },
        (messages, invocation) => aggregateHandler(messages, invocation),
        stopped,
      ),
      progress(),
    ]);
  };

  /** lambdas/submission/submit-crawl.ts: the config stored once, the seeds admitted and sent in chunks. */
  async function submit(): Promise<void> {
    const bytes = configBytes(config);
    await meter.request({
      op: 'DynamoDB:PutItem',
      kind: 'config',
      pk: `CRAWL#${CRAWL_ID}`,
      wcu: Math.ceil(bytes / 1024),
      itemBytes: bytes,
    });
    await configs.put(config);
    finalizer.start(CRAWL_ID, new Date(clock.now()));
    for (let start = 0; start < config.seeds.length; start += SUBMIT_CHUNK) {
      const chunk = config.seeds.slice(start, start + SUBMIT_CHUNK);
      const admitted = await admitLinks(
        [{ config, parentKey: 'seed', depth: -1, links: chunk.map((url) => ({ url, nofollow: false })) }],
        { frontier: mUrls, hosts: mHosts, seen: new LruSet(1), now: new Date(clock.now()) },
      );
      await tasks.sendVisits(admitted.visits);
      await results.sendResults(admitted.results);
    }
  }

  // An hour more for the invocations running at the stop to end.
  await clock.run(main(), maxMs + 3_600_000);

  // The verdict.
  const problems: string[] = [];
  if (!finished()) problems.push(`not complete after ${options.maxHours ?? 72} h of virtual time (stopped)`);
  const planned = web.planned();
  let missing = 0;
  let doubled = 0;
  for (const url of planned) {
    const count = lines.get(url) ?? 0;
    if (count === 0) missing++;
    else if (count > 1) doubled++;
  }
  let unplanned = 0;
  for (const url of lines.keys()) if (!planned.has(url)) unplanned++;
  if (missing > 0) problems.push(`${missing} planned URLs without a result line`);
  if (doubled > 0) problems.push(`${doubled} URLs with more than one result line`);
  if (unplanned > 0) problems.push(`${unplanned} result lines for URLs not planned`);
  if (partRewrites > 0) problems.push(`${partRewrites} index parts written twice`);
  const judged = web.judge();
  if (judged.pagesNotOnce > 0) problems.push(`${judged.pagesNotOnce} pages not requested exactly once`);
  if (judged.robotsNotOnce > 0) problems.push(`${judged.robotsNotOnce} hosts without exactly one robots.txt`);
  if (judged.outOfScopeRequests > 0) problems.push(`${judged.outOfScopeRequests} requests out of scope`);
  if (judged.deadRequests > 0) problems.push(`${judged.deadRequests} dead links not requested once`);
  if (web.shortGaps > 0) problems.push(`${web.shortGaps} gaps below the host's delay`);
  const dlq = {
    task: taskQueue.dlq.length,
    results: resultsQueue.dlq.length,
    deadLetters: deadLetterSink.sent,
  };
  if (dlq.task + dlq.results + dlq.deadLetters > 0) problems.push(`DLQs not empty: ${JSON.stringify(dlq)}`);
  if (summaryWrites !== 1) problems.push(`summary.json written ${summaryWrites} times`);
  const counters = finalizer.counters(CRAWL_ID);
  if (counters?.state !== 'complete') problems.push(`crawl state ${counters?.state}`);
  if (counters && counters.done !== planned.size)
    problems.push(`summary counts ${counters.done} done of ${planned.size} planned`);

  const fetchedPages = counters?.byOutcome.fetched ?? 0;
  const virtualSeconds = ((summaryAt ?? clock.now()) - submittedAt) / 1000;
  const boundSeconds = (web.busiestHostRequests() * config.delayMs) / 1000;
  const pagesPerSecond = fetchedPages / virtualSeconds;
  const usage = [fetchUsage!, aggregateUsage!];
  const counts = meter.snapshot();
  const cost = costOf(counts, usage);
  const perPage = (value: number) => (fetchedPages > 0 ? round(value / fetchedPages) : 0);
  const writesPerPage: Record<string, number> = {};
  const readsPerPage: Record<string, number> = {};
  let wcu = 0;
  let rcu = 0;
  for (const [kind, count] of meter.byKind) {
    if (count.writes > 0) writesPerPage[kind] = perPage(count.writes);
    if (count.reads > 0) readsPerPage[kind] = perPage(count.reads);
    wcu += count.wcu;
    rcu += count.rcu;
  }
  const requestsPerPage: Record<string, number> = {};
  for (const [op, count] of Object.entries(counts.operations))
    requestsPerPage[op] = perPage(op.startsWith('SQS:') ? count.sqsBilledRequests : count.requests);
  const visitsByEnd: Record<string, number> = {};
  for (const outcome of outcomes) visitsByEnd[outcome.end] = (visitsByEnd[outcome.end] ?? 0) + 1;
  const visits = outcomes.length - (visitsByEnd.dropped ?? 0);
  const activeHosts = new Set(outcomes.map((o) => o.host)).size;
  const gbSeconds = usage.reduce((sum, fn) => sum + (fn.durationMs / 1000) * (fn.memoryMb / 1024), 0);
  return {
    exact: problems.length === 0,
    problems,
    seed: options.seed,
    hosts: options.hosts,
    urls: options.urls,
    seeds: config.seeds.length,
    planned: planned.size,
    resultLines: [...lines.values()].reduce((a, b) => a + b, 0),
    fetchedPages,
    virtualSeconds: round(virtualSeconds),
    pagesPerSecond: round(pagesPerSecond),
    boundPagesPerSecond: round(fetchedPages / boundSeconds),
    ratioToBound: round(boundSeconds / virtualSeconds),
    shortGaps: web.shortGaps,
    minGapMs: web.minGapMs,
    writesPerPage,
    readsPerPage,
    writeUnitsPerPage: perPage(wcu),
    readUnitsPerPage: perPage(rcu),
    peakWcu: meter.peak.wcu,
    peakRcu: meter.peak.rcu,
    peakCrawlWcu: meter.peakCrawlKeys.wcu,
    peakCrawlRcu: meter.peakCrawlKeys.rcu,
    largestItem: meter.largestItem,
    configItemBytes: configBytes(config),
    throttledRequests: meter.throttled,
    throttleFailures: meter.throttleFailures,
    limitViolations: Object.fromEntries(meter.violations),
    visitsPerHost: activeHosts > 0 ? round(visits / activeHosts) : 0,
    duplicateVisits: duplicateVisits(outcomes, hurried),
    hurriedVisits: hurried.size,
    visitsByEnd,
    invocations: { fetch: fetchUsage!.invocations, aggregate: aggregateUsage!.invocations },
    timedOutInvocations: fetchUsage!.timedOut + aggregateUsage!.timedOut,
    costPerMillionPages: perMillionPages(cost, fetchedPages),
    lambdaGbSecondsPerPage: perPage(gbSeconds),
    requestsPerPage,
    dlq,
    summaryWrites,
    wallSeconds: round((performance.now() - wallStart) / 1000),
    events: clock.events,
  };
}

const round = (value: number) => Math.round(value * 1000) / 1000;

/** The report as the lines `npm run bench` prints. */
export function scaleTable(report: ScaleReport): string {
  const r = report;
  const kinds = (record: Record<string, number>) =>
    Object.entries(record)
      .map(([kind, value]) => `${kind} ${value}`)
      .join(', ');
  const c = r.costPerMillionPages;
  return [
    `scale simulation: seed ${r.seed}, ${r.hosts} hosts, ${r.urls} pages, ${r.seeds} seeds, ${r.planned} planned URLs`,
    `  exact: ${r.exact}${r.problems.length > 0 ? ` (${r.problems.join('; ')})` : ''}`,
    `  pages/s (virtual): ${r.pagesPerSecond} against a politeness bound of ${r.boundPagesPerSecond} (${r.ratioToBound}x), ` +
      `${r.fetchedPages} pages in ${(r.virtualSeconds / 3600).toFixed(2)} h; ${r.shortGaps} gaps below the delay`,
    `  DynamoDB writes per page: ${kinds(r.writesPerPage)} (${r.writeUnitsPerPage} WCU)`,
    `  DynamoDB reads per page: ${kinds(r.readsPerPage)} (${r.readUnitsPerPage} RCU)`,
    `  peak per partition key: ${r.peakWcu.units} WCU/s (${r.peakWcu.pk}), ${r.peakRcu.units} RCU/s (${r.peakRcu.pk}); ` +
      `${r.throttledRequests} throttled requests, ${r.throttleFailures} failed`,
    `  peak on the crawl's own keys: ${r.peakCrawlWcu.units} WCU/s (${r.peakCrawlWcu.pk}), ` +
      `${r.peakCrawlRcu.units} RCU/s (${r.peakCrawlRcu.pk})`,
    `  largest item: ${r.largestItem.bytes} bytes (${r.largestItem.kind}); the crawl config: ${r.configItemBytes} bytes` +
      `${Object.keys(r.limitViolations).length > 0 ? `; limits crossed: ${kinds(r.limitViolations)}` : ''}`,
    `  visits per host: ${r.visitsPerHost}; duplicate visits: ${r.duplicateVisits}; hurried: ${r.hurriedVisits}; by end: ${kinds(r.visitsByEnd)}`,
    `  invocations: fetch ${r.invocations.fetch}, aggregate ${r.invocations.aggregate}; timed out: ${r.timedOutInvocations}`,
    `  $ per million pages: ${c.total} (Lambda ${c.lambda}, DynamoDB ${c.dynamodb}, S3 ${c.s3}, SQS ${c.sqs})`,
    `  Lambda GB-s per page: ${r.lambdaGbSecondsPerPage}`,
    `  wall time: ${r.wallSeconds} s (${r.events} events)`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { parseArgs } = await import('node:util');
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: '1' },
      hosts: { type: 'string', default: '10000' },
      urls: { type: 'string', default: '1000000' },
      seeds: { type: 'string' },
      json: { type: 'string' },
      'max-hours': { type: 'string', default: '72' },
    },
  });
  const report = await runScale({
    seed: Number(values.seed),
    hosts: Number(values.hosts),
    urls: Number(values.urls),
    ...(values.seeds ? { seeds: Number(values.seeds) } : {}),
    maxHours: Number(values['max-hours']),
    progress: (line) => console.error(line),
  });
  console.log(scaleTable(report));
  if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = report.exact ? 0 : 1;
}

if (import.meta.main) await main();

/**
 * Dropped visit messages (the host held, stale or idle), less those of hurried visits: a hurried
 * visit is a second copy of the host's message, and the copy its twin beat to the host is dropped
 * (once, or twice if it first found the twin's visit running and was sent again for its lease's end).
 * What is left is a message no design meant to send twice.
 */
function duplicateVisits(outcomes: readonly VisitOutcome[], hurried: ReadonlySet<string>): number {
  return outcomes.filter(
    (outcome) => outcome.end === 'dropped' && !(outcome.ticket !== undefined && hurried.has(outcome.ticket)),
  ).length;
}
