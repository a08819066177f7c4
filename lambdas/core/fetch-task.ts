/**
 * The per-URL decision: parse, the crawl's state and rules, robots.txt, the host's pace, fetch, and
 * what the response means. Returns a decision; the caller does all the sending.
 *
 * Its caller is a host visit (host-visit.ts), which owns the URL's host and builds the task from the
 * URL item: `slots` is the visit's in-memory pacer, and `frontier` the visit's ownership, whose claim
 * is granted at once with the item's attempts and writes nothing (only a retry writes: `postpone`
 * sets the item's `att` and `retryAt`). The paths for a claim held elsewhere, a URL already done and
 * a held slot (`notBefore`, `slotDelayMs`) date from per-URL scheduling: a visit never meets them.
 */
import { backoffSeconds } from './backoff.ts';
import { htmlContentRecord, textContentRecord } from './content-extract.ts';
import { type ContentRecord, contentKind } from './content-record.ts';
import { type CrawlConfig, hasSeeds } from './crawl-config.ts';
import {
  describeError,
  isCrawlError,
  OutOfTime,
  type PermanentError,
  type RetryableError,
} from './errors.ts';
import { headerValue } from './http-headers.ts';
import { AWS_LIMITS, RETRY_BACKOFF } from './limits.ts';
import { crawlScope, type DiscoveredLink } from './link-admission.ts';
import { extractLinks } from './links.ts';
import { decodeContent, decodeText, isStorableType, mediaType } from './page-content.ts';
import { effectiveDelayMs, hostKey, reservedGapMs, slotPlan } from './politeness.ts';
import type {
  CrawlConfigReader,
  CrawlStateCheck,
  HostSlots,
  PageFetcher,
  RobotsStore,
  UrlClaims,
} from './ports.ts';
import { responseVerdict } from './response-verdict.ts';
import type { CrawlResult } from './result.ts';
import { bareResult } from './result-builders.ts';
import { checkRobots, type RobotsCache } from './robots-gate.ts';
import type { Task } from './task.ts';
import { openTask } from './task-admission.ts';
import { normalizeUrl } from './url-normalize.ts';
import type { CapturedPage } from './warc-batch.ts';

export interface TaskMessage {
  id: string;
  body: string;
  /** SQS ApproximateReceiveCount: 1 on first delivery. */
  receiveCount: number;
}

export interface FetchTaskDeps {
  fetcher: PageFetcher;
  configs: CrawlConfigReader;
  frontier: UrlClaims;
  slots: HostSlots;
  robots: RobotsStore;
  robotsCache: RobotsCache;
  /**
   * A cancelled crawl's tasks end as `cancelled` results before any other work; a complete crawl's
   * are dropped (its summary is written: nothing may add to it).
   */
  crawlStates?: CrawlStateCheck;
  /** CPU time of a page's content extraction (default CONTENT_LIMITS.extractionCpuMs; tests make it small). */
  extractionCpuMs?: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

export type TaskDecision =
  /** `claimed`: the claim the decision holds (in a visit, the host's lease: nothing to give back). */
  | { kind: 'result'; result: CrawlResult; claimed?: ClaimedUrl }
  | {
      kind: 'captured';
      page: CapturedPage;
      config: CrawlConfig;
      links: DiscoveredLink[];
      claimed?: ClaimedUrl;
    }
  /** Another holder's claim (never in a visit: its claims are granted): look again after `delaySeconds`. */
  | { kind: 'retry'; delaySeconds: number; code: string }
  /**
   * Not now. `retry`: a fetch that failed with attempts left, already postponed on its URL item
   * (`att`, `retryAt`): the visit goes on with its other URLs. `robots-pending`: robots.txt is being
   * fetched by another visit, or is unavailable: the visit hands its whole host back for
   * `delaySeconds`. `politeness`: the host's next slot is more than 2 s away (a Crawl-delay pushed
   * it): the visit waits for it on its next round. `task` is what per-URL scheduling re-sent; a visit
   * sends no task.
   */
  | { kind: 'defer'; task: Task; delaySeconds: number; code: string; retry?: true }
  /** Not to be done: a URL that already has its result, or one of a complete crawl (the visit stops). */
  | { kind: 'drop'; why: 'duplicate' | 'crawl-complete' }
  /** Not a URL of any crawl (an unknown crawl id): no result (the visit stops). */
  | { kind: 'reject'; code: string; reason: string };

type DeferDecision = Extract<TaskDecision, { kind: 'defer' }>;

export interface ClaimedUrl {
  crawlId: string;
  key: string;
  /** An earlier claim did not finish: its links may be unsent (ClaimResult `relink`). */
  relink: boolean;
}

const MAX_SQS_DELAY_SECONDS = AWS_LIMITS.sqsMaxDelaySeconds;
/**
 * A held slot (`notBefore`, per-URL scheduling's deferrals) further ahead than this is not one the
 * crawler handed out: it is ignored and a slot reserved. A visit's tasks carry no `notBefore`.
 */
const MAX_NOT_BEFORE_AHEAD_MS = 24 * 60 * 60 * 1000;
/** A claim's lease beyond the request deadline; a visit's claim ignores it (the host's lease covers it). */
const CLAIM_MARGIN_MS = 15_000;
/** A held slot is given up (another reserved) when the request would leave later than this after it. */
const SLOT_LATENESS_MS = 50;
const MAX_SLOT_ROUNDS = 3;

function clampDelay(ms: number): number {
  return Math.min(MAX_SQS_DELAY_SECONDS, Math.max(1, Math.ceil(ms / 1000)));
}

/**
 * One URL's decision. A decision that fails (an AWS call that kept failing) gives back the claim it
 * made and rethrows; one that ends with the claim still held says so (`claimed`). In a visit both
 * are no-ops: the claim is the visit's lease on the host, which the visit's end releases.
 */
export async function decideTask(message: TaskMessage, deps: FetchTaskDeps): Promise<TaskDecision> {
  const claim: { held?: ClaimedUrl } = {};
  try {
    const decision = await decide(message, deps, claim);
    return claim.held && (decision.kind === 'result' || decision.kind === 'captured')
      ? { ...decision, claimed: claim.held }
      : decision;
  } catch (error) {
    if (claim.held) await deps.frontier.release(claim.held.crawlId, claim.held.key).catch(() => {});
    throw error;
  }
}

async function decide(
  message: TaskMessage,
  deps: FetchTaskDeps,
  claim: { held?: ClaimedUrl },
): Promise<TaskDecision> {
  const opened = await openTask(message, deps);
  if (opened.kind === 'drop') return { kind: 'drop', why: opened.why };
  if (opened.kind !== 'open') return opened;
  const { task, config, subject } = opened;
  // Anyone who can send to the queue can send a task: the crawl's own rules hold against it.
  const broken = ruleBroken(config, task, subject.url);
  if (broken) return { kind: 'result', result: bareResult(subject, 'skipped', at(deps), broken) };
  const url = new URL(subject.url);
  const priorAttempts = (task.attempt ?? 0) + message.receiveCount - 1;
  // Counted on from the URL item's attempts once claimed (earlier visits may have made some).
  let attempt = priorAttempts + 1;
  const deferred = (delaySeconds: number, code: string, extra: Partial<Task>): DeferDecision => ({
    kind: 'defer',
    task: { ...task, url: subject.url, attempt: priorAttempts, ...extra },
    delaySeconds,
    code,
  });

  const heldSlot =
    task.notBefore !== undefined && task.notBefore - deps.now() <= MAX_NOT_BEFORE_AHEAD_MS
      ? task.notBefore
      : undefined;
  // robots.txt first: it may hold this task back, and its Crawl-delay sets the gap between requests.
  let crawlDelaySeconds: number | undefined;
  let gateSlot: number | undefined;
  if (config.respectRobots) {
    const verdict = await checkRobots(url, config, {
      store: deps.robots,
      slots: deps.slots,
      fetcher: deps.fetcher,
      crawlId: task.crawlId,
      now: deps.now,
      cache: deps.robotsCache,
      sleep: deps.sleep,
      ...(heldSlot === undefined ? {} : { heldSlot }),
    });
    if (verdict.kind === 'disallowed') {
      const why = { code: 'robots', reason: verdict.reason };
      return { kind: 'result', result: bareResult(subject, 'disallowed', at(deps), why) };
    }
    if (verdict.kind === 'failed') {
      const outcome = verdict.code === 'address-blocked' ? 'blocked' : 'failed';
      return { kind: 'result', result: bareResult(subject, outcome, at(deps), verdict) };
    }
    if (verdict.kind === 'defer') {
      // A slot the gate keeps for this task belongs to its robots.txt claim, not to a page (no slotDelayMs).
      const extra = { notBefore: verdict.slot, slotDelayMs: undefined };
      return deferred(clampDelay(verdict.untilMs - deps.now()), 'robots-pending', extra);
    }
    gateSlot = verdict.slot;
    crawlDelaySeconds = verdict.crawlDelaySeconds;
  }

  const { delayMs, capped: crawlDelayCapped } = effectiveDelayMs(config, crawlDelaySeconds);
  const host = hostKey(url);
  // A page slot from an earlier deferral (per-URL scheduling; never in a visit) is used if still ours
  // (the gate did not spend it on robots.txt) and reserved with a gap at least as wide as the one now
  // required.
  const held =
    heldSlot !== undefined &&
    task.slotDelayMs !== undefined &&
    task.slotDelayMs >= delayMs &&
    (!config.respectRobots || gateSlot === heldSlot)
      ? heldSlot
      : undefined;
  const leaseMs = config.limits.totalTimeoutMs + CLAIM_MARGIN_MS;
  let claimed = false;
  let slot = held;
  for (let round = 1; ; round++) {
    const now = deps.now();
    slot ??= await deps.slots.reserve(task.crawlId, host, reservedGapMs(delayMs), now);
    const plan = slotPlan(slot, now);
    if (plan.kind === 'defer') {
      if (claimed) {
        await deps.frontier.release(task.crawlId, subject.key);
        claim.held = undefined;
      }
      return deferred(plan.delaySeconds, 'politeness', { notBefore: plan.notBefore, slotDelayMs: delayMs });
    }
    if (!claimed) {
      // Claim before waiting, so the request leaves at its slot rather than one write later (a visit's
      // claim writes nothing).
      const frontierUrl = { key: subject.key, url: subject.url, depth: task.depth };
      const claimResult = await deps.frontier.claim(task.crawlId, frontierUrl, leaseMs, deps.now());
      if (claimResult.status === 'done') return { kind: 'drop', why: 'duplicate' };
      if (claimResult.status === 'held') {
        const delaySeconds = clampDelay(claimResult.leaseUntil - deps.now());
        return { kind: 'retry', code: 'claim-held', delaySeconds };
      }
      claimed = true;
      claim.held = { crawlId: task.crawlId, key: subject.key, relink: claimResult.relink };
      attempt = Math.max(attempt, claimResult.attempts + 1);
    }
    if (plan.kind === 'wait') await deps.sleep(Math.max(0, slot - deps.now()));
    // A slot can be overtaken: the host paused (Retry-After) after the slot was handed out, or this
    // request is so late (slow writes, a busy container) that it would crowd the next slot. The pause
    // is read first, so the lateness measured last is the request's own. With no delay there is no
    // gap to protect: lateness does not matter.
    const paused = slot !== now && (await pausedAfter(slot));
    const late = delayMs > 0 && deps.now() - slot > SLOT_LATENESS_MS;
    // After a few rounds the request goes late rather than not at all. In a visit that cannot crowd
    // anyone: the pacer's `depart` still keeps the gap from the previous request's real departure
    // (host-visit.ts), so a round here only costs a gap.
    if ((!paused && !late) || round >= MAX_SLOT_ROUNDS) break;
    slot = undefined;
  }

  async function pausedAfter(reserved: number): Promise<boolean> {
    const paused = await deps.slots.pausedUntil(task.crawlId, host);
    return paused !== undefined && paused > reserved;
  }

  /**
   * A retry is postponed on the URL's item: `att` and `retryAt` = now + the backoff, or Retry-After if
   * longer, at most 900 s; visits skip the URL until then. Undefined once attempts are spent.
   */
  const retryOrGiveUp = async (
    code: string,
    retryAfterMs: number | undefined,
  ): Promise<TaskDecision | undefined> => {
    if (attempt >= config.maxAttempts) return undefined;
    const wanted = Math.max(
      backoffSeconds(attempt, RETRY_BACKOFF.page),
      Math.ceil((retryAfterMs ?? 0) / 1000),
    );
    const delaySeconds = Math.min(MAX_SQS_DELAY_SECONDS, wanted);
    await deps.frontier.postpone(task.crawlId, subject.key, attempt, deps.now() + delaySeconds * 1000);
    claim.held = undefined;
    const next = { attempt, notBefore: undefined, slotDelayMs: undefined };
    return { ...deferred(delaySeconds, code, next), retry: true };
  };

  const started = deps.now();
  let response: Awaited<ReturnType<PageFetcher['fetch']>>;
  try {
    response = await deps.fetcher.fetch({
      url,
      userAgent: config.userAgent,
      allowPrivate: config.allowPrivate,
      limits: config.limits,
    });
  } catch (error) {
    // Not started for lack of time: no attempt spent; the visit hands its host back.
    if (error instanceof OutOfTime) throw error;
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
      isCrawlError(error) && error.disposition === 'retry'
        ? (error as RetryableError).retryAfterMs
        : undefined;
    if (retryAfter !== undefined && retryAfter > config.maxRetryAfterMs) {
      const why = tooLongRetryAfter(retryAfter, config);
      return {
        kind: 'result',
        result: { ...bareResult(subject, 'failed', new Date(started), why), ms: elapsed, attempt },
      };
    }
    const retry = await retryOrGiveUp(code, retryAfter);
    if (retry) return retry;
    const reason = `${describeError(error)} (gave up after ${attempt} attempts)`;
    return {
      kind: 'result',
      result: { ...bareResult(subject, 'failed', new Date(started), { code, reason }), ms: elapsed, attempt },
    };
  }

  const verdict = responseVerdict(response.status, response.headers, response.url);
  const base: CrawlResult = {
    ...bareResult(subject, 'fetched', response.startedAt),
    finalUrl: response.url,
    status: response.status,
    contentType: headerValue(response.headers, 'content-type'),
    bytes: response.body.byteLength,
    ...(response.truncated ? { truncated: response.truncated } : {}),
    ms: response.elapsedMs,
    attempt,
    ...(crawlDelayCapped ? { crawlDelayCapped: true as const } : {}),
  };
  const captured = (
    result: CrawlResult,
    links: DiscoveredLink[] = [],
    content?: ContentRecord,
  ): TaskDecision => ({
    kind: 'captured',
    page: {
      response,
      result: { ...result, outlinks: links.length },
      ...(content === undefined
        ? {}
        : { content, ...(config.warcConversion ? { warcConversion: true } : {}) }),
    },
    config,
    links,
  });

  if (verdict.kind === 'retry') {
    const asked = verdict.retryAfterMs;
    // The host rests as asked, up to the crawl's cap; a URL asked to wait longer ends now.
    if (asked !== undefined)
      await deps.slots.pushBack(
        task.crawlId,
        hostKey(url),
        deps.now() + Math.min(asked, config.maxRetryAfterMs),
      );
    if (asked !== undefined && asked > config.maxRetryAfterMs)
      return captured({ ...base, outcome: 'failed', ...tooLongRetryAfter(asked, config) });
    const retry = await retryOrGiveUp(verdict.code, asked);
    if (retry) return retry;
    return captured({
      ...base,
      outcome: 'failed',
      code: verdict.code,
      reason: `the server answered HTTP ${response.status} on ${attempt} attempts`,
    });
  }
  if (verdict.kind === 'failed')
    return captured({ ...base, outcome: 'failed', code: verdict.code, reason: verdict.reason });
  if (verdict.kind === 'redirect') {
    const hops = (task.redirects ?? 0) + 1;
    const location = verdict.location.href;
    const target = normalizeUrl(location, { maxUrlLength: Number.POSITIVE_INFINITY });
    if (target.ok && target.url === subject.url) {
      // A page redirecting to itself (cookie checks, broken rewrites): say so; dedup would end it anyway.
      const reason = `redirect loop: the Location ${location.slice(0, 200)} is this URL`;
      return captured({ ...base, outcome: 'redirected', code: 'redirect-loop', reason, location });
    }
    if (location.length > config.limits.maxUrlLength) {
      // Result records stay small enough for SQS: a huge Location is cut in the record, not followed.
      const reason = `redirect Location is ${location.length} characters; at most ${config.limits.maxUrlLength} are followed`;
      const clipped = location.slice(0, config.limits.maxUrlLength);
      return captured({ ...base, outcome: 'redirected', code: 'url-too-long', reason, location: clipped });
    }
    if (hops > config.limits.maxRedirects) {
      const reason = `redirect chain longer than ${config.limits.maxRedirects} hops (next: ${location})`;
      return captured({ ...base, outcome: 'redirected', code: 'too-many-redirects', reason, location });
    }
    return captured({ ...base, outcome: 'redirected', location }, [
      { url: location, nofollow: false, redirects: hops },
    ]);
  }
  if (!isStorableType(base.contentType, config.storeTypes)) {
    const type = mediaType(base.contentType) ?? 'none (taken as application/octet-stream)';
    const reason = `content type ${type} is not in the crawl's storeTypes (${config.storeTypes.join(', ')})`;
    return { kind: 'result', result: { ...base, outcome: 'skipped', code: 'content-type', reason } };
  }
  const page = readPage(response, base, config, deps.extractionCpuMs);
  return captured(
    { ...base, ...(page.canonical ? { canonical: page.canonical } : {}), ...(page.note ?? {}) },
    page.links,
    page.content,
  );
}

interface PageReading {
  links: DiscoveredLink[];
  canonical?: string;
  content?: ContentRecord;
  note?: { code: string; reason: string };
}

/**
 * Links (and the canonical URL) of an HTML page, and the content record of a page with text
 * (content-record.ts), both from one decode of the body. Other content is stored but not parsed.
 */
function readPage(
  response: Awaited<ReturnType<PageFetcher['fetch']>>,
  result: CrawlResult,
  config: CrawlConfig,
  extractionCpuMs: number | undefined,
): PageReading {
  const mime = mediaType(result.contentType);
  const kind = contentKind(mime);
  const wantsContent = config.content !== 'none' && kind !== undefined;
  if (kind !== 'html' && !wantsContent) return { links: [] };
  const decoded = decodeContent(
    response.body,
    headerValue(response.headers, 'content-encoding'),
    config.limits.maxDecodedBytes,
    { maxRatio: config.limits.maxDecodeRatio },
  );
  if (!decoded.ok) {
    const what = kind === 'html' ? 'links' : 'text';
    return { links: [], note: { code: decoded.code, reason: `${what} not extracted: ${decoded.reason}` } };
  }
  const text = decodeText(decoded.bytes, result.contentType);
  const source = {
    crawlId: result.crawlId,
    key: result.key,
    url: result.url,
    finalUrl: response.url,
    fetchedAt: result.fetchedAt,
    mime: mime ?? '',
  };
  if (kind !== 'html') return { links: [], content: textContentRecord(source, text) };
  const extracted = extractLinks(text, response.url, { followNofollow: config.followNofollow });
  return {
    links: extracted.links.map((link) => ({ url: link.url, nofollow: link.nofollow })),
    ...(extracted.canonical ? { canonical: extracted.canonical } : {}),
    ...(config.content === 'none'
      ? {}
      : {
          content: htmlContentRecord(source, text, response.url, config.content, {
            ...(extractionCpuMs === undefined ? {} : { cpuBudgetMs: extractionCpuMs }),
          }),
        }),
  };
}

/** A task the crawl's rules would never have made: out of scope, or deeper than `maxDepth`. */
function ruleBroken(
  config: CrawlConfig,
  task: Task,
  url: string,
): { code: string; reason: string } | undefined {
  if (task.depth > config.maxDepth)
    return { code: 'depth', reason: `depth ${task.depth} is beyond --max-depth ${config.maxDepth}` };
  // A crawl without seeds (the default crawl of bare URLs) has no scope of its own: each URL is its own seed.
  if (!hasSeeds(config)) return undefined;
  const inScope = crawlScope(config).inScope(new URL(url));
  return inScope.ok ? undefined : { code: 'scope', reason: inScope.detail };
}

function tooLongRetryAfter(askedMs: number, config: CrawlConfig): { code: string; reason: string } {
  const asked = Math.round(askedMs / 1000);
  const cap = Math.round(config.maxRetryAfterMs / 1000);
  return {
    code: 'retry-after-too-long',
    reason: `the server asked to retry in ${asked} s (Retry-After); the crawl waits at most ${cap} s (maxRetryAfterMs)`,
  };
}

function at(deps: Pick<FetchTaskDeps, 'now'>): Date {
  return new Date(deps.now());
}
