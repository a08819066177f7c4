/**
 * The fetch function's work for one batch of task-queue messages (docs/design/host-visits.md).
 *
 * - A **visit** message: the batch takes its host's lease and fetches the host's ready URLs at the
 *   host's pace (host-visit.ts), side by side with the batch's other hosts, until the deadline or
 *   until nothing is ready. Then, once its output is flushed, it hands the host back (a delayed
 *   visit message) or, when nothing is left, drains it, while the other visits go on.
 * - A **task** message (a bare URL, a JSON task, a redriven task): its URL is admitted to the
 *   frontier like a discovered link, which wakes its host (task-admission.ts).
 *
 * What the visits produce goes out in flushes, each safe to repeat: links admitted (waking their
 * hosts), WARC files written, leaf results, then page results. A flush that fails fails every visit
 * of the batch not yet ended: their messages come back and the next visits fetch again what was not
 * reported.
 */
import { AWS_LIMITS, backoffSeconds, isCrawlError, RETRY_BACKOFF, retryStep } from '../base/index.ts';
import {
  type CrawlConfig,
  type CrawlConfigReader,
  type CrawlStateCheck,
  type FrontierAdmission,
  type HostBusy,
  type HostLease,
  type HostRelease,
  type HostUrlStore,
  type OutgoingVisit,
  parseVisitMessage,
  type ResultSender,
  type TaskMessage,
  type VisitMessage,
} from '../crawl/index.ts';
import {
  type BodyBudget,
  type UrlStepDeps,
  type VisitEnd,
  VisitFailedError,
  visitHost,
} from '../fetch/index.ts';
import { admitTaskMessage, visitOf } from '../frontier/index.ts';
import type { CrawlResult } from '../results/index.ts';
import { BatchOutput, type BatchOutputDeps, type DroppedTask } from './batch-output.ts';

export interface RetryRequest {
  id: string;
  /** Seconds until the message should be visible again. */
  delaySeconds: number;
  code: string;
}

export interface FetchBatchDeps extends Omit<UrlStepDeps, 'pace'>, BatchOutputDeps {
  configs: CrawlConfigReader;
  /**
   * A cancelled crawl's tasks and URLs end as `cancelled` results before any other work; a complete
   * crawl's are dropped (its summary is written: nothing may add to it).
   */
  crawlStates?: CrawlStateCheck;
  frontier: FrontierAdmission & HostUrlStore;
  results: ResultSender & DrainedSender;
  /** The fetcher's body budget: a page's bodies stay charged to it until the page is in the WARC writer. */
  bodyBudget?: BodyBudget;
  /** Whether an index part exists (a host drains only once its URLs' parts are written). */
  partExists?: (key: string) => Promise<boolean>;
  /** Epoch ms: no request starts that could not end before it; the batch's last flush follows it. */
  deadline: number;
  /**
   * Epoch ms: when the invocation is cut off (its timeout). The visits stop before `deadline` when the
   * flushes seen so far say the last one would not end before this: AWS answering slowly makes the
   * batch's last sends slow, and an invocation cut off loses what it had not sent.
   */
  end?: number;
  /** How often the visits' output is sent while they run (ms). Default 5 s. */
  flushEveryMs?: number;
}

/** Tells the aggregate function that a host drained, so completion is checked even if no result follows. */
export interface DrainedSender {
  sendDrained(crawlId: string): Promise<void>;
}

export interface VisitOutcome {
  crawlId: string;
  host: string;
  /** `dropped`: the host was held by another visit, or had no work (a stale or duplicate message). */
  end: VisitEnd['kind'] | 'dropped';
  fetched: number;
  /** The message's ticket: a dropped copy of a hurried visit (core/frontier/host-hurry.ts) is expected. */
  ticket?: string | undefined;
}

export interface FetchBatchReport {
  /** Messages to make visible again (a failed visit or task), with their delay. */
  retries: RetryRequest[];
  results: CrawlResult[];
  warcKeys: string[];
  /** Visit messages sent: hosts woken, and hosts handed back. */
  visits: OutgoingVisit[];
  outcomes: VisitOutcome[];
  /** Tasks dropped: tasks of a complete crawl. */
  dropped: DroppedTask[];
  /** Crawls whose budget this batch spent (now stopped). */
  budgetStopped: string[];
}

/** Lease beyond the deadline: the batch's last flush and the visits' release happen inside it. */
export const LEASE_MARGIN_MS = 15_000;
const DEFAULT_FLUSH_EVERY_MS = 5_000;
/**
 * A copy of the message the live visit came with looks again this soon: that visit mostly ends in
 * well under a second (a hurried visit that drains its host: core/frontier/host-hurry.ts), and the copy then
 * finds the host drained or handed back and is dropped, instead of lingering until the lease ends
 * (up to 75 s); if the visit died, the copy takes the host once its lease has ended, as before.
 */
const HELD_COPY_RECHECK_SECONDS = 5;
/** SQS caps DelaySeconds at 15 minutes. */
const MAX_DELAY_SECONDS = AWS_LIMITS.sqsMaxDelaySeconds;

export async function processFetchBatch(
  messages: readonly TaskMessage[],
  deps: FetchBatchDeps,
): Promise<FetchBatchReport> {
  const report: FetchBatchReport = {
    retries: [],
    results: [],
    warcKeys: [],
    visits: [],
    outcomes: [],
    dropped: [],
    budgetStopped: [],
  };
  const output = new BatchOutput(deps);
  const visitMessages: VisitEntry[] = [];

  // Task messages: admitted like discovered links (their hosts are woken at the next flush).
  await Promise.all(messages.map((message) => admitTask(message, visitMessages, deps, output, report)));

  // Visits: each host is taken once, then all run side by side until the deadline. Messages of one
  // host in one batch (a duplicate, a stale copy beside the expected one) are tried in turn: the
  // first that takes the host visits it, and the rest are done with (the batch's lease is shared).
  const byHost = Map.groupBy(visitMessages, (entry) => `${entry.visit.crawlId}\n${entry.visit.host}`);
  const running = await Promise.all(
    [...byHost.values()].map((entries) => takeHost(entries, deps, output, report)),
  );
  const flusher = output.flushPeriodically(deps.flushEveryMs ?? DEFAULT_FLUSH_EVERY_MS);
  // Each host is handed back (or drained) as soon as its own visit has ended and its output is out,
  // not when the batch's last visit ends: its next visit need not wait for the other hosts.
  await Promise.all(running.map((run) => endOnceFlushed(run, deps, output, report)));
  await flusher.stop();
  try {
    // What the task messages brought in (and nothing else, if every visit has flushed).
    await output.flush();
  } catch (error) {
    for (const message of output.taskMessages) report.retries.push(failedRetry(message, error));
  }
  return finish(report, output);
}

function finish(report: FetchBatchReport, output: BatchOutput): FetchBatchReport {
  report.results.push(...output.sentResults);
  report.warcKeys.push(...output.sentWarcKeys);
  report.visits.push(...output.sentVisits);
  report.budgetStopped.push(...output.budgetStopped);
  report.dropped.push(...output.dropped);
  return report;
}

interface VisitEntry {
  message: TaskMessage;
  visit: VisitMessage;
}

/** A task message is admitted (into the batch's output); a visit message is set aside for its host. */
async function admitTask(
  message: TaskMessage,
  visitMessages: VisitEntry[],
  deps: FetchBatchDeps,
  output: BatchOutput,
  report: FetchBatchReport,
): Promise<void> {
  const visit = parseVisitMessage(message.body);
  if (visit) {
    visitMessages.push({ message, visit });
    return;
  }
  try {
    output.addTask(message, await admitTaskMessage(message, deps));
  } catch (error) {
    report.retries.push(failedRetry(message, error));
  }
}

/** The host's messages tried in turn: the first that takes the host visits it, the rest are dropped. */
async function takeHost(
  entries: readonly VisitEntry[],
  deps: FetchBatchDeps,
  output: BatchOutput,
  report: FetchBatchReport,
): Promise<RunningVisit | undefined> {
  for (const [index, { message, visit }] of entries.entries()) {
    try {
      const run = await startVisit(message, visit, deps, output, report);
      if (!run) continue;
      for (const rest of entries.slice(index + 1))
        report.outcomes.push({
          crawlId: rest.visit.crawlId,
          host: rest.visit.host,
          end: 'dropped',
          fetched: 0,
          ticket: rest.visit.ticket,
        });
      return run;
    } catch (error) {
      report.retries.push(failedRetry(message, error));
    }
  }
  return undefined;
}

interface RunningVisit {
  message: TaskMessage;
  visit: VisitMessage;
  lease: HostLease;
  done: Promise<VisitResult | { failed: unknown }>;
  fetched: number;
}

type VisitResult = Awaited<ReturnType<typeof visitHost>>;

async function startVisit(
  message: TaskMessage,
  visit: VisitMessage,
  deps: FetchBatchDeps,
  output: BatchOutput,
  report: FetchBatchReport,
): Promise<RunningVisit | undefined> {
  const { crawlId, host } = visit;
  const leaseUntil = deps.deadline + LEASE_MARGIN_MS;
  const now = deps.now();
  const lease = await deps.hosts.acquire(crawlId, host, deps.invocationId, leaseUntil, now, visit.ticket);
  if ('busy' in lease) {
    await leaveBusyHost(message, visit, lease, now, deps, report);
    return undefined;
  }
  let config: CrawlConfig;
  try {
    config = await deps.configs.get(crawlId);
  } catch (error) {
    // A visit of a crawl nobody started: nothing to do for it, ever.
    if (isCrawlError(error) && error.code === 'unknown-crawl') {
      report.outcomes.push({ crawlId, host, end: 'stop', fetched: 0 });
      return undefined;
    }
    throw error;
  }
  return runVisit(message, visit, lease, config, deps, output);
}

/**
 * A live visit has the host: this message is tried again when that lease ends (its holder may
 * have died). A stale copy (the host expects another message) or an idle host: nothing to do.
 */
async function leaveBusyHost(
  message: TaskMessage,
  visit: VisitMessage,
  lease: HostBusy,
  now: number,
  deps: FetchBatchDeps,
  report: FetchBatchReport,
): Promise<void> {
  const { crawlId, host } = visit;
  if (lease.busy === 'held') {
    const leaseEnds = Math.ceil((lease.until - now) / 1000) + 1;
    const due = lease.copy ? Math.min(leaseEnds, HELD_COPY_RECHECK_SECONDS) : leaseEnds;
    const delaySeconds = Math.min(MAX_DELAY_SECONDS, Math.max(1, due));
    // Sent again as a new message, due when the lease ends (a copy: sooner, HostBusy): waiting for
    // a live visit is not a failure, so it must not spend this message's receives (kills can keep
    // a host held a while). If that send fails, the message itself comes back instead.
    const again: OutgoingVisit = { visit, delaySeconds };
    try {
      await retryStep(() => deps.tasks.sendVisits([again]));
      report.visits.push(again);
    } catch {
      report.retries.push({ id: message.id, delaySeconds, code: 'host-held' });
    }
  }
  // An idle host was drained: perhaps by a visit that died before its drained record went out.
  // Completion is checked again (cheap: one Query), so no crawl waits on a record that was lost.
  if (lease.busy === 'idle') await deps.results.sendDrained(crawlId);
  report.outcomes.push({ crawlId, host, end: 'dropped', fetched: 0, ticket: visit.ticket });
}

/** The visit of a host taken, started: its decisions go to the batch's output as they come. */
function runVisit(
  message: TaskMessage,
  visit: VisitMessage,
  lease: HostLease,
  config: CrawlConfig,
  deps: FetchBatchDeps,
  output: BatchOutput,
): RunningVisit {
  const { crawlId, host } = visit;
  const run: RunningVisit = {
    message,
    visit,
    lease,
    fetched: 0,
    done: Promise.resolve({ failed: undefined }),
  };
  run.done = visitHost(
    {
      crawlId,
      host,
      pace: lease,
      inflight: lease.inflight,
      cursor: lease.cursor,
      rendering: lease.rendering,
    },
    config,
    {
      ...deps,
      renders: deps.renderQueue !== undefined,
      hostUrls: deps.frontier,
      settle: () => output.admitFound(),
      wokenHere: () => output.wokenCount(crawlId, host),
      room: () => output.room(),
      // Read at each check: it moves earlier as slow flushes are seen.
      get deadline() {
        return output.visitDeadline();
      },
    },
    (decision) => {
      run.fetched++;
      output.addVisit(decision);
    },
  ).catch((failed: unknown) => ({ failed }));
  return run;
}

/** Once the visit has ended and its output is out, its host is handed back or drained. */
async function endOnceFlushed(
  run: RunningVisit | undefined,
  deps: FetchBatchDeps,
  output: BatchOutput,
  report: FetchBatchReport,
): Promise<void> {
  if (!run) return;
  const visitEnd = await run.done;
  try {
    await output.flush();
  } catch (error) {
    // Not all of the visit's output is out: its message is tried again once its lease has run
    // out (so the host is free for it), and fetches again what was not reported.
    const leaseOver = Math.ceil((deps.deadline + LEASE_MARGIN_MS - deps.now()) / 1000) + 1;
    const retry = failedRetry(run.message, error);
    report.retries.push({
      ...retry,
      delaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(retry.delaySeconds, leaseOver)),
    });
    return;
  }
  try {
    await endVisit(run, visitEnd, deps, report);
  } catch (error) {
    report.retries.push(failedRetry(run.message, error));
  }
}

async function endVisit(
  run: RunningVisit,
  ended: VisitResult | { failed: unknown } | undefined,
  deps: FetchBatchDeps,
  report: FetchBatchReport,
): Promise<void> {
  const { crawlId, host } = run.visit;
  const holder = deps.invocationId;
  if (ended === undefined || 'failed' in ended) {
    // The visit failed (an AWS call that kept failing): its output so far is out; the host is
    // handed back so its message, tried again soon, finds it free, knowing the URLs whose results
    // are on their way (else they are fetched again) and the pace the visit kept.
    const failed = ended && 'failed' in ended ? ended.failed : new Error('visit did not run');
    const progress = failed instanceof VisitFailedError ? failed.progress : undefined;
    const error = failed instanceof VisitFailedError ? failed.cause : failed;
    const ticket = run.visit.ticket ?? crypto.randomUUID();
    await deps.hosts.release(crawlId, host, holder, {
      ...run.lease,
      ...(progress
        ? {
            ...progress.pace,
            inflight: progress.inflight,
            cursor: progress.cursor,
            rendering: progress.rendering,
          }
        : {}),
      visitAt: deps.now(),
      ticket,
      // Not `sent`: the message itself comes back, but a visit that keeps failing spends its receives
      // and ends in the TaskDLQ; a wake past VISIT_GRACE_MS then rescues the host, as before.
    });
    report.retries.push(failedRetry(run.message, error));
    return;
  }
  const { end, pace, inflight, cursor, rendering } = ended;
  report.outcomes.push({ crawlId, host, end: end.kind, fetched: run.fetched });
  if (end.kind === 'drained') {
    const drained = await deps.hosts.drain(crawlId, host, holder, run.lease.wake, end.tally, pace);
    // Woken meanwhile: a new URL came in; visit again at once.
    if (!drained) await handBack(run, deps.now(), { ...pace, inflight, cursor, rendering }, deps, report);
    else await deps.results.sendDrained(crawlId);
    return;
  }
  if (end.kind === 'stop') {
    // Nobody will visit a host of an unknown or finished crawl again: the item just expires.
    await deps.hosts.release(crawlId, host, holder, { ...pace, inflight, visitAt: deps.now(), ticket: '-' });
    return;
  }
  // Either may be hurried: by the aggregate function at the crawl's end, by the render function.
  const awaiting = end.why === 'results' || end.why === 'render';
  await handBack(run, end.visitAt, { ...pace, inflight, cursor, awaiting, rendering }, deps, report);
}

async function handBack(
  run: RunningVisit,
  visitAt: number,
  state: Omit<HostRelease, 'visitAt' | 'ticket' | 'sent'>,
  deps: FetchBatchDeps,
  report: FetchBatchReport,
): Promise<void> {
  const { crawlId, host } = run.visit;
  const delaySeconds = Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((visitAt - deps.now()) / 1000)));
  // Sent before the lease is given up: a crash between the two leaves a visit due, never none
  // (the host expects no ticket while leased, so the new message takes it once the lease ends).
  const ticket = crypto.randomUUID();
  const next: OutgoingVisit = { visit: visitOf(crawlId, host, ticket), delaySeconds };
  await retryStep(() => deps.tasks.sendVisits([next]));
  report.visits.push(next);
  await deps.hosts.release(crawlId, host, deps.invocationId, {
    ...state,
    visitAt: deps.now() + delaySeconds * 1000,
    ticket,
    sent: true,
  });
}

function failedRetry(message: TaskMessage, error: unknown): RetryRequest {
  return {
    id: message.id,
    delaySeconds: backoffSeconds(message.receiveCount, RETRY_BACKOFF.failedMessage),
    code: isCrawlError(error) ? error.code : 'batch-step-failed',
  };
}
