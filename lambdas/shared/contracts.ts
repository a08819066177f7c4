/**
 * The contracts between the stack, the handlers, the local runtime and the CLI, each written once:
 * names and layouts only, no dependencies (so a module that needs a name does not load aws-cdk-lib,
 * the SDK or zod for it). Whoever writes a name or a key takes it from here, and so does whoever
 * reads it.
 */

/** The deployed stack's name; the CLI finds the stack's outputs by it. */
export const STACK_NAME = 'ServerlessCrawler';

/**
 * Construct ids of the main resources. They are also their CloudFormation logical ids (pinned),
 * so the local runtime, the CLI and the tests can name them without hashes.
 */
export const IDS = {
  taskQueue: 'TaskQueue',
  taskDlq: 'TaskDLQ',
  resultsQueue: 'ResultsQueue',
  resultsDlq: 'ResultsDLQ',
  pageStore: 'PageStore',
  frontierTable: 'FrontierTable',
  fetchFunction: 'FetchFunction',
  aggregateFunction: 'AggregateFunction',
  operatorPolicy: 'OperatorPolicy',
  /** Crawl lifecycle events (started, completed, cancelled, failed, skipped), for consumers that poll a queue. */
  crawlEventsQueue: 'CrawlEventsQueue',
  crawlEventsDlq: 'CrawlEventsDLQ',
  crawlEventsRule: 'CrawlEventsRule',
  /** Schedules (`crawler schedule add`) live in this EventBridge Scheduler group, sending as this role. */
  scheduleGroup: 'ScheduleGroup',
  schedulerRole: 'SchedulerRole',
  /** `--render` on AWS (CDK context `render=true`): pages to render, the function that renders them. */
  renderQueue: 'RenderQueue',
  renderDlq: 'RenderDLQ',
  renderFunction: 'RenderFunction',
  chromiumLayer: 'ChromiumLayer',
} as const;

/** The bus crawl events go to unless the stack names one (CDK context `eventBusName`). */
export const DEFAULT_EVENT_BUS = 'default';

/** Stack output keys. */
export const OUTPUTS = {
  taskQueueUrl: 'TaskQueueUrl',
  taskDlqUrl: 'TaskDlqUrl',
  resultsQueueUrl: 'ResultsQueueUrl',
  resultsDlqUrl: 'ResultsDlqUrl',
  pageBucketName: 'PageBucketName',
  accessLogBucketName: 'AccessLogBucketName',
  frontierTableName: 'FrontierTableName',
  alarmTopicArn: 'AlarmTopicArn',
  dashboardName: 'DashboardName',
  operatorPolicyArn: 'OperatorPolicyArn',
  /** The EventBridge bus the crawl events go to (`default` unless the stack names one). */
  eventBusName: 'EventBusName',
  crawlEventsQueueUrl: 'CrawlEventsQueueUrl',
  /** `crawler schedule add`: the group its schedules go in, the role they send as, and their target. */
  scheduleGroupName: 'ScheduleGroupName',
  schedulerRoleArn: 'SchedulerRoleArn',
  taskQueueArn: 'TaskQueueArn',
  /** A crawl's credentials are the SSM SecureString parameter `<prefix><crawlId>` (core/crawl/credentials.ts). */
  credentialsPrefix: 'CredentialsParameterPrefix',
  /** Only in a stack deployed with `-c render=true`. */
  renderQueueUrl: 'RenderQueueUrl',
  renderDlqUrl: 'RenderDlqUrl',
} as const;

export type OutputName = (typeof OUTPUTS)[keyof typeof OUTPUTS];

/** Handler modules, relative to the repo root. */
export const HANDLERS = {
  fetch: 'lambdas/fetch/handler.ts',
  aggregate: 'lambdas/aggregate/handler.ts',
  render: 'lambdas/render/handler.ts',
} as const;

/**
 * Resource Metadata key naming a function's handler module (repo-relative): the stack writes it, the
 * local runtime imports that module and calls its `createHandler(env, wiring)` with the function's
 * Environment.Variables (and, for a handler in its own thread, `HandlerWiring`: aws-clients.ts).
 */
export const HANDLER_METADATA_KEY = 'crawler:handler';

/** Environment variables the stack sets on the functions (lambdas/shared/env.ts validates them). */
export const FUNCTION_ENV = {
  taskQueueUrl: 'TASK_QUEUE_URL',
  /** Malformed tasks are moved here at once, with their reason. */
  taskDlqUrl: 'TASK_DLQ_URL',
  resultsQueueUrl: 'RESULTS_QUEUE_URL',
  pageBucket: 'PAGE_BUCKET',
  frontierTable: 'FRONTIER_TABLE',
  /** Config for crawls that have none stored (plain URL messages); `crawler local` sets it. */
  defaultCrawlConfig: 'DEFAULT_CRAWL_CONFIG',
  /** The EventBridge bus crawl events are published on (lambdas/core/batches/crawl-events.ts). */
  eventBusName: 'EVENT_BUS_NAME',
  /** Where the fetch function sends pages to render; without it, pages to render are kept as fetched. */
  renderQueueUrl: 'RENDER_QUEUE_URL',
  /** A malformed render message is moved here at once, with its reason. */
  renderDlqUrl: 'RENDER_DLQ_URL',
  /** How a function counts its AWS calls (CALL_COUNTING); the stack sets it from `-c callCounting`. */
  callCounting: 'CRAWLER_CALL_COUNTING',
} as const;

/**
 * How a function on Lambda counts its AWS calls (lambdas/shared/aws-call-counter.ts), the default
 * first: `estimated` counts every call, DynamoDB's units estimated from item sizes, which is what
 * `--max-cost-usd` charges; `reported` also asks DynamoDB for the units it consumed
 * (`ReturnConsumedCapacity` on every data-plane call); `off` counts nothing, and budgets charge
 * nothing. The local runtime counts as `reported` whatever this says.
 */
export const CALL_COUNTING = ['estimated', 'reported', 'off'] as const;
export type CallCounting = (typeof CALL_COUNTING)[number];

/** A crawl id: it is part of S3 keys, DynamoDB keys and MessageGroupIds. */
export const CRAWL_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const CRAWL_ID_RULE = '1-64 of A-Z a-z 0-9 _ -';

/** The SSM parameter path under which a stack keeps its crawls' credentials. */
export function credentialsPrefix(stackName: string): string {
  return `/${stackName}/credentials/`;
}

export function isCrawlId(text: string): boolean {
  return CRAWL_ID_PATTERN.test(text);
}

// --- the page bucket's key layout (docs/output.md) --------------------------------------------

/** `<name>` of an invocation's file `part`: part 0 plain, then `_0001`, ... ('_' sorts after '.'). */
function partName(invocationId: string, part: number): string {
  return part === 0 ? invocationId : `${invocationId}_${String(part).padStart(4, '0')}`;
}

function day(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function warcPrefix(crawlId: string): string {
  return `warc/${crawlId}/`;
}

/** `warc/<crawlId>/<YYYY-MM-DD>/<invocationId>[_NNNN].warc.gz`. */
export function warcKey(crawlId: string, at: Date, invocationId: string, part = 0): string {
  return `${warcPrefix(crawlId)}${day(at)}/${partName(invocationId, part)}.warc.gz`;
}

export function contentPrefix(crawlId: string): string {
  return `content/${crawlId}/`;
}

/** `content/<crawlId>/<YYYY-MM-DD>/<invocationId>[_NNNN].jsonl.gz`, named like its WARC files. */
export function contentKey(crawlId: string, at: Date, invocationId: string, part = 0): string {
  return `${contentPrefix(crawlId)}${day(at)}/${partName(invocationId, part)}.jsonl.gz`;
}

export function resultsPrefix(crawlId: string): string {
  return `results/${crawlId}/`;
}

/** `results/<crawlId>/<UTC time>-<invocation id>.jsonl.gz`: keys sort by write time, then invocation. */
export function resultPartKey(crawlId: string, at: Date, invocationId: string): string {
  return `${resultsPrefix(crawlId)}${at.toISOString().replace(/[:.]/g, '-')}-${invocationId}.jsonl.gz`;
}

export function summaryKey(crawlId: string): string {
  return `crawls/${crawlId}/summary.json`;
}

/** Written once a crawl's end event is published, so a repeated aggregate does not publish it again. */
export function endEventMarkerKey(crawlId: string): string {
  return `crawls/${crawlId}/end-event.json`;
}
