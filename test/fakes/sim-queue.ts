/**
 * An SQS standard queue and Lambda's SQS event source on a virtual clock, for the scale simulation
 * (bench/scale.ts). The queue: DelaySeconds, a visibility timeout per receive, ApproximateReceiveCount,
 * and a redrive policy (a message received more than maxReceiveCount times goes to the DLQ instead).
 * The event source (cdk/limits.ts *_EVENT_SOURCE): at most `maxConcurrency` invocations at once, each
 * of at most `batchSize` messages, gathered for up to the batching window; the function's timeout is
 * enforced: an invocation past it is abandoned (its work freezes: `Invocation.killed`) and its
 * messages come back once their visibility timeout ends. Messages the handler reports as batch item
 * failures come back after the delay it asked for; the others are deleted.
 */
import type { AwsMeter } from './aws-meter.ts';
import type { VirtualClock } from './virtual-clock.ts';

export interface QueuedMessage {
  id: string;
  body: string;
  receiveCount: number;
}

interface Stored extends QueuedMessage {
  visibleAt: number;
  /** Bumped at each receive and visibility change: heap entries of older versions are stale. */
  version: number;
}

interface HeapEntry {
  at: number;
  id: string;
  version: number;
}

export class SimQueue {
  readonly name: string;
  readonly dlq: QueuedMessage[] = [];
  readonly #messages = new Map<string, Stored>();
  readonly #heap: HeapEntry[] = [];
  readonly #clock: VirtualClock;
  readonly #visibilityMs: number;
  readonly #maxReceiveCount: number;
  #ids = 0;
  #waiters: Array<() => void> = [];
  sent = 0;

  constructor(name: string, clock: VirtualClock, options: { visibilityMs: number; maxReceiveCount: number }) {
    this.name = name;
    this.#clock = clock;
    this.#visibilityMs = options.visibilityMs;
    this.#maxReceiveCount = options.maxReceiveCount;
  }

  get size(): number {
    return this.#messages.size;
  }

  send(messages: ReadonlyArray<{ body: string; delaySeconds?: number }>): void {
    for (const { body, delaySeconds } of messages) {
      const id = `${this.name}-${++this.#ids}`;
      const message: Stored = {
        id,
        body,
        receiveCount: 0,
        visibleAt: this.#clock.now() + (delaySeconds ?? 0) * 1000,
        version: 0,
      };
      this.#messages.set(id, message);
      this.sent++;
      this.#enqueue(message);
    }
  }

  /** Up to `max` visible messages, made invisible for the visibility timeout. */
  receive(max: number): QueuedMessage[] {
    const now = this.#clock.now();
    const out: QueuedMessage[] = [];
    while (out.length < max) {
      const top = this.#peekVisible(now);
      if (top === undefined) break;
      this.#popHeap();
      top.receiveCount++;
      if (top.receiveCount > this.#maxReceiveCount) {
        // The redrive policy: moved to the DLQ as it is received once too often.
        this.#messages.delete(top.id);
        this.dlq.push({ id: top.id, body: top.body, receiveCount: top.receiveCount });
        continue;
      }
      top.visibleAt = now + this.#visibilityMs;
      top.version++;
      this.#enqueue(top);
      out.push({ id: top.id, body: top.body, receiveCount: top.receiveCount });
    }
    return out;
  }

  delete(id: string): void {
    this.#messages.delete(id);
  }

  changeVisibility(id: string, seconds: number): void {
    const message = this.#messages.get(id);
    if (message === undefined) return;
    message.visibleAt = this.#clock.now() + seconds * 1000;
    message.version++;
    this.#enqueue(message);
  }

  hasVisible(): boolean {
    return this.#peekVisible(this.#clock.now()) !== undefined;
  }

  /** Resolves when a message may be visible (at once if one is). */
  async waitVisible(): Promise<void> {
    while (!this.hasVisible()) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  #enqueue(message: Stored): void {
    push(this.#heap, { at: message.visibleAt, id: message.id, version: message.version });
    const wait = message.visibleAt - this.#clock.now();
    if (wait <= 0) this.#notify();
    else this.#clock.schedule(wait, () => this.#notify());
  }

  #notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  #peekVisible(now: number): Stored | undefined {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined) return undefined;
      const message = this.#messages.get(top.id);
      if (message === undefined || message.version !== top.version) {
        this.#popHeap();
        continue;
      }
      return top.at <= now ? message : undefined;
    }
  }

  #popHeap(): void {
    pop(this.#heap);
  }
}

function push(heap: HeapEntry[], entry: HeapEntry): void {
  heap.push(entry);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]!.at <= heap[i]!.at) break;
    [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
    i = parent;
  }
}

function pop(heap: HeapEntry[]): void {
  const last = heap.pop()!;
  if (heap.length === 0) return;
  heap[0] = last;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let least = i;
    if (left < heap.length && heap[left]!.at < heap[least]!.at) least = left;
    if (right < heap.length && heap[right]!.at < heap[least]!.at) least = right;
    if (least === i) return;
    [heap[i], heap[least]] = [heap[least]!, heap[i]!];
    i = least;
  }
}

/** One invocation: its id, when it is cut off, and whether it was (its work must then freeze). */
export interface Invocation {
  id: string;
  startedAt: number;
  /** Epoch ms of the function's timeout. */
  end: number;
  killed: boolean;
}

export interface EventSourceOptions {
  batchSize: number;
  maxBatchingWindowSeconds: number;
  maxConcurrency: number;
  timeoutSeconds: number;
  memoryMb: number;
}

export interface FunctionUsage {
  invocations: number;
  /** Billed duration (ms), rounded up per invocation. */
  durationMs: number;
  memoryMb: number;
  timedOut: number;
  messages: number;
}

/** Lambda's long-polling pollers wait 20 s per empty receive. */
const LONG_POLL_MS = 20_000;
const RECEIVE_MAX = 10;

/**
 * Runs the event source until `stopped()`: `maxConcurrency` slots, each a warm container (`slot` is
 * its index: what the handler caches lives per slot). `handler` returns the batch item failures
 * (message id, seconds until visible again).
 */
export async function runEventSource(
  queue: SimQueue,
  clock: VirtualClock,
  meter: AwsMeter,
  options: EventSourceOptions,
  handler: (
    messages: QueuedMessage[],
    invocation: Invocation,
    slot: number,
  ) => Promise<Array<{ id: string; seconds: number }>>,
  stopped: () => boolean,
): Promise<FunctionUsage> {
  const usage: FunctionUsage = {
    invocations: 0,
    durationMs: 0,
    memoryMb: options.memoryMb,
    timedOut: 0,
    messages: 0,
  };
  let invocationIds = 0;
  const slot = async (index: number) => {
    while (!stopped()) {
      const idleFrom = clock.now();
      await Promise.race([queue.waitVisible(), clock.sleep(LONG_POLL_MS)]);
      // Empty long polls while the queue was idle: billed receives.
      const emptyPolls = Math.floor((clock.now() - idleFrom) / LONG_POLL_MS);
      for (let i = 0; i < emptyPolls; i++) await meter.request({ op: 'SQS:ReceiveMessage', bytes: 0 });
      if (stopped()) break;
      if (!queue.hasVisible()) continue;
      // The batching window: a batch that is not full at once is gathered until the window ends.
      const messages = queue.receive(options.batchSize);
      if (messages.length < options.batchSize && options.maxBatchingWindowSeconds > 0) {
        await clock.sleep(options.maxBatchingWindowSeconds * 1000);
        messages.push(...queue.receive(options.batchSize - messages.length));
      }
      if (messages.length === 0) continue;
      for (let start = 0; start < messages.length; start += RECEIVE_MAX) {
        const chunk = messages.slice(start, start + RECEIVE_MAX);
        await meter.request({
          op: 'SQS:ReceiveMessage',
          bytes: chunk.reduce((sum, m) => sum + Buffer.byteLength(m.body), 0),
        });
      }
      const startedAt = clock.now();
      const invocation: Invocation = {
        id: `inv${++invocationIds}`,
        startedAt,
        end: startedAt + options.timeoutSeconds * 1000,
        killed: false,
      };
      usage.invocations++;
      usage.messages += messages.length;
      const work = handler(messages, invocation, index).then(
        (failures) => ({ failures }),
        (error: unknown) => ({ error }),
      );
      const timeout = clock.sleep(options.timeoutSeconds * 1000).then(() => 'timeout' as const);
      const outcome = await Promise.race([work, timeout]);
      usage.durationMs += Math.max(1, Math.ceil(clock.now() - startedAt));
      if (outcome === 'timeout') {
        // Abandoned: nothing more of it runs; its messages come back after the visibility timeout.
        invocation.killed = true;
        usage.timedOut++;
        continue;
      }
      // A handler that threw fails the whole batch (each message back after its visibility timeout).
      if ('error' in outcome) continue;
      const failed = new Map(outcome.failures.map((f) => [f.id, f.seconds]));
      const done = messages.filter((m) => !failed.has(m.id));
      for (const message of done) queue.delete(message.id);
      for (let start = 0; start < done.length; start += RECEIVE_MAX)
        await meter.request({ op: 'SQS:DeleteMessageBatch', bytes: 0 });
      for (const [id, seconds] of failed) queue.changeVisibility(id, seconds);
      for (let start = 0; start < failed.size; start += RECEIVE_MAX)
        await meter.request({ op: 'SQS:ChangeMessageVisibilityBatch', bytes: 0 });
    }
  };
  await Promise.all(Array.from({ length: options.maxConcurrency }, (_, index) => slot(index)));
  return usage;
}
