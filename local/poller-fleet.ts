// The runtime's pollers as one: some started ahead of the others until their queues are empty, the
// others wound down while some drain, the whole pipeline waited on until idle, their stats summed.
// Apart from local-aws.ts, which builds the pollers; this is only when they run and what they did.
import type { SQSClient } from '@aws-sdk/client-sqs';
import { type EventSourcePoller, emptyPollerStats, type PollerStats } from './event-source-poller.ts';
import { depths, holdsNothing, type IdleSnapshot, type WaitForIdleOptions, waitForIdle } from './idle.ts';
import type { ProvisionedStack } from './stack-model.ts';

export interface RuntimeStats {
  total: PollerStats;
  byFunction: Record<string, PollerStats>;
}

export class PollerFleet {
  readonly #pollers: readonly EventSourcePoller[];
  /** Asks the queues' depths: AWS's own work, no principal of the stack's. */
  readonly #sqs: SQSClient;
  /** Every queue of the stack, by logical id. */
  readonly #queues: Record<string, string>;
  /** The queues an enabled event source consumes: those that must drain to be idle. */
  readonly #gating: string[];

  constructor(pollers: readonly EventSourcePoller[], sqs: SQSClient, stack: ProvisionedStack) {
    this.#pollers = pollers;
    this.#sqs = sqs;
    this.#queues = Object.fromEntries(
      Object.entries(stack.resources).flatMap(([id, r]) =>
        r.type === 'AWS::SQS::Queue' && r.url ? [[id, r.url]] : [],
      ),
    );
    this.#gating = pollers.filter((p) => p.eventSource.enabled).map((p) => p.eventSource.queueLogicalId);
  }

  /**
   * Starts the pollers of these functions alone, and resolves once their queues are empty (or
   * `timeoutMs` passed); at once when those queues hold nothing to begin with.
   */
  async startFirst(functionIds: readonly string[], timeoutMs: number): Promise<void> {
    const first = new Set(functionIds);
    const leading = this.#pollers.filter((p) => first.has(p.eventSource.functionLogicalId));
    // Nothing waiting for them (a fresh state): they need no head start, nor its idle checks.
    if (leading.length > 0 && !(await this.#empty(leading))) {
      await Promise.all(leading.map((p) => p.start()));
      // Still not empty (a result that keeps failing): the rest start anyway; nothing waits on it.
      await this.#drained(leading, timeoutMs);
    }
  }

  async startAll(): Promise<void> {
    await Promise.all(this.#pollers.map((p) => p.start()));
  }

  /** Winds down the pollers of every function but `drain`; those stop once drained (see LocalAws.windDown). */
  async windDown(drain: readonly string[], drainTimeoutMs: number): Promise<void> {
    const keep = new Set(drain);
    const kept = this.#pollers.filter((p) => keep.has(p.eventSource.functionLogicalId));
    await Promise.all(this.#pollers.filter((p) => !kept.includes(p)).map((p) => p.windDown()));
    await this.#drained(kept, drainTimeoutMs);
    await Promise.all(kept.map((p) => p.stop()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.#pollers.map((p) => p.stop()));
  }

  waitForIdle(options?: WaitForIdleOptions): Promise<IdleSnapshot> {
    return waitForIdle(
      {
        sqs: this.#sqs,
        queues: this.#queues,
        gating: this.#gating,
        busySlots: () => sum(this.#pollers.map((p) => p.busySlots())),
        activity: () => sum(this.#pollers.map((p) => p.activity())),
      },
      options,
    );
  }

  stats(): RuntimeStats {
    const byFunction: Record<string, PollerStats> = {};
    let total: PollerStats | undefined;
    for (const poller of this.#pollers) {
      const stats = poller.stats();
      const id = poller.eventSource.functionLogicalId;
      byFunction[id] = byFunction[id] ? addStats(byFunction[id], stats) : stats;
      total = total ? addStats(total, stats) : stats;
    }
    return { total: total ?? emptyPollerStats(), byFunction };
  }

  /** These pollers' queues, by logical id. */
  #queuesOf(subset: EventSourcePoller[]): Record<string, string> {
    return Object.fromEntries(
      subset.map((p) => [p.eventSource.queueLogicalId, this.#queues[p.eventSource.queueLogicalId] ?? '']),
    );
  }

  /** Whether these pollers' queues hold no message: visible, in flight or delayed. */
  async #empty(subset: EventSourcePoller[]): Promise<boolean> {
    return Object.values(await depths({ sqs: this.#sqs, queues: this.#queuesOf(subset) })).every(
      holdsNothing,
    );
  }

  /** Resolves once these pollers' queues are empty and they hold nothing, or `timeoutMs` passed. */
  async #drained(subset: EventSourcePoller[], timeoutMs: number): Promise<void> {
    if (subset.length === 0) return;
    await waitForIdle(
      {
        sqs: this.#sqs,
        queues: this.#queuesOf(subset),
        gating: subset.map((p) => p.eventSource.queueLogicalId),
        busySlots: () => sum(subset.map((p) => p.busySlots())),
        activity: () => sum(subset.map((p) => p.activity())),
      },
      { intervalMs: 100, timeoutMs },
    ).catch(() => {});
  }
}

function addStats(a: PollerStats, b: PollerStats): PollerStats {
  const out = { ...a };
  for (const key of Object.keys(out) as Array<keyof PollerStats>) {
    out[key] = key === 'maxConcurrentInvocations' ? Math.max(a[key], b[key]) : a[key] + b[key];
  }
  return out;
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
