/**
 * A host visit's waits against its deadline (host-visit.ts): a request's wait for the host's pace,
 * and the check of the index parts before a drain. Apart from the visit's walk: each reads only the
 * visit's clock and deadline, which may move earlier while it waits.
 */
import { FRONTIER_LIMITS } from '../base/index.ts';

/** What the waits read of the visit's deps (VisitDeps): the deadline is read at each check. */
export interface VisitClock {
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** No request starts unless it can end (its total deadline) before this (epoch ms). */
  readonly deadline: number;
  /** Whether an index part exists (VisitDeps.partExists). */
  partExists?: ((key: string) => Promise<boolean>) | undefined;
}

/** Time kept free after the last request's deadline, for the batch's sends. */
export const DEADLINE_MARGIN_MS = 1_000;
/**
 * A wait for the host's pace looks at the deadline at least this often: a deadline that moves
 * earlier (a local runtime winding down on Ctrl-C) ends the wait, not only the next request.
 */
const DEADLINE_RECHECK_MS = 1_000;

/** Sleeps until `at`; false (and no longer) once a request starting then could not end before the deadline. */
export async function waitUntil(at: number, requestBudget: number, deps: VisitClock): Promise<boolean> {
  for (let now = deps.now(); now < at; now = deps.now()) {
    if (at + requestBudget > deps.deadline) return false;
    await deps.sleep(Math.min(at - now, DEADLINE_RECHECK_MS));
  }
  return at + requestBudget <= deps.deadline;
}

/**
 * Whether every index part the host's done URLs name is written. A large host names thousands of
 * parts: they are checked a bounded number at a time (one at a time at ~20 ms, 3,000 used up a 60 s
 * function), and none starts once the deadline is near, so a drain never outlives its invocation;
 * out of time, the host is handed back, and the parts found stay in the container's cache
 * (fetch-deps.ts: a part once written is never removed), so the next check goes on from there.
 */
export async function partsWritten(
  names: ReadonlySet<string>,
  deps: VisitClock,
): Promise<'written' | 'missing' | 'out-of-time'> {
  const exists = deps.partExists;
  if (!exists) return 'written';
  const parts = [...names];
  let next = 0;
  let result: 'written' | 'missing' | 'out-of-time' = 'written';
  const worker = async () => {
    while (result === 'written' && next < parts.length) {
      if (deps.now() + DEADLINE_MARGIN_MS > deps.deadline) {
        result = 'out-of-time';
        return;
      }
      if (!(await exists(parts[next++] as string))) result = 'missing';
    }
  };
  const workers = Math.min(FRONTIER_LIMITS.partChecksAtOnce, parts.length);
  await Promise.all(Array.from({ length: workers }, worker));
  return result;
}
