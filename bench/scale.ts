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
 * simulated (bench/scale-world.ts): the handlers' own few lines (deadline, hand-backs) are repeated,
 * thin (bench/scale-handlers.ts). The verdict and the figures: bench/scale-report.ts.
 *
 * It must end exact and complete: every planned URL one result line, every page requested once
 * (robots.txt once per host), nothing in any DLQ, summary.json written once.
 *
 * Options: --seed N (1), --hosts N (10000), --urls N (1000000), --seeds N (urls / 10), --json FILE,
 * --max-hours H (virtual hours after which the run stops and reports what it got, not exact; 72).
 */
import { writeFile } from 'node:fs/promises';
import {
  AGGREGATE_EVENT_SOURCE,
  AGGREGATE_FUNCTION,
  FETCH_EVENT_SOURCE,
  FETCH_FUNCTION,
} from '../cdk/limits.ts';
import type { VisitOutcome } from '../lambdas/core/batches/index.ts';
import { runEventSource } from '../test/fakes/sim-queue.ts';
import { VirtualClock } from '../test/fakes/virtual-clock.ts';
import { aggregateHandler, fetchHandler, submit } from './scale-handlers.ts';
import { type ScaleReport, type ScaleRun, scaleReport, scaleTable } from './scale-report.ts';
import { createScaleWorld, type ScaleWorld } from './scale-world.ts';

export { type ScaleReport, scaleTable } from './scale-report.ts';

export interface ScaleOptions {
  seed: number;
  hosts: number;
  urls: number;
  seeds?: number;
  maxHours?: number;
  /** Progress lines (virtual time, pages, queues) every virtual 10 minutes. */
  progress?: (line: string) => void;
}

const START = Date.UTC(2026, 0, 1);
const PROGRESS_EVERY_MS = 10 * 60_000;

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

/** What the run keeps as it goes: the visits' outcomes, when the summary was written, when it stops. */
interface RunState {
  readonly world: ScaleWorld;
  readonly options: ScaleOptions;
  readonly wallStart: number;
  readonly outcomes: VisitOutcome[];
  readonly submittedAt: number;
  /** Past --max-hours the event sources stop and the run reports what it got (not exact: not complete). */
  readonly maxMs: number;
  summaryAt: number | undefined;
}

async function simulate(options: ScaleOptions, clock: VirtualClock, wallStart: number): Promise<ScaleReport> {
  const world = createScaleWorld(options, clock);
  const maxMs = (options.maxHours ?? 72) * 3_600_000;
  const state: RunState = {
    world,
    options,
    wallStart,
    outcomes: [],
    submittedAt: clock.now(),
    maxMs,
    summaryAt: undefined,
  };
  // An hour more for the invocations running at the stop to end.
  const usage = await clock.run(crawl(state), maxMs + 3_600_000);
  const run: ScaleRun = { ...state, finished: finished(state), usage };
  return scaleReport(run);
}

const finished = ({ world, summaryAt }: RunState) =>
  summaryAt !== undefined && world.taskQueue.size === 0 && world.resultsQueue.size === 0;

/** The submit, then both event sources until the crawl is finished or --max-hours have passed. */
async function crawl(state: RunState): Promise<ScaleRun['usage']> {
  const { world, options, wallStart, submittedAt } = state;
  const { clock, meter } = world;
  const stopped = () => finished(state) || clock.now() - submittedAt >= state.maxMs;
  await submit(world);
  options.progress?.(
    `submitted ${world.config.seeds.length} seeds in ${((clock.now() - submittedAt) / 1000).toFixed(0)} s virtual, ` +
      `${Math.round((performance.now() - wallStart) / 1000)} s wall`,
  );
  const [fetch, aggregate] = await Promise.all([
    runEventSource(
      world.taskQueue,
      clock,
      meter,
      { ...FETCH_EVENT_SOURCE, ...FETCH_FUNCTION },
      fetchHandler(world, state.outcomes),
      stopped,
    ),
    runEventSource(
      world.resultsQueue,
      clock,
      meter,
      { ...AGGREGATE_EVENT_SOURCE, ...AGGREGATE_FUNCTION },
      aggregateHandler(world, () => {
        state.summaryAt ??= clock.now();
      }),
      stopped,
    ),
    progress(state, stopped),
  ]);
  return { fetch, aggregate };
}

/** Progress lines (virtual time, pages, queues) every virtual 10 minutes. */
async function progress(state: RunState, stopped: () => boolean): Promise<void> {
  const { world, options, wallStart, submittedAt } = state;
  const { clock, written, web, taskQueue, resultsQueue } = world;
  while (!stopped()) {
    await clock.sleep(PROGRESS_EVERY_MS);
    options.progress?.(
      `${((clock.now() - submittedAt) / 3_600_000).toFixed(2)} h virtual: ${written.lines.size} result lines, ` +
        `${web.requests} requests, queues ${taskQueue.size} tasks / ${resultsQueue.size} results, ` +
        `${Math.round((performance.now() - wallStart) / 1000)} s wall`,
    );
  }
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
