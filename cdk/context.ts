/**
 * The deploy-time choices a user passes as CDK context (`npx cdk deploy -c key=value`), validated
 * before anything is built so a typo fails the synth with a message naming the key, not a deploy.
 * The CLI passes `-c` values as strings; cdk.json or an in-process app may pass numbers.
 */
import type { Node } from 'constructs';
import { CALL_COUNTING, type CallCounting } from '../lambdas/shared/contracts.ts';
import { CONTEXT_KEYS, DYNAMODB_PARTITION } from './limits.ts';
import { partitionCeiling } from './partition-budget.ts';

/** Lambda's bounds for an SQS event source's MaximumConcurrency. */
export const MIN_EVENT_SOURCE_CONCURRENCY = 2;
export const MAX_EVENT_SOURCE_CONCURRENCY = 1000;

/** A `-c key=value` the app cannot use: the message names the key, what it accepts and an example; no stack trace. */
export class ContextError extends Error {
  override name = 'ContextError';
}

export interface CrawlerContext {
  /** `fetchConcurrency`: the fetch event source's maximum concurrency; the limits file's default when absent. */
  readonly fetchConcurrency?: number;
  /** `alarmEmail`: subscribed to the alarm topic when given. */
  readonly alarmEmail?: string;
  /** `eventBusName`: the EventBridge bus crawl events go to; `default` when absent. */
  readonly eventBusName?: string;
  /** `render`: the render function and its queue; off when absent. */
  readonly render?: boolean;
  /** `callCounting`: set on every function as CRAWLER_CALL_COUNTING; the functions' default when absent. */
  readonly callCounting?: CallCounting;
}

export function readCrawlerContext(node: Node): CrawlerContext {
  const fetchConcurrency = parseFetchConcurrency(node.tryGetContext(CONTEXT_KEYS.fetchConcurrency));
  const alarmEmail = parseAlarmEmail(node.tryGetContext(CONTEXT_KEYS.alarmEmail));
  const eventBusName = parseEventBusName(node.tryGetContext(CONTEXT_KEYS.eventBusName));
  const render = parseRender(node.tryGetContext(CONTEXT_KEYS.render));
  const callCounting = parseCallCounting(node.tryGetContext(CONTEXT_KEYS.callCounting));
  return {
    ...(render === undefined ? {} : { render }),
    ...(callCounting === undefined ? {} : { callCounting }),
    ...(fetchConcurrency === undefined ? {} : { fetchConcurrency }),
    ...(alarmEmail === undefined ? {} : { alarmEmail }),
    ...(eventBusName === undefined ? {} : { eventBusName }),
  };
}

/**
 * An integer from 2 (Lambda's minimum) to the partition ceiling (cdk/partition-budget.ts, below
 * Lambda's 1,000), as a number or its decimal digits as the CLI passes them; undefined when absent.
 */
export function parseFetchConcurrency(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const ceiling = partitionCeiling();
  const max = Math.min(ceiling.maxFetchConcurrency, MAX_EVENT_SOURCE_CONCURRENCY);
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d+$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n) || n < MIN_EVENT_SOURCE_CONCURRENCY || n > max) {
    const share = Math.round(DYNAMODB_PARTITION.maxShare * 100);
    const capacity =
      ceiling.unit === 'write'
        ? DYNAMODB_PARTITION.writeUnitsPerSecond
        : DYNAMODB_PARTITION.readUnitsPerSecond;
    throw new ContextError(
      `context ${CONTEXT_KEYS.fetchConcurrency}: expected an integer ${MIN_EVENT_SOURCE_CONCURRENCY}..${max} ` +
        `(the fetch event source's maximum concurrency; Lambda allows ${MIN_EVENT_SOURCE_CONCURRENCY}..${MAX_EVENT_SOURCE_CONCURRENCY}, ` +
        `and above ${max} one crawl at the default delay fetches over ${Math.floor(ceiling.maxPagesPerSecond)} pages/s and its ` +
        `${ceiling.key} partition key takes over ${share} % of DynamoDB's ${capacity.toLocaleString('en-US')} ${ceiling.unit} units/s: docs/scale.md), ` +
        `got ${JSON.stringify(value)}. Example: npx cdk deploy -c ${CONTEXT_KEYS.fetchConcurrency}=${max}`,
    );
  }
  return n;
}

/** One email address; undefined when absent. */
export function parseAlarmEmail(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > 254 || !/^[^\s@,;]+@[^\s@,;]+\.[^\s@,;]+$/.test(value)) {
    throw new ContextError(
      `context ${CONTEXT_KEYS.alarmEmail}: expected one email address, got ${JSON.stringify(value)}. ` +
        `Example: npx cdk deploy -c ${CONTEXT_KEYS.alarmEmail}=ops@example.com`,
    );
  }
  return value;
}

/** An EventBridge bus name (1-256 of A-Z a-z 0-9 . _ - /, EventBridge's own rule); undefined when absent. */
export function parseEventBusName(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[/.\-_A-Za-z0-9]{1,256}$/.test(value)) {
    throw new ContextError(
      `context ${CONTEXT_KEYS.eventBusName}: expected an EventBridge bus name (1-256 of A-Z a-z 0-9 . _ - /), got ${JSON.stringify(value)}. ` +
        `Example: npx cdk deploy -c ${CONTEXT_KEYS.eventBusName}=crawler-events`,
    );
  }
  return value;
}

/** `true` or `false` (as the CLI passes them, or booleans); undefined when absent. */
export function parseRender(value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new ContextError(
    `context ${CONTEXT_KEYS.render}: expected true or false, got ${JSON.stringify(value)}. ` +
      `Example: npx cdk deploy -c ${CONTEXT_KEYS.render}=true`,
  );
}

/** One of CALL_COUNTING (contracts.ts); undefined when absent. */
export function parseCallCounting(value: unknown): CallCounting | undefined {
  if (value === undefined) return undefined;
  const mode = CALL_COUNTING.find((known) => known === value);
  if (mode !== undefined) return mode;
  throw new ContextError(
    `context ${CONTEXT_KEYS.callCounting}: expected ${CALL_COUNTING.join(', ')}, got ${JSON.stringify(value)}. ` +
      `Example: npx cdk deploy -c ${CONTEXT_KEYS.callCounting}=reported`,
  );
}
