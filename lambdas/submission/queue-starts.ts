/**
 * Messages on the task queue that start a crawl rather than feed one: a schedule's firing
 * (`{"kind":"scheduled"}`) and a JSON task with `since` for a crawl not stored yet. The fetch function
 * hands them here before its batch; what is left is the batch's.
 */
import {
  type DeadLetterSender,
  parseScheduledRun,
  parseTaskMessage,
  type TaskMessage,
} from '../core/crawl/index.ts';
import type { Logger } from '../shared/logger.ts';
import { runScheduled } from './scheduled-run.ts';
import type { StackHandles } from './stack-handles.ts';
import { startRecrawlTask } from './task-recrawl.ts';

/** A start that failed (a throttled write, an S3 read) is tried again this much later, as a task is. */
export const START_RETRY_SECONDS = 30;

export interface QueueStarts {
  /** Messages still to process as tasks and visits. */
  rest: TaskMessage[];
  /** Starts that failed: the batch reports them failed, to come back after `seconds`. */
  failed: Array<{ id: string; seconds: number }>;
}

export async function startCrawlsFromQueue(
  messages: readonly TaskMessage[],
  deps: { stack: StackHandles; deadLetters: DeadLetterSender; log: Logger; now: () => Date },
): Promise<QueueStarts> {
  const rest: TaskMessage[] = [];
  const failed: QueueStarts['failed'] = [];
  const onWarning = (line: string) => deps.log.warn(line);
  for (const message of messages) {
    try {
      const run = parseScheduledRun(message.body);
      if (run !== undefined) {
        const outcome = await runScheduled(run, deps.stack, { now: deps.now, onWarning });
        if (outcome.kind === 'skipped')
          deps.log.warn('scheduled run skipped: the previous run still runs', { ...outcome });
        else deps.log.info(`scheduled run ${outcome.kind}`, { ...outcome });
        continue;
      }
      const parsed = message.body.includes('"since"') ? parseTaskMessage(message.body) : undefined;
      const since = parsed?.ok ? parsed.task.since : undefined;
      if (parsed?.ok && since !== undefined) {
        const outcome = await startRecrawlTask({ ...parsed.task, since }, deps.stack, {
          now: deps.now,
          onWarning,
        });
        if (outcome.kind === 'exists') rest.push(message);
        else if (outcome.kind === 'refused')
          await deps.deadLetters.send([
            { body: message.body, code: 'since-refused', reason: outcome.reason },
          ]);
        else deps.log.info('re-crawl started by a task', { ...outcome });
        continue;
      }
      rest.push(message);
    } catch (error) {
      deps.log.error('crawl not started', { messageId: message.id, error: String(error) });
      failed.push({ id: message.id, seconds: START_RETRY_SECONDS });
    }
  }
  return { rest, failed };
}
