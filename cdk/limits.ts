/**
 * Every deploy-time limit of the stack in one place, as plain data (no aws-cdk-lib import), so the
 * stack, its tests and the local runtime read the same numbers.
 */
import { AWS_LIMITS, FRONTIER_SHARDS } from '../lambdas/core/base/index.ts';

/** The fetch function: consumes TaskQueue, fetches pages, writes WARC to S3, re-enqueues links. */
export const FETCH_FUNCTION = {
  /** Visits run until a minute's deadline; each request has its own (20 s), and the last flush fits after it. */
  timeoutSeconds: 60,
  /**
   * Sized by measurement (`npm run bench -- --only memory`, docs/performance.md): one invocation
   * peaked at 482 MB RSS with 64 visits and 507 MB with 100, every body at the 5 MiB cap (bodies held
   * are capped by STORAGE_LIMITS.bufferedBodyBytes, not by the batch), so 768 MB leaves 1.5x. Billed
   * GB-s are this x the billed duration, mostly politeness waits. CPU scales with memory (1,769 MB =
   * 1 vCPU): 0.43 vCPU. A realistic-shape page costs 11-16 ms of CPU in the local crawl at 200
   * hosts with the emulators, the aggregate function and the pollers in the same process (the
   * handler's own share is less), so a full batch of hosts at one page a second each needs at most
   * 0.28-0.40 vCPU (FETCH_EVENT_SOURCE.batchSize).
   */
  memoryMb: 768,
} as const;

/** The TaskQueue -> fetch function event source mapping. */
export const FETCH_EVENT_SOURCE = {
  /**
   * Visit messages, so hosts served by one invocation: its billed wait for the hosts' politeness is
   * shared by all of them (GB-s per page = memory / pages per second of the invocation). 25 hosts at
   * one page a second fit the function's CPU at the most a page was measured to take
   * (FETCH_FUNCTION). Batches of 30 and 50 were tried (docs/performance.md) and not kept: measured
   * idle, 50 took twice as long at 200 hosts and cost 18 % more (an invocation's CPU falls behind
   * its hosts' pace). More than 10 needs the batching window.
   */
  batchSize: 25,
  /**
   * Gathers the visits handed back within a second of each other into one invocation (one WARC
   * file, more hosts an invocation) while a host's next visit waits at most this long past its pace:
   * 2 s measured no better on the realistic shape under load (docs/performance.md).
   */
  maxBatchingWindowSeconds: 1,
  /** Caps parallel fetchers (and so load on sites and the account); Lambda requires >= 2. */
  maxConcurrency: 10,
} as const;

/** The aggregate function: consumes ResultsQueue, writes index parts and crawl counters. */
export const AGGREGATE_FUNCTION = {
  /** Gzipping 100 small result records and a few DynamoDB updates take seconds, not minutes. */
  timeoutSeconds: 60,
  /** The work is small and I/O bound. */
  memoryMb: 512,
} as const;

/**
 * The render function (`-c render=true`): consumes RenderQueue, renders a page in headless Chromium
 * (@sparticuz/chromium, x86_64 only), writes its conversion and content records, sends its result.
 */
export const RENDER_FUNCTION = {
  /** A render is at most RENDER_LIMITS.timeMs (15 s); a cold start unpacks the browser (~1.5 s) first. */
  timeoutSeconds: 60,
  /**
   * Chromium with a page: 974 MB RSS peak measured locally (`npm run bench -- --only render`), and
   * CPU scales with memory (1,769 MB = 1 vCPU): a page's scripts run on it.
   */
  memoryMb: 2048,
  /** /tmp: the browser unpacked (~210 MB), its fonts and libraries, and its profile. */
  ephemeralStorageMiB: 1024,
  /** Lambda's limit on a function's code and layers, unzipped (a cdk test holds the package under it). */
  maxUnzippedBytes: 250 * 1024 * 1024,
} as const;

/** The RenderQueue -> render function event source mapping. */
export const RENDER_EVENT_SOURCE = {
  /** One page an invocation: a render's time is its own, and a failure retries one page. */
  batchSize: 1,
  maxBatchingWindowSeconds: 0,
  /** Browsers at once (2 GB each): bounds cost and load; Lambda requires >= 2. */
  maxConcurrency: 10,
} as const;

/** The ResultsQueue -> aggregate function event source mapping. */
export const AGGREGATE_EVENT_SOURCE = {
  /** Bigger index parts mean fewer S3 PUTs per result; > 10 needs a batching window. */
  batchSize: 100,
  /**
   * Lets a part gather results (100 within a second at ~100 results/s). A crawl's end waits on it
   * twice, for its last results and then for the drained record that confirms completion: 5 s made
   * a 20-host bench crawl's end 11.5 s long (docs/performance.md, realistic shape).
   */
  maxBatchingWindowSeconds: 2,
  /** Few concurrent writers of index parts and crawl counters keep DynamoDB contention low; Lambda's minimum is 2. */
  maxConcurrency: 2,
} as const;

/**
 * DynamoDB serves one partition key at most 1,000 write units and 3,000 read units a second, on
 * demand or not, whatever the table's capacity (docs/scale.md). The fetch concurrency a deploy
 * accepts keeps every key of one crawl under `maxShare` of that (cdk/partition-budget.ts): the rest
 * is room for bursts and for the retries of throttled writes, which add load where it hurts.
 */
export const DYNAMODB_PARTITION = {
  writeUnitsPerSecond: 1_000,
  readUnitsPerSecond: 3_000,
  maxShare: 0.8,
} as const;

/**
 * What one crawl at the default politeness asks of its busiest partition keys: the inputs of the
 * fetch concurrency ceiling (cdk/partition-budget.ts) and of docs/scale.md's tables, which show the
 * arithmetic. Counted from the code that makes the writes (frontier-hosts.ts, frontier-counters.ts,
 * link-admission.ts, aggregate-batch.ts); change them with it.
 */
export const CRAWL_LOAD = {
  /** A visit fetches one page a gap: the default --delay (1,000 ms) + the pacer's 10 % (at most 100 ms). */
  gapSeconds: 1.1,
  /** Units per fetched page, by partition key. */
  perPage: {
    /**
     * The `COUNTERS` item: `ADD queued` per flush of 25 and the aggregate's counters per batch of 100
     * (1 unit each); the counters read of the completion check per aggregate batch.
     */
    'CRAWL#<crawlId>': { writeUnits: 0.05, readUnits: 0.01 },
    /**
     * The host items, spread over FRONTIER_SHARDS keys by host: about one `ADD wake` a page (2 units:
     * a host item holding ~27 `inflight` keys is ~2 KB) and a visit's acquire and release (2 + 2
     * units per ~27 pages), a shard's share of them; on the shard of a host linked from every page,
     * that host's wake per flush of 25 too (2 units), rounded up. The completion check's first
     * `HOST#` Query per aggregate batch (on the shard where the last look found a host).
     */
    'CRAWL#<crawlId>#NN holding a host linked from every page': {
      writeUnits: Math.ceil(((2 + 4 / 27) / FRONTIER_SHARDS + 2 / 25) * 100) / 100,
      readUnits: 0.01,
    },
    /**
     * A share link carrying the page's URL, so new on every page: each link's admission put and its
     * finalize, and its admission read (½ unit).
     */
    'URLS#<crawlId>#<host> of a host linked from every page': { writeUnits: 2, readUnits: 0.5 },
  },
} as const;

/** Both queues and their dead-letter queues. */
export const QUEUE = {
  /** Five receives ride out throttling and transient errors before a message is parked in the DLQ (AWS guidance). */
  maxReceiveCount: 5,
  /** AWS guidance: visibility timeout >= 6x the function timeout (+ batching window), else retries duplicate work. */
  visibilityTimeoutFactor: 6,
  /**
   * The SQS maximum (SQS's default is 4 days): a crawl's task and result messages must outlive the
   * longest stall a crawl can ride out (a function disabled or throttled for days). An expired visit
   * message leaves its host with nobody coming (docs/failure-model.md, "Expired messages").
   */
  retentionDays: 14,
  /**
   * The SQS maximum: DLQ messages are kept for inspection and redrive as long as possible. A moved
   * message keeps its original enqueue time, so this never extends past its source queue's clock.
   */
  dlqRetentionDays: 14,
  /** Tasks and results are small JSON; bodies belong in S3. The senders' limit too (lambdas/core/base/limits.ts). */
  maxMessageSizeBytes: AWS_LIMITS.sqsMaxMessageBytes,
} as const;

/** Logs and access logs. */
export const LOGS = {
  /** A month of function logs covers debugging a crawl without paying to keep logs forever. */
  functionLogRetentionDays: 30,
  /** S3 server access logs are for audits of the page store; 90 days is a common audit window. */
  accessLogExpirationDays: 90,
} as const;

/** The page store bucket. */
export const PAGE_STORE = {
  /** Half-finished multipart WARC uploads (a function that timed out) are billed until aborted. */
  abortIncompleteUploadDays: 1,
  /** With versioning on, overwritten index parts and summaries are kept this long, then removed. */
  noncurrentVersionExpirationDays: 30,
} as const;

/** CloudWatch alarms of the stack (see cdk/monitoring.ts). */
export const ALARMS = {
  /**
   * SQS publishes queue metrics once a minute; a DLQ alarm looks at one minute, one datapoint, so a
   * parked message is reported within minutes.
   */
  dlqPeriodSeconds: 60,
  /**
   * A task this old in TaskQueue means fetching has stalled or fallen far behind. Well above what a
   * healthy crawl produces: a politeness deferral is a new message delayed at most 900 s (the SQS
   * cap), and retry backoff keeps one message at most a few minutes per attempt.
   */
  oldestTaskAgeSeconds: 1_800,
  /** Results are aggregated within seconds; one this old means the aggregator is stuck or failing. */
  oldestResultAgeSeconds: 900,
  /** Age alarms look at the maximum over this period (one datapoint). */
  agePeriodSeconds: 300,
  /**
   * A handler that throws (or times out) fails its whole batch, which is never expected: item
   * failures are returned, not thrown. Any error in this period (one datapoint) alarms.
   */
  functionErrorsPeriodSeconds: 300,
} as const;

/** CDK context keys the app reads (`npx cdk deploy -c key=value`). */
export const CONTEXT_KEYS = {
  /** The fetch event source's MaximumConcurrency (`crawler --concurrency N` in the stack). */
  fetchConcurrency: 'fetchConcurrency',
  /** An email address subscribed to the alarm topic (confirm the subscription mail once). */
  alarmEmail: 'alarmEmail',
  /** The EventBridge bus crawl events are published on (default: the account's `default` bus). */
  eventBusName: 'eventBusName',
  /** `true`: the render function and its queue, for `--render` (docs/crawling.md, "Rendering"). */
  render: 'render',
  /** How the functions count their AWS calls (CALL_COUNTING; docs/deploy.md, "Cost"): estimated when absent. */
  callCounting: 'callCounting',
} as const;
