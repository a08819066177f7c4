/**
 * Every deploy-time limit of the stack in one place, as plain data (no aws-cdk-lib import), so the
 * stack, its tests and the local runtime read the same numbers.
 */
import { AWS_LIMITS } from '../lambdas/core/limits.ts';

/** The fetch function: consumes TaskQueue, fetches pages, writes WARC to S3, re-enqueues links. */
export const FETCH_FUNCTION = {
  /** A batch of 25 fetches with per-request deadlines (20 s) fits well inside a minute. */
  timeoutSeconds: 60,
  /** CPU scales with memory (1769 MB = 1 vCPU); ~0.6 vCPU keeps gzip + HTML parsing of a batch quick and cheap. */
  memoryMb: 1024,
} as const;

/** The TaskQueue -> fetch function event source mapping. */
export const FETCH_EVENT_SOURCE = {
  /**
   * One WARC PUT, one result send and one admission round per batch: `npm run bench` (5,043 pages,
   * --concurrency 2) counted $3.56 per million pages at 10 (S3 $0.57) and $3.28 at 25 (S3 $0.26), at
   * the same pages/s. Bodies are bounded by the fetcher's byte budget, not the batch (64 at the 5 MiB
   * cap peak at 226 MB). More than 10 needs the batching window.
   */
  batchSize: 25,
  /** Short wait to fill batches (one WARC file per invocation) without delaying a lone URL much. */
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
  /** Tasks and results are small JSON; bodies belong in S3. The senders' limit too (lambdas/core/limits.ts). */
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
} as const;
