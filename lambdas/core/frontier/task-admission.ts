/**
 * A task message on the task queue (a bare URL, a JSON task, a redriven task) is input, not a unit of
 * work: its URL is admitted to the frontier like a discovered link (scope, depth, dedup, page budget),
 * which wakes its host's visit. What cannot be admitted ends here with its result or reason.
 */

import { isCrawlError } from '../base/index.ts';
import {
  type CrawlConfig,
  type CrawlConfigReader,
  type CrawlStateCheck,
  cancelledResult,
  crawlClosed,
  parseTaskMessage,
  type TaskMessage,
} from '../crawl/index.ts';
import { bareResult, type CrawlResult, invalidTaskKey } from '../results/index.ts';
import { normalizeUrl, stripUserinfo } from '../urls/index.ts';
import type { DiscoveringPage } from './link-admission.ts';

export type TaskAdmission =
  | { kind: 'admit'; page: DiscoveringPage }
  /** Ends at once: an invalid task, or a task of a cancelled crawl. */
  | { kind: 'result'; result: CrawlResult }
  /** A task of a complete crawl: nothing may add to it. */
  | { kind: 'drop'; url: string; why: 'crawl-complete' }
  /**
   * Kept in the DLQ with why, no result: not a task of any crawl (an unknown crawl id), or a malformed
   * task naming a crawl that has ended (complete or cancelled), whose results and counters are final.
   */
  | { kind: 'reject'; code: string; reason: string };

/**
 * A task message: parsed, its crawl's config read, its URL normalized, the crawl's state checked (a
 * cancelled crawl's task ends `cancelled`; a complete crawl's is dropped), then admitted as a link
 * of a page one level up.
 */
export async function admitTaskMessage(
  message: TaskMessage,
  deps: { configs: CrawlConfigReader; crawlStates?: CrawlStateCheck; now: () => number },
): Promise<TaskAdmission> {
  const at = new Date(deps.now());
  const parsed = parseTaskMessage(message.body);
  if (!parsed.ok) {
    const ended = await endedCrawl(parsed.crawlId, parsed, deps);
    if (ended) return ended;
    const subject = {
      crawlId: parsed.crawlId,
      key: invalidTaskKey(message.body),
      url: parsed.url ?? '',
      depth: 0,
    };
    return { kind: 'result', result: bareResult(subject, 'invalid', at, parsed) };
  }
  const { task } = parsed;
  let config: CrawlConfig;
  try {
    config = await deps.configs.get(task.crawlId);
  } catch (error) {
    // No crawl to record a result in: the message is kept in the DLQ with why, at once.
    if (isCrawlError(error) && error.code === 'unknown-crawl')
      return { kind: 'reject', code: error.code, reason: error.message };
    throw error;
  }
  const normalized = normalizeUrl(task.url, { maxUrlLength: config.limits.maxUrlLength });
  if (!normalized.ok) {
    const ended = await endedCrawl(task.crawlId, normalized, deps);
    if (ended) return ended;
    const subject = {
      crawlId: task.crawlId,
      key: invalidTaskKey(message.body),
      url: stripUserinfo(task.url).slice(0, 2048),
      depth: task.depth,
    };
    return { kind: 'result', result: bareResult(subject, 'invalid', at, normalized) };
  }
  const subject = { crawlId: task.crawlId, key: normalized.key, url: normalized.url, depth: task.depth };
  const state = await deps.crawlStates?.stateOf(task.crawlId);
  if (state === 'cancelled') return { kind: 'result', result: cancelledResult(subject, at) };
  if (crawlClosed(task.crawlId, state)) return { kind: 'drop', url: normalized.url, why: 'crawl-complete' };
  // Admitted as a link of a page one level up (a redirect target keeps its depth and counts hops);
  // a crawl without seeds (bare URLs) scopes the URL by itself.
  const redirect = task.redirects !== undefined && task.redirects > 0;
  return {
    kind: 'admit',
    page: {
      config,
      parentKey: 'task',
      parentUrl: subject.url,
      relink: true,
      depth: redirect ? task.depth : task.depth - 1,
      links: [{ url: subject.url, nofollow: false, ...(redirect ? { redirects: task.redirects } : {}) }],
    },
  };
}

/**
 * A malformed task naming a crawl that has ended: its `invalid` result would be a line and a count
 * added to final results (its key, sha256 of the body, is no URL the crawl had, so nothing else
 * stops it). It goes to the DLQ with why instead, like a task of an unknown crawl.
 */
async function endedCrawl(
  crawlId: string,
  why: { code: string; reason: string },
  deps: { crawlStates?: CrawlStateCheck },
): Promise<Extract<TaskAdmission, { kind: 'reject' }> | undefined> {
  const state = await deps.crawlStates?.stateOf(crawlId);
  if (state !== 'complete' && state !== 'cancelled') return undefined;
  return {
    kind: 'reject',
    code: why.code,
    reason: `${why.reason} (crawl ${crawlId} is ${state}: no result)`,
  };
}
