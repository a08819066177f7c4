/**
 * The fetch function's work for one batch of task messages, over ports only: decide each task
 * (fetch-task.ts) and write its page into the batch's WARC files at once; then admit discovered
 * links, finish the WARC files, and send new and deferred tasks and results in batches. One task's
 * failure retries that task; a batch step's failure (after in-function retries) retries them all.
 */

import { backoffSeconds } from './backoff.ts';
import type { BodyBudget } from './body-budget.ts';
import { isCrawlError } from './errors.ts';
import {
  type ClaimedUrl,
  decideTask,
  type FetchTaskDeps,
  type TaskDecision,
  type TaskMessage,
} from './fetch-task.ts';
import { admitLinks, type DiscoveringPage } from './link-admission.ts';
import type { LruSet } from './lru.ts';
import type {
  BlobWriter,
  CrawlBudget,
  DeadLetter,
  DeadLetterSender,
  OutgoingTask,
  ResultSender,
  TaskSender,
} from './ports.ts';
import type { CrawlResult } from './result.ts';
import { retryStep } from './retry-step.ts';
import { parseTaskMessage } from './task.ts';
import { WarcBatchWriter } from './warc-batch.ts';

export interface RetryRequest {
  id: string;
  /** The task's URL, when the message is a task (for the logs). */
  url?: string;
  /** Seconds until the message should be visible again. */
  delaySeconds: number;
  code: string;
}

export interface FetchBatchDeps extends FetchTaskDeps {
  deadLetters: DeadLetterSender;
  budget?: CrawlBudget;
  blobs: BlobWriter;
  results: ResultSender;
  tasks: TaskSender;
  seen: LruSet;
  invocationId: string;
  /** The fetcher's body budget: a task's bodies stay charged to it until the page is in the WARC writer. */
  bodyBudget?: BodyBudget;
}

/** A captured page once in the WARC writer: the body is gone, the result waits for its WARC pointer. */
type Written = Omit<Extract<TaskDecision, { kind: 'captured' }>, 'kind' | 'page'> & {
  kind: 'written';
  result: CrawlResult;
};

export interface FetchBatchReport {
  retries: RetryRequest[];
  results: CrawlResult[];
  warcKeys: string[];
  newTasks: OutgoingTask[];
  /** Tasks re-sent with DelaySeconds: politeness, robots waits, and (`retry`) fetch retries. */
  deferred: Array<OutgoingTask & { code: string; retry?: true }>;
  /** Tasks dropped: duplicates of a URL that has its result, tasks of a complete crawl. */
  dropped: Array<{ url: string; why: 'duplicate' | 'crawl-complete' }>;
  /** Crawls whose budget this batch spent (now stopped). */
  budgetStopped: string[];
}

export async function processFetchBatch(
  messages: readonly TaskMessage[],
  deps: FetchBatchDeps,
): Promise<FetchBatchReport> {
  // Each page goes into the WARC writer as soon as its task is decided, and its body is dropped: the
  // batch never holds more bodies than the fetcher's budget (the task's hold keeps them charged until then).
  const writer = new WarcBatchWriter(deps.blobs, deps.invocationId, new Date(deps.now()));
  type Decided = Exclude<TaskDecision, { kind: 'captured' }> | Written;
  const decisions = await Promise.all(
    messages.map(async (message): Promise<{ message: TaskMessage; decision: Decided }> => {
      const hold = deps.bodyBudget?.hold();
      let claimed: ClaimedUrl | undefined;
      try {
        const decision = await (hold ? hold.run(() => decideTask(message, deps)) : decideTask(message, deps));
        if (decision.kind !== 'captured') return { message, decision };
        claimed = decision.claimed;
        await writer.ready();
        writer.add(decision.page);
        const { page, ...rest } = decision;
        return { message, decision: { ...rest, kind: 'written', result: page.result } };
      } catch (error) {
        // This task alone is retried soon (its claim given back); its neighbours go on.
        if (claimed) await deps.frontier.release(claimed.crawlId, claimed.key).catch(() => {});
        return { message, decision: failedTask(message, error) };
      } finally {
        hold?.release();
      }
    }),
  );

  const results: CrawlResult[] = [];
  const retries: RetryRequest[] = [];
  const invalid: DeadLetter[] = [];
  const budgetStopped: string[] = [];
  const deferred: FetchBatchReport['deferred'] = [];
  const written: CrawlResult[] = [];
  const discovering: DiscoveringPage[] = [];
  const claims: ClaimedUrl[] = [];
  const dropped: FetchBatchReport['dropped'] = [];
  for (const { message, decision } of decisions) {
    if ((decision.kind === 'result' || decision.kind === 'written') && decision.claimed)
      claims.push(decision.claimed);
    switch (decision.kind) {
      case 'result':
        results.push(decision.result);
        // A malformed task is kept for inspection in the DLQ at once, never retried.
        if (decision.result.outcome === 'invalid') {
          invalid.push({
            body: message.body,
            code: decision.result.code ?? 'invalid-task',
            reason: decision.result.reason ?? '',
          });
        }
        break;
      case 'retry':
        retries.push({ ...retryOf(message), delaySeconds: decision.delaySeconds, code: decision.code });
        break;
      case 'defer':
        deferred.push({
          task: decision.task,
          delaySeconds: decision.delaySeconds,
          code: decision.code,
          ...(decision.retry ? { retry: true as const } : {}),
        });
        break;
      case 'drop':
        dropped.push({ url: taskUrlOf(message) ?? message.id, why: decision.why });
        break;
      case 'reject':
        invalid.push({ body: message.body, code: decision.code, reason: decision.reason });
        break;
      case 'written':
        written.push(decision.result);
        if (decision.links.length > 0) {
          discovering.push({
            config: decision.config,
            parentKey: decision.result.key,
            parentUrl: decision.result.url,
            depth: decision.result.depth,
            links: decision.links,
            relink: decision.claimed?.relink === true,
          });
        }
        break;
    }
  }

  try {
    if (deps.budget) {
      for (const [crawlId, pages] of Map.groupBy(written, (result) => result.crawlId)) {
        if (await deps.budget.charge(crawlId, pages.length)) budgetStopped.push(crawlId);
      }
    }
    const now = new Date(deps.now());
    // New URLs are admitted (and counted as queued) before their parent's result is sent, so the
    // aggregator can never see a crawl as finished while a page's links are still on their way.
    // Each step is safe to repeat (admission re-admits its own URLs uncounted; a task or result
    // sent twice is deduplicated by the claim and by finalize), so a failed call is tried again here.
    const admitted = await retryStep(() =>
      admitLinks(discovering, { frontier: deps.frontier, seen: deps.seen, now }),
    );
    // finish() uploads again only the files whose upload failed.
    const stored = await retryStep(() => writer.finish());
    const newTasks = admitted.tasks;
    await retryStep(() => deps.tasks.sendTasks([...newTasks, ...deferred]));
    // A page's own result goes out only once its links' results are accepted: a done page's redelivered
    // task is dropped, so a link result still unsent when the process dies would be lost for good.
    const leaves = [...results, ...admitted.results];
    await retryStep(() => deps.results.sendResults(leaves));
    await retryStep(() => deps.results.sendResults(stored.results));
    const allResults = [...leaves, ...stored.results];
    if (invalid.length > 0) await retryStep(() => deps.deadLetters.send(invalid));
    for (const key of admitted.seenKeys) deps.seen.add(key);
    return {
      retries,
      results: allResults,
      warcKeys: stored.keys,
      newTasks,
      deferred,
      dropped,
      budgetStopped,
    };
  } catch (error) {
    // The batch's output is (partly) lost: give back its claims and retry every task of the batch.
    // What did go out is deduplicated when the retries send it again; links admitted but maybe not
    // sent are admitted again by each page's next claim (`relink`). WARC files already written are
    // left unreferenced.
    await Promise.all(claims.map((c) => deps.frontier.release(c.crawlId, c.key, true).catch(() => {})));
    const retried = new Set(retries.map((retry) => retry.id));
    for (const message of messages) {
      if (!retried.has(message.id)) retries.push(failedTaskRetry(message, error));
    }
    return { retries, results: [], warcKeys: [], newTasks: [], deferred: [], dropped, budgetStopped };
  }
}

/** A task whose processing failed (not its fetch: an AWS call that kept failing): retried soon. */
function failedTask(message: TaskMessage, error: unknown): Extract<TaskDecision, { kind: 'retry' }> {
  const { delaySeconds, code } = failedTaskRetry(message, error);
  return { kind: 'retry', delaySeconds, code };
}

function failedTaskRetry(message: TaskMessage, error: unknown): RetryRequest {
  return {
    ...retryOf(message),
    delaySeconds: backoffSeconds(message.receiveCount, FAILURE_BACKOFF),
    code: isCrawlError(error) ? error.code : 'batch-step-failed',
  };
}

function retryOf(message: TaskMessage): { id: string; url?: string } {
  const url = taskUrlOf(message);
  return url === undefined ? { id: message.id } : { id: message.id, url };
}

function taskUrlOf(message: TaskMessage): string | undefined {
  const parsed = parseTaskMessage(message.body);
  return parsed.ok ? parsed.task.url : undefined;
}

/** Retries of a task after an infrastructure failure: seconds, not the queue's visibility timeout. */
const FAILURE_BACKOFF = { baseSeconds: 2, maxSeconds: 60 };
