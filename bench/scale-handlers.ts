/**
 * The handlers' own few lines, repeated thin around the real core for the scale simulation
 * (bench/scale.ts): the fetch and aggregate handlers (deadline, reserve, hand-backs and retries) and
 * the submit (config stored once, seeds admitted and sent in chunks). Every port an invocation uses
 * freezes when the invocation is killed at its timeout. Apart from the run and from the simulated
 * AWS (scale-world.ts), as the part that stands for lambdas/.
 */
import { backoffSeconds, LruSet, RETRY_BACKOFF } from '../lambdas/core/base/index.ts';
import {
  type FetchBatchDeps,
  processFetchBatch,
  processResultBatch,
  type ResultMessage,
  type VisitOutcome,
} from '../lambdas/core/batches/index.ts';
import { admitLinks } from '../lambdas/core/frontier/index.ts';
import { configBytes } from '../test/fakes/metered-ports.ts';
import type { Invocation, QueuedMessage } from '../test/fakes/sim-queue.ts';
import { CRAWL_ID, type ScaleWorld } from './scale-world.ts';

/** lambdas/fetch/handler.ts: the sends' reserve before the timeout, 10 s or a quarter of a short one. */
const SEND_RESERVE_MS = 10_000;
const SEND_RESERVE_SHARE = 0.25;
/** lambdas/aggregate/handler.ts reserveMs: 20 s, or a third of a short timeout, at least 1 s. */
const aggregateReserveMs = (remaining: number) => Math.min(20_000, Math.max(1_000, remaining / 3));
/** lambdas/submission/submit-crawl.ts: seeds admitted and sent 500 at a time. */
const SUBMIT_CHUNK = 500;

/** The messages a handler hands back to its queue, each visible again after `seconds`. */
type Retries = Array<{ id: string; seconds: number }>;

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

/** lambdas/fetch/handler.ts on the slot's warm container; each visit's outcome goes to `outcomes`. */
export function fetchHandler(world: ScaleWorld, outcomes: VisitOutcome[]) {
  const { clock, fetcher, mUrls, mHosts, mRobots, mBlobs, results, tasks, deadLetters } = world;
  return async (messages: QueuedMessage[], invocation: Invocation, slot: number): Promise<Retries> => {
    const container = world.containers[slot]!;
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
}

/** lambdas/aggregate/handler.ts; `onSummary` is told when an invocation wrote a crawl's summary. */
export function aggregateHandler(world: ScaleWorld, onSummary: () => void) {
  const { clock, mFinalizer, mBlobs, mHosts, hurryTasks, results } = world;
  return async (messages: QueuedMessage[], invocation: Invocation): Promise<Retries> => {
    const remaining = invocation.end - clock.now();
    const report = await processResultBatch(messages as ResultMessage[], {
      frontier: frozenWhenKilled(mFinalizer, invocation),
      blobs: frozenWhenKilled(mBlobs, invocation),
      hurry: { hosts: frozenWhenKilled(mHosts, invocation), tasks: frozenWhenKilled(hurryTasks, invocation) },
      invocationId: invocation.id,
      now: () => new Date(clock.now()),
      deadline: clock.now() + remaining - aggregateReserveMs(remaining),
    });
    if (report.summaries.length > 0) onSummary();
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
}

/** lambdas/submission/submit-crawl.ts: the config stored once, the seeds admitted and sent in chunks. */
export async function submit(world: ScaleWorld): Promise<void> {
  const { clock, meter, config, mUrls, mHosts, tasks, results } = world;
  const bytes = configBytes(config);
  await meter.request({
    op: 'DynamoDB:PutItem',
    kind: 'config',
    pk: `CRAWL#${CRAWL_ID}`,
    wcu: Math.ceil(bytes / 1024),
    itemBytes: bytes,
  });
  await world.configs.put(config);
  world.finalizer.start(CRAWL_ID, new Date(clock.now()));
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
