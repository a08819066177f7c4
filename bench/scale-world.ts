/**
 * The simulated AWS around the real core, for the scale simulation (bench/scale.ts): the in-memory
 * fakes of test/fakes/ wrapped in the adapters' metered requests, the SQS queues with the stack's
 * settings, one warm container per fetch slot, and the page bucket, which keeps only what the verdict
 * reads back (result lines, index part keys, summary writes). Apart from the run, so that what is
 * simulated reads in one place.
 */
import { gunzipSync } from 'node:zlib';
import {
  AGGREGATE_EVENT_SOURCE,
  AGGREGATE_FUNCTION,
  FETCH_EVENT_SOURCE,
  FETCH_FUNCTION,
  QUEUE,
} from '../cdk/limits.ts';
import { LruSet } from '../lambdas/core/base/index.ts';
import {
  type CrawlConfig,
  type PageFetcher,
  parseCrawlConfig,
  type TaskSender,
} from '../lambdas/core/crawl/index.ts';
import { createRobotsCache, type RobotsCache } from '../lambdas/core/robots/index.ts';
import { resultsPrefix, summaryKey } from '../lambdas/shared/contracts.ts';
import { AwsMeter } from '../test/fakes/aws-meter.ts';
import { MemoryBlobs } from '../test/fakes/blobs.ts';
import { MemoryCrawlConfigs } from '../test/fakes/crawl-configs.ts';
import { MemoryFrontierFinalizer } from '../test/fakes/frontier-finalizer.ts';
import { MemoryFrontierUrls } from '../test/fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../test/fakes/host-visits.ts';
import {
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
import { SimQueue } from '../test/fakes/sim-queue.ts';
import type { VirtualClock } from '../test/fakes/virtual-clock.ts';
import { mulberry32, ScaleWeb } from './scale-web.ts';

export const CRAWL_ID = 'scale';
/** Per-container caches, as lambdas/fetch/fetch-deps.ts sizes them. */
const SEEN_CACHE_ENTRIES = 100_000;
const WRITTEN_PARTS_CACHE_ENTRIES = 10_000;

/** cdk/queue-with-dlq.ts visibilityTimeoutFor: 6x the function timeout plus the batching window. */
const visibilityMs = (timeoutSeconds: number, windowSeconds: number) =>
  (QUEUE.visibilityTimeoutFactor * timeoutSeconds + windowSeconds) * 1000;

/** What the page bucket saw written: each result line's URL, the index parts, summary.json's writes. */
export interface BucketWrites {
  readonly lines: Map<string, number>;
  readonly parts: Set<string>;
  partRewrites: number;
  summaryWrites: number;
}

/** What fetch-deps.ts keeps between invocations of one warm container. */
export interface FetchContainer {
  readonly configs: MeteredConfigs;
  readonly crawlStates: MeteredCrawlStates;
  readonly robotsCache: RobotsCache;
  readonly seen: LruSet;
  readonly partExists: (key: string) => Promise<boolean>;
}

export interface ScaleWorld {
  readonly clock: VirtualClock;
  readonly meter: AwsMeter;
  readonly config: CrawlConfig;
  readonly web: ScaleWeb;
  readonly written: BucketWrites;
  readonly configs: MemoryCrawlConfigs;
  readonly finalizer: MemoryFrontierFinalizer;
  readonly mUrls: MeteredFrontierUrls;
  readonly mHosts: MeteredHostVisits;
  readonly mRobots: MeteredRobots;
  readonly mFinalizer: MeteredFinalizer;
  readonly mBlobs: MeteredBlobs;
  readonly taskQueue: SimQueue;
  readonly resultsQueue: SimQueue;
  readonly deadLetterSink: SimQueue;
  readonly tasks: MeteredTaskSender;
  /** Tickets of hurried visits: each is a second copy of a message, one of which is dropped by design. */
  readonly hurried: Set<string>;
  readonly hurryTasks: TaskSender;
  readonly results: MeteredResultSender;
  readonly deadLetters: MeteredDeadLetters;
  readonly containers: FetchContainer[];
  readonly fetcher: PageFetcher;
}

export interface ScaleWorldOptions {
  readonly seed: number;
  readonly hosts: number;
  readonly urls: number;
  readonly seeds?: number;
}

export function createScaleWorld(options: ScaleWorldOptions, clock: VirtualClock): ScaleWorld {
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
  const written: BucketWrites = { lines: new Map(), parts: new Set(), partRewrites: 0, summaryWrites: 0 };
  const bucket = recordingBucket(written);
  const mUrls = new MeteredFrontierUrls(urls, meter);
  const mHosts = new MeteredHostVisits(hosts, meter);
  const mRobots = new MeteredRobots(robots, meter);
  const mFinalizer = new MeteredFinalizer(finalizer, mUrls, mHosts, meter);
  const mBlobs = new MeteredBlobs(bucket, meter);

  const queues = simQueues(clock);
  const tasks = new MeteredTaskSender(meter, queues.taskQueue);
  const hurried = new Set<string>();
  const hurryTasks: TaskSender = {
    sendVisits: async (visits) => {
      for (const { visit } of visits) if (visit.ticket !== undefined) hurried.add(visit.ticket);
      await tasks.sendVisits(visits);
    },
  };
  const results = new MeteredResultSender(meter, queues.resultsQueue);
  const deadLetters = new MeteredDeadLetters(meter, queues.deadLetterSink);
  const containers = warmContainers({ configs, finalizer, meter, mBlobs, clock });
  const fetcher = web.fetcher();
  return {
    clock,
    meter,
    config,
    web,
    written,
    configs,
    finalizer,
    mUrls,
    mHosts,
    mRobots,
    mFinalizer,
    mBlobs,
    ...queues,
    tasks,
    hurried,
    hurryTasks,
    results,
    deadLetters,
    containers,
    fetcher,
  };
}

/** The page bucket: counts each result line's URL as its index part is written, keeps no bodies. */
function recordingBucket(written: BucketWrites): MemoryBlobs {
  const bucket = new MemoryBlobs();
  const empty = new Uint8Array(0);
  bucket.afterWrite = ({ key }) => {
    const body = bucket.objects.get(key);
    if (key.startsWith(resultsPrefix(CRAWL_ID))) {
      if (written.parts.has(key)) {
        written.partRewrites++;
      } else if (body) {
        written.parts.add(key);
        for (const line of gunzipSync(body).toString('utf8').split('\n')) {
          if (line.trim() === '') continue;
          const url = (JSON.parse(line) as { url: string }).url;
          written.lines.set(url, (written.lines.get(url) ?? 0) + 1);
        }
      }
    }
    if (key === summaryKey(CRAWL_ID)) written.summaryWrites++;
    // WARC bodies and parts are not kept: their keys (exists, list) are all the crawl reads back.
    else if (body) bucket.objects.set(key, empty);
  };
  return bucket;
}

function simQueues(clock: VirtualClock): {
  taskQueue: SimQueue;
  resultsQueue: SimQueue;
  deadLetterSink: SimQueue;
} {
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
  return { taskQueue, resultsQueue, deadLetterSink };
}

/** One warm container per concurrency slot: what fetch-deps.ts keeps between invocations. */
function warmContainers(shared: {
  configs: MemoryCrawlConfigs;
  finalizer: MemoryFrontierFinalizer;
  meter: AwsMeter;
  mBlobs: MeteredBlobs;
  clock: VirtualClock;
}): FetchContainer[] {
  const { configs, finalizer, meter, mBlobs, clock } = shared;
  return Array.from({ length: FETCH_EVENT_SOURCE.maxConcurrency }, () => {
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
}
