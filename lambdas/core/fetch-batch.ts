/**
 * The fetch function's work for one batch of task messages, over ports only: decide each task
 * (fetch-task.ts), then per batch store one WARC file per crawl, admit discovered links, and send
 * results, new tasks and deferred tasks in batches.
 */

import { decideTask, type FetchTaskDeps, type TaskMessage } from './fetch-task.ts';
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
import { type CapturedPage, storeWarcFiles } from './warc-batch.ts';

export interface RetryRequest {
  id: string;
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
}

export interface FetchBatchReport {
  retries: RetryRequest[];
  results: CrawlResult[];
  warcKeys: string[];
  newTasks: OutgoingTask[];
  deferred: Array<OutgoingTask & { code: string }>;
  dropped: number;
  /** Crawls whose budget this batch spent (now stopped). */
  budgetStopped: string[];
}

export async function processFetchBatch(
  messages: readonly TaskMessage[],
  deps: FetchBatchDeps,
): Promise<FetchBatchReport> {
  const decisions = await Promise.all(
    messages.map(async (message) => ({ message, decision: await decideTask(message, deps) })),
  );

  const results: CrawlResult[] = [];
  const retries: RetryRequest[] = [];
  const invalid: DeadLetter[] = [];
  const budgetStopped: string[] = [];
  const deferred: FetchBatchReport['deferred'] = [];
  const captured: CapturedPage[] = [];
  const discovering: DiscoveringPage[] = [];
  let dropped = 0;
  for (const { message, decision } of decisions) {
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
        retries.push({ id: message.id, delaySeconds: decision.delaySeconds, code: decision.code });
        break;
      case 'defer':
        deferred.push({ task: decision.task, delaySeconds: decision.delaySeconds, code: decision.code });
        break;
      case 'drop':
        dropped++;
        break;
      case 'captured':
        captured.push(decision.page);
        if (decision.links.length > 0) {
          discovering.push({
            config: decision.config,
            parentKey: decision.page.result.key,
            parentUrl: decision.page.result.url,
            depth: decision.page.result.depth,
            links: decision.links,
          });
        }
        break;
    }
  }

  if (deps.budget) {
    for (const [crawlId, pages] of Map.groupBy(captured, (page) => page.result.crawlId)) {
      if (await deps.budget.charge(crawlId, pages.length)) budgetStopped.push(crawlId);
    }
  }
  const now = new Date(deps.now());
  // New URLs are admitted (and counted as queued) before their parent's result is sent, so the
  // aggregator can never see a crawl as finished while a page's links are still on their way.
  const admitted = await admitLinks(discovering, { frontier: deps.frontier, seen: deps.seen, now });
  const stored = await storeWarcFiles(captured, deps.blobs, deps.invocationId, now);
  const newTasks = admitted.tasks;
  await deps.tasks.sendTasks([...newTasks, ...deferred]);
  const allResults = [...results, ...stored.results, ...admitted.results];
  await deps.results.sendResults(allResults);
  if (invalid.length > 0) await deps.deadLetters.send(invalid);
  for (const key of admitted.seenKeys) deps.seen.add(key);
  return { retries, results: allResults, warcKeys: stored.keys, newTasks, deferred, dropped, budgetStopped };
}
