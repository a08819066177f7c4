/**
 * A schedule fired (its message on the task queue, docs/crawling.md "Schedules"): start its next
 * run, a re-crawl of its last completed run, or skip it when the previous run still runs. The fetch
 * function calls this for a `{"kind":"scheduled"}` message; `crawler schedule run` sends the same.
 */
import { isConditionFailed } from '../adapters/frontier-schema.ts';
import { ScheduleStore } from '../adapters/schedule-store.ts';
import { describeError } from '../core/base/index.ts';
import { skippedEvent } from '../core/batches/index.ts';
import { decideRun, parseCrawlConfig, type ScheduledRunMessage } from '../core/crawl/index.ts';
import { OUTPUTS } from '../shared/contracts.ts';
import { requiredOutput } from '../shared/required-output.ts';
import { crawlStateOf } from './since-crawl.ts';
import { publishOnStack } from './stack-events.ts';
import type { StackHandles } from './stack-handles.ts';
import { submitCrawl } from './submit-crawl.ts';

export type ScheduledRunOutcome =
  | { kind: 'started'; schedule: string; crawlId: string; since: string | undefined; tasks: number }
  | { kind: 'skipped'; schedule: string; running: string }
  /** Another copy of this firing claimed the run first. */
  | { kind: 'duplicate'; schedule: string }
  /** Removed since it fired: nothing to run. */
  | { kind: 'gone'; schedule: string };

/** Claims are retried this many times when another firing moved the schedule between read and write. */
const CLAIM_ROUNDS = 3;

export async function runScheduled(
  message: ScheduledRunMessage,
  stack: StackHandles,
  options: { now: () => Date; onWarning?: (line: string) => void },
): Promise<ScheduledRunOutcome> {
  const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName);
  const schedules = new ScheduleStore(stack.clients.dynamodb, table);
  const name = message.schedule;
  for (let round = 0; round < CLAIM_ROUNDS; round++) {
    const stored = await schedules.get(name);
    if (stored === undefined) return { kind: 'gone', schedule: name };
    const at = message.at === undefined ? options.now() : new Date(message.at);
    // A monthly schedule's last run may have outlived its counters: its summary says how it ended.
    const previous =
      stored.runs.running === undefined ? undefined : await crawlStateOf(stack, stored.runs.running);
    const decision = decideRun(name, stored.runs, previous, at);
    if (decision.kind === 'duplicate') return { kind: 'duplicate', schedule: name };
    if (decision.kind === 'skip') {
      await schedules.recordSkip(name, at);
      await publishOnStack(stack, [skippedEvent(name, decision.crawlId, decision.running, at)]).catch(
        (error: unknown) =>
          options.onWarning?.(
            `warning: schedule ${name}: Crawl Skipped not published: ${describeError(error)}`,
          ),
      );
      return { kind: 'skipped', schedule: name, running: decision.running };
    }
    if (decision.kind === 'start') {
      const claimed = await schedules.claimRun(name, stored.runs.running, {
        crawlId: decision.crawlId,
        since: decision.since,
        at,
      });
      // Another firing moved the schedule between the read and the write: decide again on what it wrote.
      if (!claimed) continue;
    }
    const config = parseCrawlConfig({
      ...stored.definition.crawl,
      crawlId: decision.crawlId,
      createdAt: at.toISOString(),
    });
    let submitted: Awaited<ReturnType<typeof submitCrawl>>;
    try {
      submitted = await submitCrawl(stack, config, [], {
        ...(decision.since === undefined ? {} : { since: decision.since }),
        ...(options.onWarning ? { onWarning: options.onWarning } : {}),
      });
    } catch (error) {
      // A copy resuming a run another copy has just stored: the config write is conditional.
      if (isConditionFailed(error)) return { kind: 'duplicate', schedule: name };
      throw error;
    }
    return {
      kind: 'started',
      schedule: name,
      crawlId: decision.crawlId,
      since: decision.since,
      tasks: submitted.tasks,
    };
  }
  throw new Error(`schedule ${name}: its run could not be claimed in ${CLAIM_ROUNDS} tries`);
}
