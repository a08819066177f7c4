/**
 * The render function's work for a batch of render-queue messages (render-message.ts), one page at a
 * time in the container's browser (docs/crawling.md, "Rendering"):
 *
 * 1. the page's response is read back from its WARC record (one ranged GET: no second fetch);
 * 2. it is rendered (page-render.ts renderPage), or kept as fetched when the render fails;
 * 3. its rendered DOM goes into a WARC file as a conversion record referring to the response, its
 *    links are admitted and its content record written, and its result is sent (batch-output.ts,
 *    as the fetch batch sends a captured page's);
 * 4. the hold its visit put on its host (host-visit.ts) ends: the host's pace moves on one crawl
 *    delay for each request the browser made to it, and its visit is sent again, due then.
 *
 * Each step is safe to repeat: a message that fails comes back, and a result sent twice is finalized
 * once (aggregate-batch.ts).
 */

import { type BlobReader, parseHttpMessage, readWarcRecord } from '../archive/index.ts';
import {
  AWS_LIMITS,
  backoffSeconds,
  isCrawlError,
  RETRY_BACKOFF,
  RetryableError,
  retryStep,
} from '../base/index.ts';
import {
  decodeBody,
  type RenderOutcome,
  type RenderPageDeps,
  readHtml,
  renderPage,
} from '../content/index.ts';
import {
  type CrawlConfig,
  type CrawlConfigReader,
  type CrawlStateCheck,
  decodeText,
  frontierHost,
  mediaType,
  type PageResponse,
  parseRenderMessage,
  type RenderMessage,
  type TaskMessage,
} from '../crawl/index.ts';
import { visitOf } from '../frontier/index.ts';
import type { CrawlResult } from '../results/index.ts';
import { BatchOutput, type BatchOutputDeps } from './batch-output.ts';

export interface RenderBatchDeps extends BatchOutputDeps, RenderPageDeps {
  configs: CrawlConfigReader;
  /** A cancelled crawl's pages are not rendered (kept as fetched); a complete crawl's are dropped. */
  crawlStates?: CrawlStateCheck | undefined;
  /** Where the pages' responses are read back (the page bucket). */
  pages: Pick<BlobReader, 'get'>;
  /** CPU time of a page's content extraction (default CONTENT_LIMITS.extractionCpuMs). */
  extractionCpuMs?: number | undefined;
  sleep: (ms: number) => Promise<void>;
}

export interface RenderBatchReport {
  /** Messages to make visible again, with their delay. */
  retries: Array<{ id: string; delaySeconds: number; code: string }>;
  results: CrawlResult[];
  /** Messages done with and nothing sent: of an unknown or complete crawl, or malformed (dead-lettered). */
  dropped: Array<{ id: string; why: string }>;
}

/**
 * Ending a hold may find the visit that sent the page still releasing the host (its flush sends the
 * message, then the release follows), or one that found the hold handing it back: tried this many
 * times, this far apart.
 */
const HOLD_END_TRIES = 3;
const HOLD_END_RETRY_MS = 1_000;

export async function processRenderBatch(
  messages: readonly TaskMessage[],
  deps: RenderBatchDeps,
): Promise<RenderBatchReport> {
  const report: RenderBatchReport = { retries: [], results: [], dropped: [] };
  for (const message of messages) {
    const render = parseRenderMessage(message.body);
    if (render === undefined) {
      await deps.deadLetters.send([
        {
          body: message.body,
          code: 'invalid-render-message',
          reason: 'not a render message (render-message.ts)',
        },
      ]);
      report.dropped.push({ id: message.id, why: 'invalid-render-message' });
      continue;
    }
    try {
      const sent = await renderOne(render, deps);
      if (sent === undefined) report.dropped.push({ id: message.id, why: 'crawl-closed' });
      else report.results.push(...sent);
    } catch (error) {
      report.retries.push({
        id: message.id,
        delaySeconds: backoffSeconds(message.receiveCount, RETRY_BACKOFF.failedMessage),
        code: isCrawlError(error) ? error.code : 'render-step-failed',
      });
    }
  }
  return report;
}

/** One page: its result sent, or undefined when its crawl is unknown or complete (nothing to send). */
async function renderOne(message: RenderMessage, deps: RenderBatchDeps): Promise<CrawlResult[] | undefined> {
  const { crawlId, result } = message;
  let config: CrawlConfig;
  try {
    config = await deps.configs.get(crawlId);
  } catch (error) {
    if (isCrawlError(error) && error.code === 'unknown-crawl') return undefined;
    throw error;
  }
  const state = await deps.crawlStates?.stateOf(crawlId);
  if (state === 'complete') return undefined;
  const host = frontierHost(result.url);
  // A redelivered message whose render already ended the hold, or a hold that lapsed: the host's
  // visits may be fetching again, so the browser must not send requests to it now.
  const held = (await deps.hosts.renderHold(crawlId, host))?.token === message.hold;
  const stored = await readStoredResponse(deps.pages, result.warc);
  const decoded = decodeBody(stored.response, config);
  const text = decoded.ok ? decodeText(decoded.bytes, result.contentType) : undefined;
  const outcome: RenderOutcome = !held
    ? notRendered('render-expired', "not rendered: its host's hold had ended (its visits went on)")
    : state === 'cancelled'
      ? notRendered('render-cancelled', 'not rendered: the crawl was cancelled')
      : text === undefined
        ? notRendered('render-failed', 'not rendered: the stored page cannot be decoded')
        : await renderPage(new URL(stored.response.url), text, config, deps);
  const html = outcome.kind === 'rendered' ? outcome.html : (text ?? '');
  const source = {
    crawlId,
    key: result.key,
    url: result.url,
    finalUrl: stored.response.url,
    fetchedAt: result.fetchedAt,
    mime: mediaType(result.contentType) ?? '',
  };
  const reading = readHtml(source, html, stored.response.url, config, deps);
  const note = outcome.note;
  const output = new BatchOutput(deps);
  output.addVisit({
    kind: 'captured',
    page: {
      response: stored.response,
      result: {
        ...result,
        outlinks: reading.links.length,
        ...(reading.canonical === undefined ? {} : { canonical: reading.canonical }),
        ...(outcome.kind === 'rendered' ? { rendered: true as const } : {}),
        ...(note ?? {}),
      },
      stored: { recordId: stored.recordId },
      ...(outcome.kind === 'rendered' ? { rendered: outcome.html } : {}),
      ...(reading.content === undefined
        ? {}
        : { content: reading.content, ...(config.warcConversion ? { warcConversion: true } : {}) }),
    },
    config,
    links: reading.links,
  });
  await output.flush();
  if (held) await endHold(crawlId, host, message.hold, outcome.sameHostRequests * message.delayMs, deps);
  return output.sentResults;
}

/** The stored response of a page, and its record's id (the conversion records refer to it). */
async function readStoredResponse(
  pages: Pick<BlobReader, 'get'>,
  pointer: NonNullable<CrawlResult['warc']>,
): Promise<{ response: PageResponse; recordId: string }> {
  const record = readWarcRecord(
    await pages.get(pointer.key, { offset: pointer.offset, length: pointer.length }),
  );
  const recordId = record.header('WARC-Record-ID');
  if (record.header('WARC-Type') !== 'response' || recordId === undefined)
    throw new Error(`${pointer.key}@${pointer.offset} is not a response record`);
  const http = parseHttpMessage(record.block);
  const [httpVersion = 'HTTP/1.1', status = '200', ...statusText] = http.startLine.split(' ');
  return {
    recordId,
    response: {
      url: record.header('WARC-Target-URI') ?? '',
      requestLine: '',
      requestHeaders: [],
      httpVersion: httpVersion.replace(/^HTTP\//, ''),
      status: Number(status),
      statusText: statusText.join(' '),
      headers: http.headers,
      body: http.body,
      truncated: undefined,
      remoteAddress: record.header('WARC-IP-Address') ?? '',
      startedAt: new Date(record.header('WARC-Date') ?? 0),
      elapsedMs: 0,
    },
  };
}

function notRendered(code: string, reason: string): RenderOutcome {
  return { kind: 'failed', note: { code, reason }, sameHostRequests: 0 };
}

/**
 * Ends the page's hold on its host: the host's next request is `paceMs` from now at the earliest
 * (the browser's requests to it, a delay each), and the visit it expects is sent again, due then. A
 * visit holding the host for a moment (one that found the hold and hands it back) is waited for;
 * past the tries the message fails and comes back (its result, sent again, is finalized once).
 */
async function endHold(
  crawlId: string,
  host: string,
  token: string,
  paceMs: number,
  deps: RenderBatchDeps,
): Promise<void> {
  const nextAt = deps.now() + paceMs;
  for (let attempt = 1; attempt <= HOLD_END_TRIES; attempt++) {
    const ticket = await retryStep(() => deps.hosts.endRender(crawlId, host, token, nextAt, deps.now()));
    if (ticket !== undefined) {
      const delaySeconds = Math.min(
        AWS_LIMITS.sqsMaxDelaySeconds,
        Math.max(0, Math.ceil((nextAt - deps.now()) / 1000)),
      );
      await retryStep(() => deps.tasks.sendVisits([{ visit: visitOf(crawlId, host, ticket), delaySeconds }]));
      return;
    }
    // Not held by this render any more (a visit found the hold lapsed): nothing to end.
    if ((await deps.hosts.renderHold(crawlId, host))?.token !== token) return;
    if (attempt < HOLD_END_TRIES) await deps.sleep(HOLD_END_RETRY_MS);
  }
  throw new RetryableError(
    'hold-not-ended',
    `the render hold on ${host} could not be ended: a visit holds the host`,
  );
}
