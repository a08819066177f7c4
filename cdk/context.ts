/**
 * The deploy-time choices a user passes as CDK context (`npx cdk deploy -c key=value`), validated
 * before anything is built so a typo fails the synth with a message naming the key, not a deploy.
 * The CLI passes `-c` values as strings; cdk.json or an in-process app may pass numbers.
 */
import type { Node } from 'constructs';
import { CONTEXT_KEYS } from './limits.ts';

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
}

export function readCrawlerContext(node: Node): CrawlerContext {
  const fetchConcurrency = parseFetchConcurrency(node.tryGetContext(CONTEXT_KEYS.fetchConcurrency));
  const alarmEmail = parseAlarmEmail(node.tryGetContext(CONTEXT_KEYS.alarmEmail));
  return {
    ...(fetchConcurrency === undefined ? {} : { fetchConcurrency }),
    ...(alarmEmail === undefined ? {} : { alarmEmail }),
  };
}

/** An integer 2..1000 (a number, or its decimal digits as the CLI passes them); undefined when absent. */
export function parseFetchConcurrency(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d+$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n) || n < MIN_EVENT_SOURCE_CONCURRENCY || n > MAX_EVENT_SOURCE_CONCURRENCY) {
    throw new ContextError(
      `context ${CONTEXT_KEYS.fetchConcurrency}: expected an integer ${MIN_EVENT_SOURCE_CONCURRENCY}..${MAX_EVENT_SOURCE_CONCURRENCY} ` +
        `(the fetch event source's maximum concurrency; Lambda's bounds), got ${JSON.stringify(value)}. ` +
        `Example: npx cdk deploy -c ${CONTEXT_KEYS.fetchConcurrency}=50`,
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
