/**
 * The per-URL step of a host visit (host-visit.ts): one stored URL of the visit's host (already
 * normalized and admitted under the crawl's rules), with the crawl's config the visit holds.
 * robots.txt, the page's gap in the host's pace, the fetch, and what the response means. Nothing is
 * parsed, normalized or read again on the way. Returns what became of the URL; the visit records a
 * retry on the URL's item, and the batch does all the sending.
 */
import { createHash } from 'node:crypto';
import type { CapturedPage } from '../archive/index.ts';
import {
  ADDRESS_BLOCKED,
  AWS_LIMITS,
  backoffSeconds,
  describeError,
  headerValue,
  isCrawlError,
  OutOfTime,
  type PermanentError,
  RETRY_BACKOFF,
  type RetryableError,
} from '../base/index.ts';
import { mayRender, type RenderedHosts, readPage } from '../content/index.ts';
import {
  type CrawlConfig,
  type CredentialReader,
  conditionalHeaders,
  effectiveDelayMs,
  type HostSlots,
  type HostUrl,
  isStorableType,
  keptValidator,
  mediaType,
  type PageFetcher,
  type PageResponse,
  type PageToRender,
  type RobotsStore,
  reservedGapMs,
  revisitProfileOf,
} from '../crawl/index.ts';
import type { DiscoveredLink } from '../frontier/index.ts';
import { bareResult, type ContentRecord, type CrawlResult } from '../results/index.ts';
import { checkRobots, type RobotsCache } from '../robots/index.ts';
import { normalizeUrl } from '../urls/index.ts';
import { type ResponseVerdict, responseVerdict } from './response-verdict.ts';

export interface UrlStepDeps {
  /** The visit's fetcher: each request waits for the host's pace and fits before the visit's deadline. */
  fetcher: PageFetcher;
  /** The visit's pacer (VisitPacer): robots.txt and the page take their gaps from it. */
  pace: HostSlots;
  robots: RobotsStore;
  robotsCache: RobotsCache;
  /** CPU time of a page's content extraction (default CONTENT_LIMITS.extractionCpuMs; tests make it small). */
  extractionCpuMs?: number;
  /**
   * The stack has a render function (the batch has its queue): pages to render are sent to it
   * (page-render.ts). False: they are kept as fetched, noted `render-unavailable`.
   */
  renders?: boolean;
  /** Hosts whose pages needed rendering (`--render auto`). */
  renderedHosts?: RenderedHosts;
  /**
   * Reads a crawl's credentials (config.credentials): the visit adds them to its requests
   * (crawl-requests.ts). Absent: a crawl with credentials fails its requests.
   */
  credentials?: CredentialReader;
  /** When the visit stops starting requests (epoch ms): a PDF's text extraction ends by then. */
  deadline?: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

export type UrlDecision =
  | { kind: 'result'; result: CrawlResult }
  /**
   * `render`: the page goes to the render function, which sends its result (render-batch.ts); its
   * visit puts a hold on the host (host-visit.ts).
   */
  | {
      kind: 'captured';
      page: CapturedPage;
      config: CrawlConfig;
      links: DiscoveredLink[];
      render?: Omit<PageToRender, 'hold' | 'holdUntil'>;
    }
  /**
   * A fetch that failed with attempts left: to be tried again at `retryAt` (epoch ms), `attempts`
   * made so far (the visit records both on the URL's item and goes on with its other URLs).
   */
  | { kind: 'retry'; attempts: number; retryAt: number; code: string }
  /**
   * robots.txt is being fetched by another visit, or is unavailable: no URL of the host is fetched
   * before `until` (the visit hands its whole host back).
   */
  | { kind: 'robots-wait'; until: number; reason: string };

/** A retry waits at most this long: the visit handing its host back for it sends one message. */
const MAX_RETRY_DELAY_SECONDS = AWS_LIMITS.sqsMaxDelaySeconds;
/** A robots.txt wait is at least this long (another visit's fetch is not answered sooner). */
const MIN_ROBOTS_WAIT_MS = 1_000;

/**
 * One URL of the visit's host. An AWS call that kept failing (the robots.txt store) throws, and so
 * does OutOfTime from the visit's fetcher (no request started, no attempt spent).
 */
export async function fetchUrl(
  crawlId: string,
  item: HostUrl,
  config: CrawlConfig,
  deps: UrlStepDeps,
): Promise<UrlDecision> {
  const step: UrlStep = {
    crawlId,
    item,
    config,
    deps,
    subject: { crawlId, key: item.key, url: item.url, depth: item.depth },
    url: new URL(item.url),
    attempt: (item.attempts ?? 0) + 1,
  };

  // robots.txt first: it may hold the host back, and its Crawl-delay sets the gap before the page.
  let crawlDelaySeconds: number | undefined;
  if (config.respectRobots) {
    const robots = await robotsFirst(step);
    if ('kind' in robots) return robots;
    crawlDelaySeconds = robots.crawlDelaySeconds;
  }

  // The page's gap: the request waits it out from the previous one's real departure (robots.txt's
  // included) in the visit's fetcher, so a Crawl-delay found just now already holds for this page.
  const { delayMs, capped: crawlDelayCapped } = effectiveDelayMs(config, crawlDelaySeconds);
  await deps.pace.reserve(reservedGapMs(delayMs), deps.now());

  const started = deps.now();
  let response: PageResponse;
  try {
    response = await deps.fetcher.fetch({
      url: step.url,
      userAgent: config.userAgent,
      allowPrivate: config.allowPrivate,
      limits: config.limits,
      ...(item.prior === undefined ? {} : { headers: conditionalHeaders(item.prior) }),
    });
  } catch (error) {
    // Not started for lack of time: no attempt spent; the visit hands its host back.
    if (error instanceof OutOfTime) throw error;
    return fetchFailed(step, error, started);
  }
  return answered(step, response, delayMs, crawlDelayCapped);
}

/** One URL's step (fetchUrl): what each of its parts reads. */
interface UrlStep {
  crawlId: string;
  item: HostUrl;
  config: CrawlConfig;
  deps: UrlStepDeps;
  /** The URL as its result names it. */
  subject: { crawlId: string; key: string; url: string; depth: number };
  url: URL;
  /** This fetch's attempt (1 for the first). */
  attempt: number;
}

/** robots.txt's verdict on the URL: a decision when it ends or defers the URL, else its Crawl-delay. */
async function robotsFirst(step: UrlStep): Promise<UrlDecision | { crawlDelaySeconds: number | undefined }> {
  const { crawlId, config, deps, subject } = step;
  const verdict = await checkRobots(step.url, config, {
    store: deps.robots,
    slots: deps.pace,
    fetcher: deps.fetcher,
    crawlId,
    now: deps.now,
    cache: deps.robotsCache,
    sleep: deps.sleep,
  });
  if (verdict.kind === 'disallowed') {
    const why = { code: 'robots', reason: verdict.reason };
    return { kind: 'result', result: bareResult(subject, 'disallowed', at(deps), why) };
  }
  if (verdict.kind === 'failed') {
    const outcome = verdict.code === ADDRESS_BLOCKED ? 'blocked' : 'failed';
    return { kind: 'result', result: bareResult(subject, outcome, at(deps), verdict) };
  }
  if (verdict.kind === 'defer') {
    const until = Math.max(verdict.untilMs, deps.now() + MIN_ROBOTS_WAIT_MS);
    return { kind: 'robots-wait', until, reason: verdict.reason };
  }
  return { crawlDelaySeconds: verdict.crawlDelaySeconds };
}

/**
 * A retry waits the backoff, or Retry-After if longer, at most 900 s; undefined once attempts are
 * spent.
 */
function retryOrGiveUp(
  { attempt, config, deps }: UrlStep,
  code: string,
  retryAfterMs: number | undefined,
): UrlDecision | undefined {
  if (attempt >= config.maxAttempts) return undefined;
  const wanted = Math.max(backoffSeconds(attempt, RETRY_BACKOFF.page), Math.ceil((retryAfterMs ?? 0) / 1000));
  const delaySeconds = Math.min(MAX_RETRY_DELAY_SECONDS, wanted);
  return { kind: 'retry', attempts: attempt, retryAt: deps.now() + delaySeconds * 1000, code };
}

/** A fetch that failed without an answer (`started`: when it did): a result, or a retry. */
function fetchFailed(step: UrlStep, error: unknown, started: number): UrlDecision {
  const { config, deps, subject, attempt } = step;
  const elapsed = deps.now() - started;
  if (isCrawlError(error) && error.disposition === 'record') {
    const permanent = error as PermanentError;
    const why = { code: permanent.code, reason: permanent.message };
    return {
      kind: 'result',
      result: { ...bareResult(subject, permanent.outcome, new Date(started), why), ms: elapsed, attempt },
    };
  }
  const code = isCrawlError(error) ? error.code : 'unexpected-error';
  const retryAfter =
    isCrawlError(error) && error.disposition === 'retry' ? (error as RetryableError).retryAfterMs : undefined;
  if (retryAfter !== undefined && retryAfter > config.maxRetryAfterMs) {
    const why = tooLongRetryAfter(retryAfter, config);
    return {
      kind: 'result',
      result: { ...bareResult(subject, 'failed', new Date(started), why), ms: elapsed, attempt },
    };
  }
  const retry = retryOrGiveUp(step, code, retryAfter);
  if (retry) return retry;
  const reason = `${describeError(error)} (gave up after ${attempt} attempts)`;
  return {
    kind: 'result',
    result: { ...bareResult(subject, 'failed', new Date(started), { code, reason }), ms: elapsed, attempt },
  };
}

/** What the server's answer means for the URL (`delayMs`: the page's gap, a render keeps it). */
async function answered(
  step: UrlStep,
  response: PageResponse,
  delayMs: number,
  crawlDelayCapped: boolean,
): Promise<UrlDecision> {
  const { crawlId, item, config, deps } = step;
  const verdict = responseVerdict(response.status, response.headers, response.url);
  const base: CrawlResult = {
    ...bareResult(step.subject, 'fetched', response.startedAt),
    finalUrl: response.url,
    status: response.status,
    contentType: headerValue(response.headers, 'content-type'),
    bytes: response.body.byteLength,
    ...(response.truncated ? { truncated: response.truncated } : {}),
    ms: response.elapsedMs,
    attempt: step.attempt,
    ...(crawlDelayCapped ? { crawlDelayCapped: true as const } : {}),
    ...validatorsOf(response.headers),
  };

  // The server confirms the earlier capture: a revisit record, and no links (that capture's links
  // are URLs of the earlier crawl, each due again in this one).
  if (response.status === 304 && item.prior !== undefined && config.since !== undefined)
    return captured(step, response, base);

  if (verdict.kind === 'retry') return retryAnswer(step, response, base, verdict);
  if (verdict.kind === 'failed')
    return captured(step, response, {
      ...base,
      outcome: 'failed',
      code: verdict.code,
      reason: verdict.reason,
    });
  if (verdict.kind === 'redirect') return redirectAnswer(step, response, base, verdict.location.href);
  if (!isStorableType(base.contentType, config.storeTypes)) {
    const type = mediaType(base.contentType) ?? 'none (taken as application/octet-stream)';
    const reason = `content type ${type} is not in the crawl's storeTypes (${config.storeTypes.join(', ')})`;
    return { kind: 'result', result: { ...base, outcome: 'skipped', code: 'content-type', reason } };
  }
  // A re-crawl's page the server sends unchanged is stored as a revisit (recrawl.ts, as the WARC
  // writer decides): its content is the earlier capture's, so it is not rendered again. Hashed here
  // only in a crawl that may render: the writer hashes every body anyway.
  const unchanged =
    mayRender(config) &&
    config.since !== undefined &&
    item.prior !== undefined &&
    revisitProfileOf(response.status, createHash('sha1').update(response.body).digest('hex'), item.prior) !==
      undefined;
  const page = await readPage(crawlId, response, base, config, { ...deps, unchanged });
  return captured(
    step,
    response,
    {
      ...base,
      ...(page.canonical ? { canonical: page.canonical } : {}),
      ...(page.note ?? {}),
    },
    page.links,
    page.content,
    page.render === undefined ? undefined : { ...page.render, delayMs },
  );
}

/** The server asked for a retry (`code`, and perhaps Retry-After): the host rests, the URL waits or ends. */
async function retryAnswer(
  step: UrlStep,
  response: PageResponse,
  base: CrawlResult,
  verdict: Extract<ResponseVerdict, { kind: 'retry' }>,
): Promise<UrlDecision> {
  const { config, deps } = step;
  const asked = verdict.retryAfterMs;
  // The host rests as asked, up to the crawl's cap; a URL asked to wait longer ends now.
  if (asked !== undefined) await deps.pace.pushBack(deps.now() + Math.min(asked, config.maxRetryAfterMs));
  if (asked !== undefined && asked > config.maxRetryAfterMs)
    return captured(step, response, { ...base, outcome: 'failed', ...tooLongRetryAfter(asked, config) });
  const retry = retryOrGiveUp(step, verdict.code, asked);
  if (retry) return retry;
  return captured(step, response, {
    ...base,
    outcome: 'failed',
    code: verdict.code,
    reason: `the server answered HTTP ${response.status} on ${step.attempt} attempts`,
  });
}

/** A redirect to `location`: followed as a link, unless it loops, is too long or ends a long chain. */
function redirectAnswer(
  step: UrlStep,
  response: PageResponse,
  base: CrawlResult,
  location: string,
): UrlDecision {
  const { item, config } = step;
  const hops = (item.redirects ?? 0) + 1;
  const target = normalizeUrl(location, { maxUrlLength: Number.POSITIVE_INFINITY });
  if (target.ok && target.url === step.subject.url) {
    // A page redirecting to itself (cookie checks, broken rewrites): say so; dedup would end it anyway.
    const reason = `redirect loop: the Location ${location.slice(0, 200)} is this URL`;
    return captured(step, response, {
      ...base,
      outcome: 'redirected',
      code: 'redirect-loop',
      reason,
      location,
    });
  }
  if (location.length > config.limits.maxUrlLength) {
    // Result records stay small enough for SQS: a huge Location is cut in the record, not followed.
    const reason = `redirect Location is ${location.length} characters; at most ${config.limits.maxUrlLength} are followed`;
    const clipped = location.slice(0, config.limits.maxUrlLength);
    return captured(step, response, {
      ...base,
      outcome: 'redirected',
      code: 'url-too-long',
      reason,
      location: clipped,
    });
  }
  if (hops > config.limits.maxRedirects) {
    const reason = `redirect chain longer than ${config.limits.maxRedirects} hops (next: ${location})`;
    return captured(step, response, {
      ...base,
      outcome: 'redirected',
      code: 'too-many-redirects',
      reason,
      location,
    });
  }
  return captured(step, response, { ...base, outcome: 'redirected', location }, [
    { url: location, nofollow: false, redirects: hops },
  ]);
}

/** The page as captured, for the WARC writer and the batch: its result, links, content, render. */
function captured(
  { item, config }: UrlStep,
  response: PageResponse,
  result: CrawlResult,
  links: DiscoveredLink[] = [],
  content?: ContentRecord,
  render?: Omit<PageToRender, 'hold' | 'holdUntil'>,
): UrlDecision {
  return {
    kind: 'captured',
    page: {
      response,
      result: { ...result, outlinks: links.length },
      ...(content === undefined
        ? {}
        : { content, ...(config.warcConversion ? { warcConversion: true } : {}) }),
      ...(config.since === undefined ? {} : { recrawl: { prior: item.prior } }),
      ...(config.adaptive === undefined ? {} : { adaptive: config.adaptive }),
    },
    config,
    links,
    ...(render === undefined ? {} : { render }),
  };
}

/** ETag and Last-Modified as sent, for a later re-crawl's conditional request. */
function validatorsOf(headers: ReadonlyArray<[string, string]>): { etag?: string; lastModified?: string } {
  const etag = keptValidator(headerValue(headers, 'etag'));
  const lastModified = keptValidator(headerValue(headers, 'last-modified'));
  return {
    ...(etag === undefined ? {} : { etag }),
    ...(lastModified === undefined ? {} : { lastModified }),
  };
}

function tooLongRetryAfter(askedMs: number, config: CrawlConfig): { code: string; reason: string } {
  const asked = Math.round(askedMs / 1000);
  const cap = Math.round(config.maxRetryAfterMs / 1000);
  return {
    code: 'retry-after-too-long',
    reason: `the server asked to retry in ${asked} s (Retry-After); the crawl waits at most ${cap} s (maxRetryAfterMs)`,
  };
}

function at(deps: Pick<UrlStepDeps, 'now'>): Date {
  return new Date(deps.now());
}
