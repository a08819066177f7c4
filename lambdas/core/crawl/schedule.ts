/**
 * Schedules (`crawler schedule add`): a named crawl definition that runs on a cron, each run a
 * re-crawl of the schedule's last completed run (docs/crawling.md, "Schedules"). The definition is
 * stored once (adapters/schedule-store.ts); the Scheduler message that starts a run names it only.
 */
import { z } from 'zod';
import { CronError, checkTimeZone, parseCron } from '../base/index.ts';
import { CrawlConfigSchema } from './crawl-config.ts';
import { parseMessageOfKind } from './task.ts';

/** A run's crawl id is `<name>-<UTC time>` (16 characters): a name leaves room for it in 64. */
export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9_-]{1,47}$/;
export const SCHEDULE_NAME_RULE = '1-47 of A-Z a-z 0-9 _ -';

/** What a run is started from: the crawl options as a config, without its id, time and re-crawl base. */
export const ScheduledCrawlSchema = CrawlConfigSchema.omit({ crawlId: true, createdAt: true, since: true });

export const ScheduleDefinitionSchema = z.object({
  name: z.string().regex(SCHEDULE_NAME_PATTERN),
  /** As given (5 or 6 fields: core/base/cron.ts). */
  cron: z.string().refine(valid(parseCron), 'not a cron expression this crawler runs'),
  timezone: z.string().refine(valid(checkTimeZone), 'not an IANA time zone'),
  crawl: ScheduledCrawlSchema,
  createdAt: z.iso.datetime(),
});

export type ScheduleDefinition = z.infer<typeof ScheduleDefinitionSchema>;

function valid(check: (text: string) => unknown): (text: string) => boolean {
  return (text) => {
    try {
      check(text);
      return true;
    } catch (error) {
      if (error instanceof CronError) return false;
      throw error;
    }
  };
}

/** The message a schedule sends to the task queue when it fires (and `crawler schedule run`). */
export const ScheduledRunMessageSchema = z.object({
  v: z.literal(1),
  kind: z.literal('scheduled'),
  schedule: z.string().regex(SCHEDULE_NAME_PATTERN),
  /**
   * The firing's scheduled time: every copy of one firing names the same run. Scheduler fills it in
   * from SCHEDULED_TIME in the target's Input; `crawler schedule run` gives its own time.
   */
  at: z.iso.datetime().optional(),
});

export type ScheduledRunMessage = z.infer<typeof ScheduledRunMessageSchema>;

/** EventBridge Scheduler's context attribute: replaced in a target's Input by the firing's time. */
export const SCHEDULED_TIME = '<aws.scheduler.scheduled-time>';

/** The Input of a schedule's target: its name and, filled in by Scheduler, the time it fired for. */
export function scheduleTargetInput(name: string): string {
  return `{"v":1,"kind":"scheduled","schedule":${JSON.stringify(name)},"at":"${SCHEDULED_TIME}"}`;
}

export function scheduledRunMessage(name: string, at: Date): string {
  return JSON.stringify({
    v: 1,
    kind: 'scheduled',
    schedule: name,
    at: at.toISOString(),
  } satisfies ScheduledRunMessage);
}

/** A scheduled-run message, or undefined when the body is anything else (a task, a visit). */
export function parseScheduledRun(body: string): ScheduledRunMessage | undefined {
  return parseMessageOfKind(body, 'scheduled', ScheduledRunMessageSchema);
}

/** `<name>-20261205T030000Z`, from the firing's time: sortable, and the same for every copy of a firing. */
export function runCrawlId(name: string, at: Date): string {
  return `${name}-${at.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
}

/** What the schedule's item says of its runs (adapters/schedule-store.ts). */
export interface ScheduleRuns {
  /** The run started last (it may have ended since), and when it was claimed. */
  running?: string;
  claimedAt?: string;
  /** The last run known to have completed: the next run re-crawls it. */
  last?: string;
  skipped: number;
  skippedAt?: string;
  runs: number;
}

/** A run claimed this long ago and still not stored is taken as never started. */
export const UNSTARTED_CLAIM_MS = 15 * 60_000;

export type RunState = 'running' | 'complete' | 'cancelled' | undefined;

export type RunDecision =
  /** Another copy of this firing started its run. */
  | { kind: 'duplicate'; crawlId: string }
  /** This firing's run was claimed but is not stored: its start failed, and this is its retry. */
  | { kind: 'resume'; crawlId: string; since: string | undefined }
  /** The previous run still runs: this one (`crawlId`) is skipped, never stacked. */
  | { kind: 'skip'; crawlId: string; running: string }
  /** Start `crawlId`, a re-crawl of `since` when there is one. */
  | { kind: 'start'; crawlId: string; since: string | undefined };

/**
 * Whether a firing at `at` starts a run. `previous` is the state of `runs.running`: a completed one becomes
 * the base of the new run; a cancelled one does not (its index is partial), the earlier base stays.
 */
export function decideRun(name: string, runs: ScheduleRuns, previous: RunState, at: Date): RunDecision {
  const crawlId = runCrawlId(name, at);
  // The claim wrote the run's base into `last`.
  if (runs.running === crawlId)
    return previous === undefined
      ? { kind: 'resume', crawlId, since: runs.last }
      : { kind: 'duplicate', crawlId };
  if (runs.running !== undefined && previous === 'running')
    return { kind: 'skip', crawlId, running: runs.running };
  // Claimed, not stored yet: another copy of the message is starting it. One claimed long ago and
  // never stored failed to start; it does not hold the schedule back.
  if (runs.running !== undefined && previous === undefined && runs.claimedAt !== undefined) {
    if (at.getTime() - Date.parse(runs.claimedAt) < UNSTARTED_CLAIM_MS)
      return { kind: 'skip', crawlId, running: runs.running };
  }
  const since = previous === 'complete' ? runs.running : runs.last;
  return { kind: 'start', crawlId, since };
}
