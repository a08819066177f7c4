/**
 * What a batch has produced and not yet sent: pages (already in the WARC writer), results, links to
 * admit, dead letters. `flush()` sends it all, each step safe to repeat (docs/frontier.md, "Flushes").
 * The fetch batch (fetch-batch.ts) fills it from its visits and task messages; the render batch
 * (render-batch.ts) from its rendered pages.
 */

import { type CapturedPage, WarcBatchWriter } from '../archive/index.ts';
import { type LruSet, retryStep } from '../base/index.ts';
import {
  type CrawlBudget,
  type CrawlConfig,
  type DeadLetter,
  type DeadLetterSender,
  type FrontierAdmission,
  type FrontierUrl,
  frontierHost,
  type HostVisits,
  type OutgoingVisit,
  type PageToRender,
  type RenderMessage,
  type RenderSender,
  type ResultSender,
  type TaskMessage,
  type TaskSender,
} from '../crawl/index.ts';
import {
  admitEnded,
  admitLinks,
  type CarriedLinks,
  confirmSent,
  type DiscoveringPage,
  giveBack,
  type TaskAdmission,
  type WakingHosts,
} from '../frontier/index.ts';
import type { CrawlResult } from '../results/index.ts';

export type WarcBlobs = ConstructorParameters<typeof WarcBatchWriter>[0];

/** A task dropped: a duplicate, or a task of a complete crawl. */
export interface DroppedTask {
  url: string;
  why: 'duplicate' | 'crawl-complete';
}

export interface BatchOutputDeps {
  frontier: FrontierAdmission;
  hosts: HostVisits;
  deadLetters: DeadLetterSender;
  budget?: CrawlBudget | undefined;
  blobs: WarcBlobs;
  results: ResultSender;
  /** The render function's queue (the stack has one): a page to render goes there instead of its result. */
  renderQueue?: RenderSender | undefined;
  tasks: TaskSender;
  seen: LruSet;
  invocationId: string;
  now: () => number;
  /** Epoch ms: no request starts that could not end before it; the batch's last flush follows it. */
  deadline: number;
  /** Epoch ms: when the invocation is cut off (FetchBatchDeps.end). */
  end?: number | undefined;
  /**
   * Pages and results that make a flush at once. Default 25. A kill loses what is not flushed (it is
   * fetched again), so this bounds a kill's refetches per invocation; fewer means more WARC files.
   */
  flushEveryPages?: number | undefined;
}

/** What a batch adds: a result with no page, or a captured page with the links found in it. */
export type OutputDecision =
  | { kind: 'result'; result: CrawlResult }
  | {
      kind: 'captured';
      page: CapturedPage;
      config: CrawlConfig;
      links: DiscoveredLinks;
      /** Sent to the render function once written, which sends its result (render-message.ts). */
      render?: PageToRender | undefined;
    };

type DiscoveredLinks = DiscoveringPage['links'];

/** The last flush is given this many times the longest flush seen so far before `end`. */
const LAST_FLUSH_FACTOR = 2;
const DEFAULT_FLUSH_EVERY_PAGES = 25;
/** Visits wait once this many flushes' worth of pages are unsent (BatchOutput.room). */
const PENDING_FLUSHES = 2;

/**
 * What the batch has produced and not yet sent: pages (already in the WARC writer), results, links
 * to admit, dead letters. `flush()` sends it all, each step safe to repeat.
 */
export class BatchOutput {
  readonly sentResults: CrawlResult[] = [];
  readonly sentWarcKeys: string[] = [];
  readonly sentVisits: OutgoingVisit[] = [];
  readonly budgetStopped: string[] = [];
  readonly dropped: DroppedTask[] = [];
  readonly taskMessages: TaskMessage[] = [];
  private readonly deps: BatchOutputDeps;
  private flushes = 0;
  private writer: WarcBatchWriter;
  private results: CrawlResult[] = [];
  private written: CrawlResult[] = [];
  private discovering: DiscoveringPage[] = [];
  private invalid: DeadLetter[] = [];
  /** Keys of admitted links, marked seen once the flush that sends their results succeeds. */
  private seenKeys: string[] = [];
  /** Skipped links admitted carried, by `<crawlId>\n<page key>`: sent in their page's result. */
  private carried = new Map<string, CarriedLinks['links']>();
  /** Pages to render once written (by `<crawlId>\n<key>`). */
  private toRender = new Map<string, PageToRender>();
  /** Task URLs that ended at once: admitted held, so their results count in their host's tally. */
  private ended: Array<{ crawlId: string; url: FrontierUrl }> = [];
  /** Serializes flushes (the periodic one and the last). */
  private flushing: Promise<void> = Promise.resolve();
  private broken: { error: unknown } | undefined;
  /** The longest flush so far (ms), the one running included: what the batch's last flush may take. */
  private longestFlushMs = 0;
  private flushStartedAt: number | undefined;
  /** A flush for a full output is on its way (one at a time: the next takes what came meanwhile). */
  private flushDue = false;
  /** Wakes of each host (`<crawlId>\n<host>`) by this batch's admissions. */
  private readonly wakes = new Map<string, number>();
  /** The hosts as admission uses them, counting each host's wakes (wokenCount). */
  private readonly wakingHosts: WakingHosts;

  constructor(deps: BatchOutputDeps) {
    this.deps = deps;
    this.writer = this.newWriter();
    const { hosts } = deps;
    this.wakingHosts = {
      wake: (crawlId, host, now) => {
        const id = `${crawlId}\n${host}`;
        this.wakes.set(id, (this.wakes.get(id) ?? 0) + 1);
        return hosts.wake(crawlId, host, now);
      },
      unwake: (...args) => hosts.unwake(...args),
      confirmSent: (...args) => hosts.confirmSent(...args),
    };
  }

  /** How many times this batch's admissions have woken the host (a visit reads it again when this moves). */
  wokenCount(crawlId: string, host: string): number {
    return this.wakes.get(`${crawlId}\n${host}`) ?? 0;
  }

  private newWriter(): WarcBatchWriter {
    // One writer per flush: its files are finished by the flush, so each needs keys of its own.
    const id = this.flushes === 0 ? this.deps.invocationId : `${this.deps.invocationId}-${this.flushes}`;
    return new WarcBatchWriter(this.deps.blobs, id, new Date(this.deps.now()));
  }

  addTask(message: TaskMessage, admission: TaskAdmission): void {
    this.taskMessages.push(message);
    switch (admission.kind) {
      case 'result':
        this.results.push(admission.result);
        this.ended.push({
          crawlId: admission.result.crawlId,
          url: { key: admission.result.key, url: admission.result.url, depth: admission.result.depth },
        });
        if (admission.result.outcome === 'invalid')
          this.invalid.push({
            body: message.body,
            code: admission.result.code ?? 'invalid-task',
            reason: admission.result.reason ?? '',
          });
        break;
      case 'admit':
        this.discovering.push(admission.page);
        break;
      case 'drop':
        this.dropped.push({ url: admission.url, why: admission.why });
        break;
      case 'reject':
        this.invalid.push({ body: message.body, code: admission.code, reason: admission.reason });
        break;
    }
  }

  addVisit(decision: OutputDecision): void {
    this.add(decision);
    if (this.pending() >= this.flushEveryPages() && !this.flushDue) {
      this.flushDue = true;
      this.flush()
        .catch(() => {})
        .finally(() => {
          this.flushDue = false;
        });
    }
  }

  /**
   * Waits while the output holds a flush's worth of pages beyond the one being sent: visits go on
   * fetching during a flush, but never outrun it, so each flush stays small (inside the time the
   * last one is given) and whatever a kill or timeout cuts off stays within two flushes.
   */
  async room(): Promise<void> {
    while (this.pending() >= PENDING_FLUSHES * this.flushEveryPages() && this.broken === undefined)
      await this.flush().catch(() => {});
  }

  private pending(): number {
    return this.results.length + this.written.length;
  }

  private flushEveryPages(): number {
    return this.deps.flushEveryPages ?? DEFAULT_FLUSH_EVERY_PAGES;
  }

  private add(decision: OutputDecision): void {
    if (decision.kind === 'result') {
      this.results.push(decision.result);
      return;
    }
    this.writer.add(decision.page);
    this.written.push(decision.page.result);
    const { crawlId, key } = decision.page.result;
    if (decision.render !== undefined) this.toRender.set(`${crawlId}\n${key}`, decision.render);
    if (decision.links.length > 0) {
      this.discovering.push({
        config: decision.config,
        parentKey: decision.page.result.key,
        parentUrl: decision.page.result.url,
        // Its result goes out with the flush that admits its links, or a later one: it carries them.
        carrier: true,
        depth: decision.page.result.depth,
        links: decision.links,
      });
    }
  }

  flushPeriodically(everyMs: number): { stop: () => Promise<void> } {
    let stopped = false;
    const timer = setInterval(() => {
      if (!stopped) this.flush().catch(() => {});
    }, everyMs);
    // Never what keeps a process alive: an invocation cut off at its timeout may never come back here.
    timer.unref();
    return {
      stop: async () => {
        stopped = true;
        clearInterval(timer);
        await this.flushing.catch(() => {});
      },
    };
  }

  /**
   * Admits the links found so far and wakes their hosts, without finishing WARC files or sending
   * results: a visit that ran out of ready URLs looks again once its pages' links are in. Their
   * skipped results and seen keys wait for the next flush.
   */
  admitFound(): Promise<void> {
    return this.serialized(() => this.admitOnce());
  }

  flush(): Promise<void> {
    return this.serialized(() => this.flushOnce());
  }

  private serialized(step: () => Promise<void>): Promise<void> {
    const run = this.flushing
      .catch(() => {})
      .then(() => {
        if (this.broken) throw this.broken.error;
        return step();
      })
      .catch((error: unknown) => {
        // The batch's output is (partly) lost: no later step may pretend otherwise. Every visit of
        // the batch comes back once its lease has run out, and fetches again what was not reported.
        this.broken ??= { error };
        throw error;
      });
    this.flushing = run;
    return run;
  }

  private async admitOnce(): Promise<void> {
    const discovering = this.discovering;
    const ended = this.ended;
    this.discovering = [];
    this.ended = [];
    const admitted = await this.admit(discovering, ended);
    // Their skipped results and seen keys go with the next flush, as do their pages' results.
    this.results.push(...admitted.results);
    this.seenKeys.push(...admitted.seenKeys);
    addCarried(this.carried, admitted.carried);
  }

  /** Admits links (and ended task URLs), wakes their hosts and sends the visits the wakes asked for. */
  private async admit(
    discovering: DiscoveringPage[],
    ended: Array<{ crawlId: string; url: FrontierUrl }>,
  ): Promise<{ results: CrawlResult[]; seenKeys: string[]; carried: CarriedLinks[] }> {
    if (discovering.length === 0 && ended.length === 0) return { results: [], seenKeys: [], carried: [] };
    const deps = this.deps;
    const now = new Date(deps.now());
    const hosts = this.wakingHosts;
    const admitted = await retryStep(() =>
      admitLinks(discovering, { frontier: deps.frontier, hosts, seen: deps.seen, now }),
    );
    const endedVisits = await retryStep(() =>
      admitEnded(ended, { frontier: deps.frontier, hosts, now }),
    ).catch(async (error: unknown) => {
      await giveBack(admitted.visits, deps.hosts);
      throw error;
    });
    const visits = [...admitted.visits, ...endedVisits];
    await retryStep(() => deps.tasks.sendVisits(visits)).catch(async (error: unknown) => {
      // The wakes claimed these sends: given back, so the retried batch's wakes send them again. A
      // claim left standing holds its host until VISIT_GRACE_MS, longer than the retry's backoff,
      // and then only a new link wakes it: each give-back is tried as hard as the send.
      await giveBack(visits, deps.hosts);
      throw error;
    });
    await confirmSent(visits, deps.hosts);
    this.sentVisits.push(...visits);
    return { results: admitted.results, seenKeys: admitted.seenKeys, carried: admitted.carried };
  }

  /** Puts the render's hold on its host, which this batch's visit holds (a lost lease fails the flush). */
  private async holdHost(render: RenderMessage, until = render.holdUntil): Promise<void> {
    const held = await this.deps.hosts.holdForRender(
      render.crawlId,
      frontierHost(render.result.url),
      this.deps.invocationId,
      { token: render.hold, until },
    );
    if (!held)
      throw new Error(
        `the visit of ${frontierHost(render.result.url)} lost its lease before its page's render`,
      );
  }

  /** When the visits stop starting requests: the deadline, or earlier if the last flush would not fit. */
  visitDeadline(): number {
    const { deadline, end } = this.deps;
    if (end === undefined) return deadline;
    const running = this.flushStartedAt === undefined ? 0 : this.deps.now() - this.flushStartedAt;
    return Math.min(deadline, end - LAST_FLUSH_FACTOR * Math.max(this.longestFlushMs, running));
  }

  private async flushOnce(): Promise<void> {
    const started = this.deps.now();
    this.flushStartedAt = started;
    try {
      await this.sendAll();
    } finally {
      this.flushStartedAt = undefined;
      this.longestFlushMs = Math.max(this.longestFlushMs, this.deps.now() - started);
    }
  }

  private async sendAll(): Promise<void> {
    const deps = this.deps;
    // Everything pending is taken at once, before any await: a page written to this flush's WARC
    // files has its links admitted by this flush, before its result is sent, never by a later one.
    const writer = this.writer;
    const written = this.written;
    const discovering = this.discovering;
    const ended = this.ended;
    const leaves = this.results;
    const invalid = this.invalid;
    const seenKeys = this.seenKeys;
    const carried = this.carried;
    const toRender = this.toRender;
    this.flushes++;
    this.writer = this.newWriter();
    this.written = [];
    this.discovering = [];
    this.ended = [];
    this.results = [];
    this.invalid = [];
    this.seenKeys = [];
    this.carried = new Map();
    this.toRender = new Map();
    if (deps.budget && written.length > 0) {
      const pages = new Map<string, number>();
      for (const { crawlId } of written) pages.set(crawlId, (pages.get(crawlId) ?? 0) + 1);
      this.budgetStopped.push(...(await deps.budget.charge(pages)));
    }
    const admitted = await this.admit(discovering, ended);
    const stored = await retryStep(() => writer.finish());
    addCarried(carried, admitted.carried);
    // One send for the flush's records, leaves before pages (a crawl's records go packed, as few
    // messages as fit: SQS is paid per flush, not per URL). A page carries its skipped links.
    const { pages, renders } = splitRenders(stored.results, toRender);
    const withSkipped = pages.map((result) => {
      const skipped = carried.get(`${result.crawlId}\n${result.key}`);
      return skipped === undefined ? result : { ...result, skipped };
    });
    const results = [...leaves, ...admitted.results, ...withSkipped];
    // Their responses are in S3 now (the WARC files above): the render function reads them back, and
    // finds their hosts held (host-visit.ts), which it is to end.
    if (renders.length > 0) {
      await Promise.all(renders.map((render) => retryStep(() => this.holdHost(render))));
      await retryStep(() => sendRenders(deps.renderQueue, renders)).catch(async (error: unknown) => {
        // No render is coming to end these holds: they are made to lapse at once, so the visits
        // that come back for the batch's output fetch the pages again instead of waiting an hour.
        await Promise.all(renders.map((render) => this.holdHost(render, 0).catch(() => {})));
        throw error;
      });
    }
    await retryStep(() => deps.results.sendResults(results));
    if (invalid.length > 0) await retryStep(() => deps.deadLetters.send(invalid));
    // Seen only once their results are out: a page fetched again after a failed step admits its
    // links again, and their skipped results are sent then.
    for (const key of [...seenKeys, ...admitted.seenKeys]) deps.seen.add(key);
    this.sentResults.push(...results);
    this.sentWarcKeys.push(...stored.keys);
  }
}

/** The written pages whose result goes out now, and those the render function takes. */
function splitRenders(
  written: readonly CrawlResult[],
  toRender: ReadonlyMap<string, PageToRender>,
): { pages: CrawlResult[]; renders: RenderMessage[] } {
  const pages: CrawlResult[] = [];
  const renders: RenderMessage[] = [];
  for (const result of written) {
    const render = toRender.get(`${result.crawlId}\n${result.key}`);
    if (render === undefined || result.warc === undefined) pages.push(result);
    else
      renders.push({
        v: 1,
        kind: 'render',
        crawlId: result.crawlId,
        ...render,
        result: { ...result, warc: result.warc },
      });
  }
  return { pages, renders };
}

function sendRenders(queue: RenderSender | undefined, renders: RenderMessage[]): Promise<void> {
  // Only a stack with a render function sends pages to render (fetch-task.ts `renders`).
  if (queue === undefined) throw new Error('a page to render, but no render queue');
  return queue.sendRenders(renders);
}

/** Adds an admission's carried links to those waiting for their pages' results. */
function addCarried(into: Map<string, CarriedLinks['links']>, carried: readonly CarriedLinks[]): void {
  for (const { crawlId, parentKey, links } of carried) {
    const id = `${crawlId}\n${parentKey}`;
    into.set(id, [...(into.get(id) ?? []), ...links]);
  }
}
