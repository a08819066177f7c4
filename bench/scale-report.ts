/**
 * The scale simulation's report (bench/scale.ts): the verdict (exact and complete, or why not), the
 * figures per page (DynamoDB, requests, cost, Lambda), and the lines `npm run bench` prints. Apart
 * from the run, which only gathers what this reads.
 */
import type { VisitOutcome } from '../lambdas/core/batches/index.ts';
import { costOf, perMillionPages } from '../lambdas/shared/aws-prices.ts';
import type { AwsMeter } from '../test/fakes/aws-meter.ts';
import { configBytes } from '../test/fakes/metered-ports.ts';
import type { FunctionUsage } from '../test/fakes/sim-queue.ts';
import { CRAWL_ID, type ScaleWorld } from './scale-world.ts';

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

/** What a simulation's run leaves for its report. */
export interface ScaleRun {
  readonly options: { seed: number; hosts: number; urls: number; maxHours?: number };
  readonly world: ScaleWorld;
  readonly outcomes: readonly VisitOutcome[];
  /** Virtual time of the submit, and of the first summary written (undefined: none). */
  readonly submittedAt: number;
  readonly summaryAt: number | undefined;
  readonly finished: boolean;
  readonly usage: { fetch: FunctionUsage; aggregate: FunctionUsage };
  /** performance.now() at the start, for the wall time. */
  readonly wallStart: number;
}

export function scaleReport(run: ScaleRun): ScaleReport {
  const { options, world, outcomes, usage } = run;
  const { clock, meter, config, web, written } = world;
  const planned = web.planned();
  const problems = verdict(run, planned);
  const counters = world.finalizer.counters(CRAWL_ID);
  const fetchedPages = counters?.byOutcome.fetched ?? 0;
  const virtualSeconds = ((run.summaryAt ?? clock.now()) - run.submittedAt) / 1000;
  const boundSeconds = (web.busiestHostRequests() * config.delayMs) / 1000;
  const pagesPerSecond = fetchedPages / virtualSeconds;
  const usages = [usage.fetch, usage.aggregate];
  const counts = meter.snapshot();
  const cost = costOf(counts, usages);
  const perPage = (value: number) => (fetchedPages > 0 ? round(value / fetchedPages) : 0);
  const dynamodb = dynamodbPerPage(meter, perPage);
  const requestsPerPage: Record<string, number> = {};
  for (const [op, count] of Object.entries(counts.operations))
    requestsPerPage[op] = perPage(op.startsWith('SQS:') ? count.sqsBilledRequests : count.requests);
  const visitsByEnd: Record<string, number> = {};
  for (const outcome of outcomes) visitsByEnd[outcome.end] = (visitsByEnd[outcome.end] ?? 0) + 1;
  const visits = outcomes.length - (visitsByEnd.dropped ?? 0);
  const activeHosts = new Set(outcomes.map((o) => o.host)).size;
  const gbSeconds = usages.reduce((sum, fn) => sum + (fn.durationMs / 1000) * (fn.memoryMb / 1024), 0);
  return {
    exact: problems.length === 0,
    problems,
    seed: options.seed,
    hosts: options.hosts,
    urls: options.urls,
    seeds: config.seeds.length,
    planned: planned.size,
    resultLines: [...written.lines.values()].reduce((a, b) => a + b, 0),
    fetchedPages,
    virtualSeconds: round(virtualSeconds),
    pagesPerSecond: round(pagesPerSecond),
    boundPagesPerSecond: round(fetchedPages / boundSeconds),
    ratioToBound: round(boundSeconds / virtualSeconds),
    shortGaps: web.shortGaps,
    minGapMs: web.minGapMs,
    ...dynamodb,
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
    duplicateVisits: duplicateVisits(outcomes, world.hurried),
    hurriedVisits: world.hurried.size,
    visitsByEnd,
    invocations: { fetch: usage.fetch.invocations, aggregate: usage.aggregate.invocations },
    timedOutInvocations: usage.fetch.timedOut + usage.aggregate.timedOut,
    costPerMillionPages: perMillionPages(cost, fetchedPages),
    lambdaGbSecondsPerPage: perPage(gbSeconds),
    requestsPerPage,
    dlq: dlqCounts(world),
    summaryWrites: written.summaryWrites,
    wallSeconds: round((performance.now() - run.wallStart) / 1000),
    events: clock.events,
  };
}

/** Why the run is not exact and complete: empty when it is. */
function verdict(run: ScaleRun, planned: ReadonlySet<string>): string[] {
  const { world } = run;
  const { web, written } = world;
  const problems: string[] = [];
  if (!run.finished)
    problems.push(`not complete after ${run.options.maxHours ?? 72} h of virtual time (stopped)`);
  let missing = 0;
  let doubled = 0;
  for (const url of planned) {
    const count = written.lines.get(url) ?? 0;
    if (count === 0) missing++;
    else if (count > 1) doubled++;
  }
  let unplanned = 0;
  for (const url of written.lines.keys()) if (!planned.has(url)) unplanned++;
  if (missing > 0) problems.push(`${missing} planned URLs without a result line`);
  if (doubled > 0) problems.push(`${doubled} URLs with more than one result line`);
  if (unplanned > 0) problems.push(`${unplanned} result lines for URLs not planned`);
  if (written.partRewrites > 0) problems.push(`${written.partRewrites} index parts written twice`);
  const judged = web.judge();
  if (judged.pagesNotOnce > 0) problems.push(`${judged.pagesNotOnce} pages not requested exactly once`);
  if (judged.robotsNotOnce > 0) problems.push(`${judged.robotsNotOnce} hosts without exactly one robots.txt`);
  if (judged.outOfScopeRequests > 0) problems.push(`${judged.outOfScopeRequests} requests out of scope`);
  if (judged.deadRequests > 0) problems.push(`${judged.deadRequests} dead links not requested once`);
  if (web.shortGaps > 0) problems.push(`${web.shortGaps} gaps below the host's delay`);
  const dlq = dlqCounts(world);
  if (dlq.task + dlq.results + dlq.deadLetters > 0) problems.push(`DLQs not empty: ${JSON.stringify(dlq)}`);
  if (written.summaryWrites !== 1) problems.push(`summary.json written ${written.summaryWrites} times`);
  const counters = world.finalizer.counters(CRAWL_ID);
  if (counters?.state !== 'complete') problems.push(`crawl state ${counters?.state}`);
  if (counters && counters.done !== planned.size)
    problems.push(`summary counts ${counters.done} done of ${planned.size} planned`);
  return problems;
}

function dlqCounts(world: ScaleWorld): ScaleReport['dlq'] {
  return {
    task: world.taskQueue.dlq.length,
    results: world.resultsQueue.dlq.length,
    deadLetters: world.deadLetterSink.sent,
  };
}

/** DynamoDB writes and reads per page by kind of item, and the capacity units per page. */
function dynamodbPerPage(
  meter: AwsMeter,
  perPage: (value: number) => number,
): Pick<ScaleReport, 'writesPerPage' | 'readsPerPage' | 'writeUnitsPerPage' | 'readUnitsPerPage'> {
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
  return { writesPerPage, readsPerPage, writeUnitsPerPage: perPage(wcu), readUnitsPerPage: perPage(rcu) };
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
