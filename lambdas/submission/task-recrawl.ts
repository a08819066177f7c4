/**
 * A JSON task with `since` (`{"v":1,"crawlId":"weekly-2","url":"https://…","depth":0,"since":"weekly-1"}`)
 * starts a re-crawl from the task queue, with no CLI: a crawl not stored yet is created with the
 * earlier crawl's options and seeds plus this URL (which must be in that crawl's scope), and
 * submitted as `crawler submit --since` would.
 * For a crawl that exists the field is spent: the task is admitted as any other.
 */
import { CrawlConfigStore } from '../adapters/crawl-config-store.ts';
import { isConditionFailed } from '../adapters/frontier-schema.ts';
import { isCrawlError } from '../core/base/index.ts';
import { type CrawlConfig, parseCrawlConfig, type Task } from '../core/crawl/index.ts';
import { crawlScope } from '../core/frontier/index.ts';
import { OUTPUTS } from '../shared/contracts.ts';
import { requiredOutput } from '../shared/required-output.ts';
import { resolveSince, SinceError } from './since-crawl.ts';
import type { StackHandles } from './stack-handles.ts';
import { submitCrawl } from './submit-crawl.ts';

export type RecrawlTaskOutcome =
  | { kind: 'started'; crawlId: string; since: string; tasks: number }
  /** The crawl is stored already (an earlier task started it): admit the task as any other. */
  | { kind: 'exists' }
  /** It cannot start (no such earlier crawl, one still running, seeds from a file): why, for the DLQ. */
  | { kind: 'refused'; reason: string };

export async function startRecrawlTask(
  task: Task & { since: string },
  stack: StackHandles,
  options: { now: () => Date; onWarning?: (line: string) => void },
): Promise<RecrawlTaskOutcome> {
  const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName);
  const configs = new CrawlConfigStore(stack.clients.dynamodb, table);
  if ((await storedConfig(configs, task.crawlId)) !== undefined) return { kind: 'exists' };
  let since: string;
  try {
    since = await resolveSince(stack, task.since);
  } catch (error) {
    if (error instanceof SinceError)
      return { kind: 'refused', reason: error.message.replace('--since', 'since') };
    throw error;
  }
  const earlier = await storedConfig(configs, since);
  if (earlier === undefined)
    return { kind: 'refused', reason: `since ${since}: that crawl has no stored options` };
  if (earlier.seedFile !== undefined)
    return {
      kind: 'refused',
      reason: `since ${since}: that crawl was seeded from a file; re-crawl it with \`crawler submit --since ${since} --seeds-file …\``,
    };
  // A task may not widen a crawl: one sent to the queue could otherwise reach any host with the
  // earlier crawl's options (its --allow-private among them).
  const scoped = crawlScope(earlier).inScope(task.url);
  if (!scoped.ok)
    return {
      kind: 'refused',
      reason: `since ${since}: ${task.url} is outside that crawl's scope (${scoped.detail}); a task re-crawls within it, \`crawler submit --since\` with new seeds goes beyond`,
    };
  const { crawlId: _earlierId, createdAt: _earlierAt, since: _earlierSince, ...earlierOptions } = earlier;
  const config = parseCrawlConfig({
    ...earlierOptions,
    crawlId: task.crawlId,
    seeds: [...new Set([...earlier.seeds, task.url])],
    createdAt: options.now().toISOString(),
  });
  try {
    const submitted = await submitCrawl(stack, config, [], {
      since,
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    });
    return { kind: 'started', crawlId: task.crawlId, since, tasks: submitted.tasks };
  } catch (error) {
    // Two tasks of one new re-crawl: the one whose config write lost admits its URL as any task.
    if (isConditionFailed(error)) return { kind: 'exists' };
    throw error;
  }
}

async function storedConfig(configs: CrawlConfigStore, crawlId: string): Promise<CrawlConfig | undefined> {
  try {
    return await configs.get(crawlId);
  } catch (error) {
    if (isCrawlError(error) && error.code === 'unknown-crawl') return undefined;
    throw error;
  }
}
