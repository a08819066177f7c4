/**
 * What `crawler crawl` shows while it runs (docs/crawling.md, "Progress"): URLs done of URLs known,
 * the recent rate, an ETA, errors and retries so far, and what the crawl waits for when nothing moves.
 * Pure: readings come in from a `ProgressSource` (cli/crawl-progress-source.ts reads the frontier
 * table), text goes out through a `ProgressOutput`; the clock is injected.
 */

import type { Outcome } from '../lambdas/core/base/index.ts';
import { type CrawlConfig, frontierHost } from '../lambdas/core/crawl/index.ts';

export const PROGRESS_MODES = ['auto', 'line', 'json', 'none'] as const;
export type ProgressMode = (typeof PROGRESS_MODES)[number];

/** How often the crawl is read (one GetItem of its counters). */
export const READ_INTERVAL_MS = 1000;
/** No URL done for this long: look up what the crawl waits for (a few bounded queries). */
export const STALL_MS = 3000;
/** The window of the recent rate. */
export const RATE_WINDOW_MS = 10_000;
/** Plain (non-terminal) output: at most one line this often, and only when something changed. */
export const PLAIN_INTERVAL_MS = 5000;
/** A running visit with no page done for this long (and longer than its delay) waits on a slow host. */
export const SLOW_HOST_MS = 15_000;
/** A notice of a long crawl is given from this lower bound on. */
export const LONG_CRAWL_MS = 60_000;

/** A host item as the reader sees it (lambdas/adapters/frontier-hosts.ts), times in epoch ms. */
export interface HostWait {
  host: string;
  /** Earliest time the host's next request may leave (saved when a visit ends). */
  nextAt?: number;
  /**
   * End of a pause the host asked for: a Retry-After, or a robots.txt Crawl-delay longer than the
   * crawl's delay (the host item does not say which).
   */
  pausedUntil?: number;
  /** When its next visit message is due (no visit running). */
  visitAt?: number;
  /** A running visit holds the host until then. */
  lease?: number;
}

/** A robots.txt item (lambdas/adapters/frontier-robots.ts). */
export interface RobotsWait {
  origin: string;
  state: 'fetching' | 'unavailable' | 'ready';
  retryAt?: number;
  failures?: number;
  lease?: number;
}

export interface Waits {
  hosts: HostWait[];
  robots: RobotsWait[];
}

/** One reading of the crawl. */
export interface ProgressReading {
  done: number;
  queued: number;
  byOutcome: Partial<Record<Outcome, number>>;
  /** Work handed back to be tried again (the local runtime's retried messages). */
  retries: number;
  state: 'running' | 'complete' | 'cancelled';
}

export interface ProgressSource {
  read(): Promise<ProgressReading>;
  /** The crawl's waiting host and robots items (bounded: a few of each). */
  waits(): Promise<Waits>;
  /** Releases what the source holds (its client). */
  close?(): void;
}

export interface ProgressSnapshot {
  /** Epoch ms of the reading. */
  at: number;
  /** URLs done (fetched or otherwise ended). */
  fetched: number;
  /** URLs queued so far (grows as links are found). */
  known: number;
  /** Pages fetched (outcome `fetched`, as summary.json counts them) over the last RATE_WINDOW_MS (since the first reading while shorter). */
  pagesPerSecond: number;
  /** Seconds left at the recent rate for the URLs known now; absent without a rate. */
  etaSeconds?: number;
  /** URLs ended `failed`. */
  errors: number;
  retries: number;
  state: ProgressReading['state'];
  /** What the crawl is waiting for, when nothing has been done for STALL_MS. */
  waiting?: string;
  /** After Ctrl-C: no request starts, what is in flight finishes and the output is written. */
  windingDown?: true;
}

/** Turns readings into snapshots: the recent rate, the ETA and how long nothing has moved. */
export class ProgressModel {
  private samples: Array<{ at: number; done: number; fetched: number }> = [];
  private lastChangeAt: number | undefined;
  private lastDone = -1;

  update(reading: ProgressReading, at: number, waiting?: string): ProgressSnapshot {
    if (reading.done !== this.lastDone) {
      this.lastDone = reading.done;
      this.lastChangeAt = at;
    }
    const fetched = reading.byOutcome.fetched ?? 0;
    this.samples.push({ at, done: reading.done, fetched });
    while (this.samples.length > 2 && this.samples[1]!.at <= at - RATE_WINDOW_MS) this.samples.shift();
    const first = this.samples[0]!;
    const span = at - first.at;
    // Pages are what was fetched (skipped and blocked URLs end in no time and are no pages); the ETA
    // goes by every URL done, as every URL left must end.
    const rate = (count: number) => (span > 0 ? Math.max(0, count / (span / 1000)) : 0);
    const pagesPerSecond = rate(fetched - first.fetched);
    const urlsPerSecond = rate(reading.done - first.done);
    const left = Math.max(0, reading.queued - reading.done);
    const snapshot: ProgressSnapshot = {
      at,
      fetched: reading.done,
      known: reading.queued,
      pagesPerSecond: Math.round(pagesPerSecond * 10) / 10,
      errors: reading.byOutcome.failed ?? 0,
      retries: reading.retries,
      state: reading.state,
    };
    if (urlsPerSecond > 0 && left > 0) snapshot.etaSeconds = Math.ceil(left / urlsPerSecond);
    if (waiting !== undefined) snapshot.waiting = waiting;
    return snapshot;
  }

  /** How long no URL has been done (0 before the first reading). */
  stalledMs(now: number): number {
    return this.lastChangeAt === undefined ? 0 : Math.max(0, now - this.lastChangeAt);
  }
}

const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/**
 * What a crawl that has done nothing for `stalledMs` waits for, from its host and robots items: a
 * robots.txt retry, a pause the host asked for (Retry-After, Crawl-delay), the politeness delay, or a host slow to answer. Undefined
 * when the items say nothing (results still being aggregated, the crawl ending).
 */
export function waitingReason(
  waits: Waits,
  now: number,
  stalledMs: number,
  delayMs: number,
): string | undefined {
  const soonest = <T>(items: T[], at: (item: T) => number): T | undefined =>
    items.sort((a, b) => at(a) - at(b))[0];

  const robotsRetry = soonest(
    waits.robots.filter((r) => r.state === 'unavailable' && (r.retryAt ?? 0) > now),
    (r) => r.retryAt ?? 0,
  );
  if (robotsRetry) {
    const failures = robotsRetry.failures ?? 0;
    return `robots.txt of ${robotsRetry.origin} unavailable${failures > 0 ? ` (${failures} failed)` : ''}, retry in ${seconds((robotsRetry.retryAt ?? 0) - now)} s`;
  }
  const robotsFetch = waits.robots.find((r) => r.state === 'fetching' && (r.lease ?? 0) > now);
  if (robotsFetch) return `fetching robots.txt of ${robotsFetch.origin}`;

  const paused = soonest(
    waits.hosts.filter((h) => (h.pausedUntil ?? 0) > now),
    (h) => h.pausedUntil ?? 0,
  );
  if (paused)
    return `${paused.host} asked to wait (Retry-After or robots.txt Crawl-delay), ${seconds((paused.pausedUntil ?? 0) - now)} s left`;

  const visiting = waits.hosts.find((h) => (h.lease ?? 0) > now);
  if (visiting) {
    if ((visiting.nextAt ?? 0) > now) {
      return `politeness: next request to ${visiting.host} in ${seconds((visiting.nextAt ?? 0) - now)} s`;
    }
    // Pages reach the counters in flushes (every few seconds), so a quiet visit is not slow yet: a
    // visit sleeping out a long delay is politeness, one quiet past SLOW_HOST_MS waits on its host.
    if (stalledMs >= Math.max(SLOW_HOST_MS, delayMs * 1.5 + 1000)) {
      return `slow host: ${visiting.host}, no page for ${seconds(stalledMs)} s`;
    }
    if (delayMs >= 1000) return `politeness: one request every ${formatDelay(delayMs)} to ${visiting.host}`;
    return undefined;
  }
  const due = (h: HostWait) => Math.max(h.nextAt ?? 0, h.visitAt ?? 0);
  const next = soonest(
    waits.hosts.filter((h) => due(h) > now),
    due,
  );
  if (next) return `politeness: next request to ${next.host} in ${seconds(due(next) - now)} s`;
  return undefined;
}

/** 7 s, 1:05, 1:02:03. */
export function formatDuration(totalSeconds: number): string {
  const s = Math.max(0, Math.round(totalSeconds));
  if (s < 60) return `${s} s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

/** 45 s, 50 min, 2.5 h: a rough length. */
export function roughDuration(ms: number): string {
  const s = ms / 1000;
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 360) / 10} h`;
}

/** 1 s, 1.5 s, 250 ms: a politeness delay. */
export function formatDelay(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

/** The human line: `12/40 URLs · 3.1 pages/s · ETA 0:09 · 1 error · 2 retries · waiting: ...`. */
export function describeSnapshot(s: ProgressSnapshot): string {
  const parts = [
    ...(s.windingDown
      ? ['winding down: no new requests, finishing those in flight and writing the output']
      : []),
    `${s.fetched}/${s.known} URLs`,
    `${s.pagesPerSecond} pages/s`,
    ...(s.etaSeconds === undefined || s.windingDown ? [] : [`ETA ${formatDuration(s.etaSeconds)}`]),
    s.errors === 1 ? '1 error' : `${s.errors} errors`,
    s.retries === 1 ? '1 retry' : `${s.retries} retries`,
    ...(s.waiting === undefined || s.windingDown ? [] : [`waiting: ${s.waiting}`]),
  ];
  return parts.join(' · ');
}

/** Cuts a line to the terminal's width (one column spare: a full line wraps on some terminals). */
export function fitToWidth(line: string, columns: number | undefined): string {
  const width = (columns ?? 80) - 1;
  if (width < 10 || line.length <= width) return line;
  return `${line.slice(0, width - 1)}…`;
}

/** Where text goes: stderr in the CLI, a string in tests. */
export interface ProgressOutput {
  write(text: string): void;
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressRenderer {
  /** False when progress is not shown (`--quiet`, `--progress none`): the crawl is then not read. */
  readonly showsProgress: boolean;
  /** A one-off message (starting, seeds sent, a notice). */
  message(text: string): void;
  update(snapshot: ProgressSnapshot): void;
  /** The crawl's waiting ended: last state, and the cursor on a fresh line. */
  finish(snapshot: ProgressSnapshot | undefined): void;
}

const CLEAR_LINE = '\r\x1b[2K';

/** A terminal: one line rewritten in place. Messages go above it. */
export class LineRenderer implements ProgressRenderer {
  readonly showsProgress = true;
  private drawn: string | undefined;
  private readonly out: ProgressOutput;
  constructor(out: ProgressOutput) {
    this.out = out;
  }

  message(text: string): void {
    this.out.write(`${this.drawn === undefined ? '' : CLEAR_LINE}${text}\n${this.drawn ?? ''}`);
  }

  update(snapshot: ProgressSnapshot): void {
    this.drawn = fitToWidth(describeSnapshot(snapshot), this.out.columns);
    this.out.write(`${CLEAR_LINE}${this.drawn}`);
  }

  finish(snapshot: ProgressSnapshot | undefined): void {
    if (snapshot) this.update(snapshot);
    if (this.drawn !== undefined) this.out.write('\n');
    this.drawn = undefined;
  }
}

/** What a plain line or JSON event changes with: not the clock, the rate or the ETA alone. */
function changeKey(s: ProgressSnapshot): string {
  return JSON.stringify([s.fetched, s.known, s.errors, s.retries, s.state, s.waiting, s.windingDown]);
}

/** A log or a pipe: a plain line at most every PLAIN_INTERVAL_MS, and only when something changed. */
export class PlainRenderer implements ProgressRenderer {
  readonly showsProgress = true;
  private lastAt = Number.NEGATIVE_INFINITY;
  private lastKey: string | undefined;
  private lastWindingDown: true | undefined;
  private readonly out: ProgressOutput;
  private readonly intervalMs: number;
  constructor(out: ProgressOutput, intervalMs = PLAIN_INTERVAL_MS) {
    this.out = out;
    this.intervalMs = intervalMs;
  }

  message(text: string): void {
    this.out.write(`${text}\n`);
  }

  update(snapshot: ProgressSnapshot): void {
    const key = changeKey(snapshot);
    if (key === this.lastKey) return;
    // Winding down is said at once; the rest at most every intervalMs.
    if (snapshot.at - this.lastAt < this.intervalMs && snapshot.windingDown === this.lastWindingDown) return;
    this.write(snapshot, key);
  }

  finish(snapshot: ProgressSnapshot | undefined): void {
    if (snapshot && changeKey(snapshot) !== this.lastKey) this.write(snapshot, changeKey(snapshot));
  }

  private write(snapshot: ProgressSnapshot, key: string): void {
    this.lastAt = snapshot.at;
    this.lastKey = key;
    this.lastWindingDown = snapshot.windingDown;
    this.out.write(`progress: ${describeSnapshot(snapshot)}\n`);
  }
}

/** `--progress json`: one JSON object per line, `{"type":"progress",...}` or `{"type":"message",...}`. */
export class JsonRenderer implements ProgressRenderer {
  readonly showsProgress = true;
  private lastKey: string | undefined;
  private readonly out: ProgressOutput;
  private readonly crawlId: string;
  constructor(out: ProgressOutput, crawlId: string) {
    this.out = out;
    this.crawlId = crawlId;
  }

  message(text: string): void {
    this.out.write(`${JSON.stringify({ type: 'message', crawlId: this.crawlId, text })}\n`);
  }

  update(snapshot: ProgressSnapshot): void {
    const key = changeKey(snapshot);
    if (key === this.lastKey) return;
    this.lastKey = key;
    const { at, ...rest } = snapshot;
    this.out.write(
      `${JSON.stringify({ type: 'progress', crawlId: this.crawlId, at: new Date(at).toISOString(), ...rest })}\n`,
    );
  }

  finish(snapshot: ProgressSnapshot | undefined): void {
    if (snapshot) this.update(snapshot);
  }
}

/** `--progress none`: the messages only. `--quiet`: nothing at all (errors are not progress). */
export class SilentRenderer implements ProgressRenderer {
  readonly showsProgress = false;
  private readonly out: ProgressOutput | undefined;
  constructor(out: ProgressOutput | undefined) {
    this.out = out;
  }
  message(text: string): void {
    this.out?.write(`${text}\n`);
  }
  update(): void {}
  finish(): void {}
}

export function createRenderer(
  mode: ProgressMode,
  quiet: boolean,
  out: ProgressOutput,
  crawlId: string,
): ProgressRenderer {
  if (quiet) return new SilentRenderer(undefined);
  switch (mode) {
    case 'none':
      return new SilentRenderer(out);
    case 'json':
      return new JsonRenderer(out, crawlId);
    case 'line':
      return new LineRenderer(out);
    case 'auto':
      return out.isTTY ? new LineRenderer(out) : new PlainRenderer(out);
  }
}

export interface FollowOptions {
  /** The crawl's politeness delay: tells a visit's sleep from a slow host. */
  delayMs: number;
  now?: () => number;
  intervalMs?: number;
  stallMs?: number;
}

export interface ProgressTicker {
  /** Ctrl-C: from now on every line says the crawl is winding down (shown at once, then at each reading). */
  windingDown(): void;
  stop(): Promise<void>;
}

/**
 * Reads the crawl every `intervalMs` and renders it until `stop()`. A failed read is skipped: the
 * progress display never ends the crawl. `stop()` renders a last reading and ends the line. Nothing
 * is read when the renderer shows no progress.
 */
export function followProgress(
  source: ProgressSource,
  renderer: ProgressRenderer,
  options: FollowOptions,
): ProgressTicker {
  if (!renderer.showsProgress) {
    source.close?.();
    return { windingDown: () => {}, stop: async () => {} };
  }
  const now = options.now ?? Date.now;
  const intervalMs = options.intervalMs ?? READ_INTERVAL_MS;
  const stallMs = options.stallMs ?? STALL_MS;
  const model = new ProgressModel();
  let last: ProgressSnapshot | undefined;
  let stopped = false;
  let windingDown = false;
  let timer: NodeJS.Timeout | undefined;

  const tick = async (final: boolean): Promise<void> => {
    try {
      const reading = await source.read();
      const at = now();
      const stalled = model.stalledMs(at);
      let waiting: string | undefined;
      if (!final && reading.state === 'running' && stalled >= stallMs) {
        waiting = waitingReason(await source.waits(), at, stalled, options.delayMs);
      }
      last = model.update(reading, at, waiting);
      if (windingDown) last.windingDown = true;
      if (!final) renderer.update(last);
    } catch {
      // Skipped: the next tick reads again.
    }
  };
  let running: Promise<void> = Promise.resolve();
  const schedule = () => {
    timer = setTimeout(() => {
      running = tick(false).then(() => {
        if (!stopped) schedule();
      });
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    windingDown() {
      windingDown = true;
      if (last && !stopped) {
        last = { ...last, at: now(), windingDown: true };
        renderer.update(last);
      }
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await tick(true);
      source.close?.();
      renderer.finish(last);
    },
  };
}

/**
 * A notice at the start when the politeness delay alone makes the crawl long: pages confined to the
 * seeds' hosts (scope host or prefix), a page budget, and at best the budget spread evenly over them.
 */
export function longCrawlNotice(
  config: Pick<CrawlConfig, 'seeds' | 'maxPages' | 'delayMs' | 'scope'>,
): string | undefined {
  if (config.maxPages === undefined || config.delayMs <= 0 || config.scope === 'domain') return undefined;
  const hosts = new Set(config.seeds.map(frontierHost)).size;
  if (hosts === 0) return undefined;
  const perHost = Math.ceil(config.maxPages / hosts);
  const minMs = (perHost - 1) * config.delayMs;
  if (minMs < LONG_CRAWL_MS) return undefined;
  const pace = `one request every ${formatDelay(config.delayMs)}`;
  return `note: ${config.maxPages} pages on ${hosts === 1 ? '1 host' : `${hosts} hosts`} at ${pace} per host (--delay ${config.delayMs}) take at least ~${roughDuration(minMs)} at this pace, if the site has that many`;
}
