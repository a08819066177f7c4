/**
 * What the pure crawl logic needs from the outside world. Adapters (lambdas/adapters) implement
 * these over undici and the AWS SDK; core code never imports either.
 *
 * This module has the ports of fetching, rendering, the queues and the stores of blobs, configs and
 * credentials, budgets and crawl state; the frontier's are frontier-ports.ts, the host visits'
 * host-visit-ports.ts (one module per port family, all exported from index.ts).
 */

import type { CrawlResult } from '../results/index.ts';
import type { CrawlConfig, FetchLimits } from './crawl-config.ts';
import type { CredentialBundle, CredentialCookie } from './credentials.ts';
import type { RenderMessage } from './render-message.ts';
import type { VisitMessage } from './task.ts';

export interface PageRequest {
  url: URL;
  userAgent: string;
  allowPrivate: boolean;
  limits: FetchLimits;
  /** Extra request headers (a re-crawl's If-None-Match and If-Modified-Since, a crawl's credentials). */
  headers?: Record<string, string>;
  /**
   * Through this HTTP proxy (a CONNECT tunnel), with this Proxy-Authorization on the CONNECT only
   * (core/fetch/crawl-requests.ts).
   */
  proxy?: { url: string; authorization?: string };
}

export interface PageResponse {
  /** The URL requested. */
  url: string;
  /** As sent, e.g. 'GET /path?q HTTP/1.1'. */
  requestLine: string;
  /** As sent on the wire, in order, names as sent (host, connection, user-agent, ...). */
  requestHeaders: Array<[string, string]>;
  /** HTTP version of the exchange. */
  httpVersion: string;
  status: number;
  statusText: string;
  /** Response headers as received, in order, names as received (values decoded as latin1). */
  headers: Array<[string, string]>;
  /** Entity body as received: content-encoding kept, transfer-encoding removed, at most maxBodyBytes. */
  body: Uint8Array;
  /** 'length': the body was cut at maxBodyBytes; 'time': the deadline hit mid-body. */
  truncated: 'length' | 'time' | undefined;
  /** The IP address actually dialled. */
  remoteAddress: string;
  startedAt: Date;
  /**
   * When the request really left (epoch ms): its header block was written to the socket. On a busy
   * event loop this is later than the fetch call, and a host's pace is measured from it.
   */
  sentAt?: number;
  elapsedMs: number;
}

/**
 * A crawl's credentials, from the parameter its config names. Throws PermanentError
 * `credentials-unavailable` when the parameter is gone or unreadable, RetryableError when reading may
 * work later.
 */
export interface CredentialReader {
  read(parameter: string): Promise<CredentialBundle>;
}

/** A fetched HTML page to render in a browser (core/content/page-render.ts). */
export interface RenderRequest {
  url: URL;
  /** The page as fetched, decoded: the browser's document (it is not fetched again). */
  html: string;
  userAgent: string;
  /** The crawl's `--allow-private`: the page's own host may be on a private address. */
  allowPrivate: boolean;
  /** Headers the crawl adds to a subrequest to `url` (its credential headers, each within its scope). */
  headersFor?: (url: URL) => Record<string, string>;
  /** The crawl's cookies: the browser's own jar sends each by its domain, path and secure flag. */
  cookies?: readonly CredentialCookie[];
  timeMs: number;
  maxRequests: number;
  maxBytes: number;
  maxDomChars: number;
}

export type RenderedPage = (
  | { ok: true; html: string; truncated?: string }
  | { ok: false; code: string; reason: string }
) & {
  /** Subrequests to the page's own host: each holds the host's pace one crawl delay. */
  sameHostRequests: number;
  /** Subrequests refused by the address guard or the budget. */
  refused: number;
};

export interface PageRenderer {
  render(request: RenderRequest): Promise<RenderedPage>;
  /** Ends the browser (the local runtime's containers end; Lambda's are frozen). */
  close(): Promise<void>;
}

export interface PageFetcher {
  fetch(request: PageRequest): Promise<PageResponse>;
}

/** A host visit to send to the task queue, due after `delaySeconds`. */
export interface OutgoingVisit {
  visit: VisitMessage;
  delaySeconds?: number;
}

export interface TaskSender {
  sendVisits(visits: readonly OutgoingVisit[]): Promise<void>;
}

export interface ResultSender {
  sendResults(results: readonly CrawlResult[]): Promise<void>;
}

/** Pages whose response is written, to the render function (core/crawl/render-message.ts). */
export interface RenderSender {
  sendRenders(messages: readonly RenderMessage[]): Promise<void>;
}

/** Per-crawl budgets (core/crawl/budget.ts): charges counted AWS cost, stops the crawl that crosses its budget. */
export interface CrawlBudget {
  /**
   * Charges the cost of the calls made since the last charge to the crawls of `pagesByCrawl` (pages
   * captured, by crawl), shared by pages; the crawls this charge stopped (their budget is spent).
   */
  charge(pagesByCrawl: ReadonlyMap<string, number>): Promise<string[]>;
}

/** A message that cannot be processed, kept in a DLQ for inspection with why. */
export interface DeadLetter {
  body: string;
  code: string;
  reason: string;
}

export interface DeadLetterSender {
  send(letters: readonly DeadLetter[]): Promise<void>;
}

export type CrawlStateName = 'running' | 'complete' | 'cancelled';

/** A crawl's state (`crawler cancel`, completion); the adapter caches the answer for a few seconds. */
export interface CrawlStateCheck {
  stateOf(crawlId: string): Promise<CrawlStateName>;
}

export interface BlobWriter {
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
}

/** The aggregate side of the page store: index parts, and the summary written once. */
export interface ResultStore extends BlobWriter {
  list(prefix: string): AsyncIterable<string>;
  exists(key: string): Promise<boolean>;
  /** Writes `key` unless it exists; false when it already did (nothing written). */
  putIfAbsent(key: string, body: Uint8Array, contentType: string): Promise<boolean>;
}

export interface CrawlConfigReader {
  get(crawlId: string): Promise<CrawlConfig>;
}
