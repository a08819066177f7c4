/**
 * Crawl lifecycle events (issue 26): what the stack tells EventBridge, so a consumer learns that a
 * crawl started, ended or changed pages without polling. One schema per detail type, here; the JSON
 * Schemas in `schemas/events/` are generated from these (scripts/event-schemas.ts) and a test keeps
 * them equal.
 *
 * Every detail carries `eventId`, stable for the fact it reports (`<crawlId>:completed`,
 * `<crawlId>:page:<key>`): EventBridge has no deduplication, and a publish repeated after a failure
 * is told apart by it (docs/deploy.md, "Events").
 */
import { z } from 'zod';
import type { CrawlCounters } from '../crawl/index.ts';
import { CHANGES } from '../results/index.ts';

/** The `source` of every event the crawler publishes. */
export const EVENT_SOURCE = 'serverless-crawler';

export const DETAIL_TYPES = {
  started: 'Crawl Started',
  completed: 'Crawl Completed',
  cancelled: 'Crawl Cancelled',
  failed: 'Crawl Failed',
  pageChanged: 'Page Changed',
  skipped: 'Crawl Skipped',
} as const;

export type CrawlEventKind = keyof typeof DETAIL_TYPES;

const common = {
  v: z.literal(1),
  eventId: z.string(),
  crawlId: z.string(),
  /** When the fact happened (ISO time). */
  at: z.string(),
};

/** What a crawl's end reports: its counts, and where its results are. */
const EndSummarySchema = z.object({
  urls: z.number().int().min(0),
  byOutcome: z.record(z.string(), z.number().int().min(0)),
  bytes: z.number().int().min(0),
  requests: z.number().int().min(0),
  startedAt: z.string().optional(),
  endedAt: z.string().optional(),
  /** S3 keys in the page bucket: the summary object and the results index prefix. */
  summaryKey: z.string(),
  resultsPrefix: z.string(),
});

export const EVENT_DETAIL_SCHEMAS = {
  started: z.object({
    ...common,
    seeds: z.number().int().min(0),
    /** A re-crawl: the crawl it follows. */
    since: z.string().optional(),
  }),
  completed: z.object({ ...common, summary: EndSummarySchema }),
  /** Stopped before its end: `crawler cancel`, or its `--max-cost-usd` spent. */
  cancelled: z.object({ ...common, reason: z.string() }),
  /** A crawl that fetched no page because its URLs failed, were refused or were out of reach. */
  failed: z.object({ ...common, reason: z.string(), summary: EndSummarySchema }),
  pageChanged: z.object({
    ...common,
    url: z.string(),
    key: z.string(),
    change: z.enum(CHANGES.filter((change) => change !== 'same') as ['new', 'changed', 'removed']),
    status: z.number().int().optional(),
    /** The crawl it was compared with. */
    since: z.string(),
  }),
  /**
   * A schedule fired while its previous run still ran: `crawlId` is the run that did not start,
   * `running` the run still under way (docs/crawling.md, "Schedules").
   */
  skipped: z.object({ ...common, schedule: z.string(), running: z.string() }),
} as const;

export type EventDetail<K extends CrawlEventKind> = z.infer<(typeof EVENT_DETAIL_SCHEMAS)[K]>;

export interface CrawlEvent<K extends CrawlEventKind = CrawlEventKind> {
  kind: K;
  detail: EventDetail<K>;
}

/** Publishes events (EventBridge PutEvents); throws when some could not be published. */
export interface EventPublisher {
  publish(events: readonly CrawlEvent[]): Promise<void>;
}

export function eventOf<K extends CrawlEventKind>(kind: K, detail: EventDetail<K>): CrawlEvent<K> {
  return { kind, detail: EVENT_DETAIL_SCHEMAS[kind].parse(detail) as EventDetail<K> };
}

/** `Crawl Cancelled`: published by whoever flipped the crawl to cancelled (one conditional write). */
export function cancelledEvent(crawlId: string, endedAt: string, reason: string): CrawlEvent<'cancelled'> {
  return eventOf('cancelled', { v: 1, eventId: `${crawlId}:cancelled`, crawlId, at: endedAt, reason });
}

/** `Crawl Skipped`: a schedule's firing that started no run, its previous run still running. */
export function skippedEvent(
  schedule: string,
  crawlId: string,
  running: string,
  at: Date,
): CrawlEvent<'skipped'> {
  return eventOf('skipped', {
    v: 1,
    eventId: `${crawlId}:skipped`,
    crawlId,
    at: at.toISOString(),
    schedule,
    running,
  });
}

/** `Crawl Started`: published by the submitter whose config write created the crawl. */
export function startedEvent(
  crawlId: string,
  at: Date,
  seeds: number,
  since: string | undefined,
): CrawlEvent<'started'> {
  return eventOf('started', {
    v: 1,
    eventId: `${crawlId}:started`,
    crawlId,
    at: at.toISOString(),
    seeds,
    ...(since === undefined ? {} : { since }),
  });
}

/** Outcomes that say a URL could not be crawled (not merely left out, as `skipped` ones are). */
const FAILED_OUTCOMES = ['failed', 'blocked', 'invalid', 'disallowed'] as const;

/** `Crawl Completed`, or `Crawl Failed` for a crawl that fetched no page because its URLs failed. */
export function endEvent(
  crawlId: string,
  counters: CrawlCounters,
  keys: { summaryKey: string; resultsPrefix: string },
  at: Date,
): CrawlEvent<'completed'> | CrawlEvent<'failed'> {
  const summary = {
    urls: counters.done,
    byOutcome: { ...counters.byOutcome } as Record<string, number>,
    bytes: counters.bytes,
    requests: counters.requests,
    ...(counters.startedAt === undefined ? {} : { startedAt: counters.startedAt }),
    ...(counters.endedAt === undefined ? {} : { endedAt: counters.endedAt }),
    ...keys,
  };
  const base = { v: 1 as const, crawlId, at: at.toISOString() };
  // Nothing fetched, and something went wrong: not a re-crawl whose URLs were all not due (skipped).
  const trouble = FAILED_OUTCOMES.reduce((sum, outcome) => sum + (counters.byOutcome[outcome] ?? 0), 0);
  if ((counters.byOutcome.fetched ?? 0) === 0 && trouble > 0) {
    const reason = `no page was fetched: ${Object.entries(counters.byOutcome)
      .map(([outcome, count]) => `${count} ${outcome}`)
      .join(', ')}`;
    return eventOf('failed', { ...base, eventId: `${crawlId}:failed`, reason, summary });
  }
  return eventOf('completed', { ...base, eventId: `${crawlId}:completed`, summary });
}
