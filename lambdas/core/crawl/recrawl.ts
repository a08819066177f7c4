/**
 * A re-crawl (`--since <crawlId>`, docs/crawling.md "Re-crawl"): what it knows of a URL from the crawl
 * it follows, the conditional request that knowledge makes, and how the new capture compares. Pure:
 * the submitter seeds these priors onto the URL items, the visit reads them back with the item, and
 * the WARC writer turns an unchanged capture into a revisit record.
 */
import { z } from 'zod';
import { RECRAWL_LIMITS } from '../base/index.ts';
import { type Change, type CrawlResult, type Revisit, WarcPointerSchema } from '../results/index.ts';

/** The earlier capture of a URL, as a re-crawl's URL item carries it (`prior`). */
export const PriorCaptureSchema = z.object({
  /** Payload SHA-1 (hex), as its result's `sha1`. */
  sha1: z.string().regex(/^[0-9a-f]{40}$/),
  /** WARC-Target-URI and WARC-Date of the record holding the payload: what a revisit refers to. */
  uri: z.string(),
  date: z.string().refine((date) => !Number.isNaN(Date.parse(date)), 'an ISO date'),
  /** That response record, and the page's content record (a `same` page's result points at it). */
  warc: WarcPointerSchema,
  content: WarcPointerSchema.optional(),
  etag: z.string().optional(),
  lastModified: z.string().optional(),
  /** Adaptive revisits: its interval (minutes) and when it is due again. */
  interval: z.number().positive().optional(),
  dueAt: z.string().optional(),
});

export type PriorCapture = z.infer<typeof PriorCaptureSchema>;

/** A validator worth keeping and sending back: at most RECRAWL_LIMITS.validatorChars characters. */
export function keptValidator(value: string | undefined): string | undefined {
  return value !== undefined && value.length <= RECRAWL_LIMITS.validatorChars ? value : undefined;
}

/**
 * The capture a result line of the earlier crawl stands for, or undefined when it stored no response
 * to compare with (not fetched, or from before payload digests). A revisit line passes on the capture
 * it confirmed, so a chain of re-crawls always refers to the record that holds the payload.
 */
export function priorOf(line: CrawlResult): PriorCapture | undefined {
  if (line.outcome !== 'fetched' && line.outcome !== 'redirected') return undefined;
  if (line.sha1 === undefined || line.warc === undefined) return undefined;
  const stored = line.revisit ?? { uri: line.finalUrl ?? line.url, date: line.fetchedAt, warc: line.warc };
  const prior: PriorCapture = { sha1: line.sha1, uri: stored.uri, date: stored.date, warc: stored.warc };
  if (line.content !== undefined) prior.content = line.content;
  const etag = keptValidator(line.etag);
  const lastModified = keptValidator(line.lastModified);
  if (etag !== undefined) prior.etag = etag;
  if (lastModified !== undefined) prior.lastModified = lastModified;
  if (line.interval !== undefined) prior.interval = line.interval;
  if (line.dueAt !== undefined) prior.dueAt = line.dueAt;
  const parsed = PriorCaptureSchema.safeParse(prior);
  return parsed.success ? parsed.data : undefined;
}

/** If-None-Match and If-Modified-Since from the earlier capture's validators (RFC 9110 §13.1). */
export function conditionalHeaders(prior: PriorCapture | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (prior?.etag !== undefined && isHeaderValue(prior.etag)) headers['if-none-match'] = prior.etag;
  if (prior?.lastModified !== undefined && isHeaderValue(prior.lastModified))
    headers['if-modified-since'] = prior.lastModified;
  return headers;
}

/** A value a request header may carry (RFC 9110 field-value: no controls but tab). */
function isHeaderValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return false;
  }
  return true;
}

/** Statuses that say a URL is gone: its line of a re-crawl is `removed`. */
const GONE_STATUSES: ReadonlySet<number> = new Set([404, 410]);

/**
 * How a response of a re-crawl compares with the earlier capture. A 304 is `same` whatever was asked
 * (the server says so); otherwise the payload digest decides.
 */
export function changeOf(status: number, payloadSha1: string, prior: PriorCapture | undefined): Change {
  if (GONE_STATUSES.has(status)) return 'removed';
  if (prior === undefined) return 'new';
  if (status === 304 || payloadSha1 === prior.sha1) return 'same';
  return 'changed';
}

/**
 * The revisit profile a capture is stored under, or undefined for a full response record: a 304
 * confirms the earlier capture (server-not-modified), and an answer with the earlier payload repeats
 * it (identical-payload-digest). Only a capture with an earlier one to refer to can be a revisit.
 */
export function revisitProfileOf(
  status: number,
  payloadSha1: string,
  prior: PriorCapture | undefined,
): Revisit['profile'] | undefined {
  if (prior === undefined) return undefined;
  if (status === 304) return 'server-not-modified';
  if (!GONE_STATUSES.has(status) && payloadSha1 === prior.sha1) return 'identical-payload-digest';
  return undefined;
}

/**
 * Adaptive revisits, as StormCrawler's AdaptiveScheduler moves a page's interval: a new page starts
 * at a day (its `fetchInterval.default`), clamped to the bounds; a changed one moves halfway toward
 * the minimum, `(1 − 0.5)·i + 0.5·min`; an unchanged one (a 304 or the same digest) grows ×1.5, up
 * to the maximum. A removed page keeps its interval (it is not due for anything).
 */
export const ADAPTIVE = { startMinutes: 1440, decrease: 0.5, increase: 0.5 } as const;

/** `--min-interval` and `--max-interval` by default: StormCrawler's 60 min and 14 days. */
export const ADAPTIVE_BOUNDS = { minMinutes: 60, maxMinutes: 20_160 } as const;

export interface IntervalBounds {
  minMinutes: number;
  maxMinutes: number;
}

export function nextInterval(
  previous: number | undefined,
  change: Change | undefined,
  bounds: IntervalBounds,
): number {
  const clamp = (minutes: number) => Math.min(bounds.maxMinutes, Math.max(bounds.minMinutes, minutes));
  if (previous === undefined || change === undefined || change === 'new') return clamp(ADAPTIVE.startMinutes);
  if (change === 'changed')
    return clamp((1 - ADAPTIVE.decrease) * previous + ADAPTIVE.decrease * bounds.minMinutes);
  if (change === 'same') return clamp(previous * (1 + ADAPTIVE.increase));
  return clamp(previous);
}

/** Whether an adaptive re-crawl fetches this URL now: no due time, or it has come. */
export function isDue(prior: PriorCapture, now: Date): boolean {
  return prior.dueAt === undefined || !(Date.parse(prior.dueAt) > now.getTime());
}
