// One poller per SQS event source mapping, keeping Lambda's semantics: `concurrency` slots, each a
// warm "container" with its own createHandler(env) instance (a worker thread terminated at a
// timeout, or in process for fixtures that ask: container.ts); batches gathered up to BatchSize
// within MaximumBatchingWindowInSeconds; results settled the way Lambda settles them.
import {
  DeleteMessageBatchCommand,
  type DeleteMessageBatchRequestEntry,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import type { HandlerWiring } from '../lambdas/shared/aws-clients.ts';
import { type Container, inProcessContainer, type RawOutcome } from './container.ts';
import { type HandlerModule, loadHandlerModule } from './handler-module.ts';
import { createLambdaContext, logStreamName } from './lambda-context.ts';
import { judgeResponse, toSqsRecord } from './sqs-event.ts';
import type { LocalEventSource, LocalFunction } from './stack-model.ts';
import { workerContainer } from './worker-container.ts';

export type InvocationOutcome = 'success' | 'partial' | 'error' | 'timeout' | 'invalid-response';

export interface InvocationReport {
  functionLogicalId: string;
  eventSourceLogicalId: string;
  slot: number;
  requestId: string;
  messageIds: string[];
  outcome: InvocationOutcome;
  /** Messages left on the queue for redelivery (all of them unless success/partial). */
  retainedIds: string[];
  durationMs: number;
  error?: unknown;
  /** batchItemFailures returned while the mapping does not report them: Lambda ignores them. */
  ignoredBatchItemFailures: number;
}

export interface PollerStats {
  invocations: number;
  /** createHandler() calls: one per slot, again after a timeout recycles the slot. */
  coldStarts: number;
  messagesReceived: number;
  messagesDeleted: number;
  /** Items a partial response reported as failed. */
  itemFailures: number;
  /** Invocations whose whole batch stays on the queue (error, timeout or invalid response). */
  batchFailures: number;
  errors: number;
  timeouts: number;
  invalidResponses: number;
  ignoredBatchItemFailures: number;
  deleteFailures: number;
  receiveErrors: number;
  /** Highest number of invocations running at once. */
  maxConcurrentInvocations: number;
}

export interface EventSourcePollerOptions {
  sqs: SQSClient;
  eventSource: LocalEventSource;
  fn: LocalFunction;
  /** The function's full environment (template variables + endpoint env + overrides). */
  env: Record<string, string>;
  region: string;
  concurrency: number;
  /** Long-poll wait per ReceiveMessage; short so stop() is quick. Default 1 s. */
  receiveWaitSeconds?: number;
  /**
   * Invoke once a receive inside the batching window finds the queue empty, rather than at the
   * window's end. Lambda waits out the window; a local crawl need not (local-aws.ts). A busy queue
   * still fills its batches: a receive finds the messages that came during the last invocation.
   */
  eagerBatches?: boolean;
  /**
   * Containers in this thread, their timeouts raced rather than enforced (local-aws.ts): no worker to
   * start and no isolate to keep per slot. The handlers still stop on their own deadline.
   */
  inProcess?: boolean;
  /** What an in-process container's handler is built with (its SDK transport); none in a worker. */
  wiring?: HandlerWiring;
  /** A worker's handler gets a browser of its own for `--render` (local/local-renderer.ts). */
  render?: boolean;
  log?: (line: string) => void;
  onInvocation?: (report: InvocationReport) => void;
}

export interface EventSourcePoller {
  readonly eventSource: LocalEventSource;
  readonly concurrency: number;
  start(): Promise<void>;
  /** Stops polling; in-flight batches finish (and are settled) first. */
  stop(): Promise<void>;
  /**
   * Stops polling, and the invocations in flight see their deadline arrive now
   * (`getRemainingTimeInMillis()` answers 0), so they wind down as at a timeout: a fetch batch starts
   * no request and hands its hosts back. Resolves once they have settled. Reaches in-process
   * containers only: a worker's context is its own copy.
   */
  windDown(): Promise<void>;
  stats(): PollerStats;
  /** Slots holding received messages (gathering, invoking or settling). */
  busySlots(): number;
  /** Grows with every receive that got messages and every invocation start/end. */
  activity(): number;
}

const MAX_RECEIVE = 10;

export function emptyPollerStats(): PollerStats {
  return {
    invocations: 0,
    coldStarts: 0,
    messagesReceived: 0,
    messagesDeleted: 0,
    itemFailures: 0,
    batchFailures: 0,
    errors: 0,
    timeouts: 0,
    invalidResponses: 0,
    ignoredBatchItemFailures: 0,
    deleteFailures: 0,
    receiveErrors: 0,
    maxConcurrentInvocations: 0,
  };
}

export function createEventSourcePoller(options: EventSourcePollerOptions): EventSourcePoller {
  return new SqsEventSourcePoller(options);
}

/** One mapping's poller: `concurrency` slots, each receiving, invoking its container and settling. */
class SqsEventSourcePoller implements EventSourcePoller {
  readonly eventSource: LocalEventSource;
  readonly concurrency: number;
  readonly #options: EventSourcePollerOptions;
  readonly #fn: LocalFunction;
  readonly #log: (line: string) => void;
  readonly #label: string;
  readonly #waitSeconds: number;
  readonly #stats = emptyPollerStats();
  #handlerModule: HandlerModule | undefined;
  #stopping = false;
  /** windDown() was called: every invocation's remaining time is 0 from then on. */
  #windingDown = false;
  #slots: Promise<void>[] = [];
  #busy = 0;
  #running = 0;
  #activity = 0;
  /** Ends the long polls in flight at stop(): a process that is done need not wait out their second. */
  #receives = new AbortController();

  constructor(options: EventSourcePollerOptions) {
    this.#options = options;
    this.eventSource = options.eventSource;
    this.#fn = options.fn;
    this.concurrency = options.concurrency;
    this.#log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    this.#label = `[local ${options.fn.logicalId}]`;
    this.#waitSeconds = options.receiveWaitSeconds ?? 1;
  }

  async start(): Promise<void> {
    if (this.#slots.length > 0 || !this.eventSource.enabled) return;
    this.#handlerModule = await loadHandlerModule(this.#fn);
    this.#stopping = false;
    this.#windingDown = false;
    // A poller started again after stop() polls with a controller not yet aborted.
    if (this.#receives.signal.aborted) this.#receives = new AbortController();
    this.#slots = Array.from({ length: this.concurrency }, (_, slot) => this.#runSlot(slot));
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    // A receive cut off as a message arrived leaves it hidden for the queue's visibility timeout
    // (nothing is lost: it comes back then). windDown() lets its receives end on their own.
    this.#receives.abort();
    await Promise.all(this.#slots);
    this.#slots = [];
  }

  async windDown(): Promise<void> {
    this.#windingDown = true;
    this.#stopping = true;
    await Promise.all(this.#slots);
    this.#slots = [];
  }

  stats(): PollerStats {
    return { ...this.#stats };
  }

  busySlots(): number {
    return this.#busy;
  }

  activity(): number {
    return this.#activity;
  }

  async #receive(max: number, wait: number): Promise<Message[]> {
    try {
      const out = await this.#options.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.eventSource.queueUrl,
          MaxNumberOfMessages: Math.min(MAX_RECEIVE, max),
          WaitTimeSeconds: wait,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
        { abortSignal: this.#receives.signal },
      );
      const messages = out.Messages ?? [];
      if (messages.length > 0) {
        this.#stats.messagesReceived += messages.length;
        this.#activity++;
      }
      return messages;
    } catch (err) {
      if (this.#stopping) return [];
      this.#stats.receiveErrors++;
      this.#log(`${this.#label} ReceiveMessage failed: ${describe(err)}`);
      await sleep(500);
      return [];
    }
  }

  // Lambda: invoke when the batch is full, the batching window has passed, or (window 0) after one poll.
  async #gather(onFirst: () => void): Promise<Message[]> {
    const source = this.eventSource;
    const batch = await this.#receive(source.batchSize, this.#waitSeconds);
    if (batch.length === 0) return batch;
    onFirst();
    const windowMs = source.maximumBatchingWindowInSeconds * 1000;
    const eager = this.#options.eagerBatches === true;
    const deadline = Date.now() + windowMs;
    while (batch.length < source.batchSize && !this.#stopping) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      const more = await this.#receive(source.batchSize - batch.length, remaining >= 1000 && !eager ? 1 : 0);
      batch.push(...more);
      if (more.length === 0 && eager) break;
      if (more.length === 0 && remaining < 1000) await sleep(Math.min(remaining, 50));
    }
    return batch;
  }

  #newContainer(): Container {
    const options = this.#options;
    if (!this.#handlerModule) throw new Error('poller not started');
    return this.#handlerModule.inProcess || options.inProcess
      ? inProcessContainer(this.#handlerModule.factory, options.env, options.wiring)
      : workerContainer(this.#fn, { ...options.env }, options.render ?? false);
  }

  async #runSlot(slot: number): Promise<void> {
    // The first slot's container starts its Init now, while the queue fills: the first batch need not
    // wait for the handler module's import. The others start at their first batch.
    const container = this.#newContainer();
    if (slot === 0) container.init().catch(() => {});
    let stream = logStreamName();
    try {
      while (!this.#stopping) {
        let holding = false;
        try {
          const messages = await this.#gather(() => {
            holding = true;
            this.#busy++;
          });
          if (messages.length === 0) continue;
          const result = await this.#invoke(slot, messages, container, stream);
          if (result.recycle) {
            // Lambda resets an execution environment after a timeout: next batch is a cold start.
            await container.dispose();
            stream = logStreamName();
          }
        } catch (err) {
          this.#log(`${this.#label} slot ${slot}: unexpected error: ${describe(err)}`);
          await sleep(200);
        } finally {
          if (holding) this.#busy--;
        }
      }
    } finally {
      await container.dispose();
    }
  }

  async #invoke(
    slot: number,
    messages: Message[],
    container: Container,
    stream: string,
  ): Promise<{ recycle: boolean }> {
    const fn = this.#fn;
    const stats = this.#stats;
    stats.invocations++;
    this.#running++;
    this.#activity++;
    stats.maxConcurrentInvocations = Math.max(stats.maxConcurrentInvocations, this.#running);
    // Init (a new worker importing the module) happens before the invocation's clock starts.
    const initError = await container.init().then(
      () => undefined,
      (error: unknown) => error,
    );
    const started = Date.now();
    const deadline = started + fn.timeoutSeconds * 1000;
    const context = createLambdaContext(fn, deadline, stream);
    const remaining = context.getRemainingTimeInMillis;
    context.getRemainingTimeInMillis = () => (this.#windingDown ? 0 : remaining());
    const event: SQSEvent = {
      Records: messages.map((m) => toSqsRecord(m, this.eventSource.queueArn, this.#options.region)),
    };
    const ids = event.Records.map((r) => r.messageId);
    const { raw, coldStart } =
      initError === undefined
        ? await container.invoke(event, context, deadline)
        : { raw: { kind: 'threw' as const, error: initError }, coldStart: true };
    if (coldStart) stats.coldStarts++;
    this.#running--;

    const verdict = settleInvocation(raw, ids, fn, this.eventSource.reportBatchItemFailures, stats);
    this.#logVerdict(context.awsRequestId, verdict);
    await this.#deleteMessages(messages.filter((m) => verdict.deleteIds.includes(m.MessageId ?? '')));
    this.#activity++;
    const deleted = new Set(verdict.deleteIds);
    this.#options.onInvocation?.({
      functionLogicalId: fn.logicalId,
      eventSourceLogicalId: this.eventSource.logicalId,
      slot,
      requestId: context.awsRequestId,
      messageIds: ids,
      outcome: verdict.outcome,
      retainedIds: ids.filter((id) => !deleted.has(id)),
      durationMs: Date.now() - started,
      ...(verdict.error === undefined ? {} : { error: verdict.error }),
      ignoredBatchItemFailures: verdict.ignored,
    });
    return { recycle: verdict.outcome === 'timeout' };
  }

  #logVerdict(requestId: string, { outcome, error, ignored }: Verdict): void {
    if (outcome === 'error' || outcome === 'timeout' || outcome === 'invalid-response') {
      // Nothing deleted: the messages reappear after the queue's visibility timeout and the
      // queue's RedrivePolicy moves them to the DLQ after maxReceiveCount receives.
      this.#stats.batchFailures++;
      this.#log(`${this.#label} invocation ${requestId} ${outcome}: ${describe(error)}`);
    }
    if (ignored > 0) {
      this.#log(
        `${this.#label} returned ${ignored} batchItemFailures but the mapping lacks ReportBatchItemFailures: whole batch deleted`,
      );
    }
  }

  async #deleteMessages(messages: Message[]): Promise<void> {
    for (let i = 0; i < messages.length; i += MAX_RECEIVE) {
      let entries: DeleteMessageBatchRequestEntry[] = messages
        .slice(i, i + MAX_RECEIVE)
        .map((m, j) => ({ Id: `m${j}`, ReceiptHandle: m.ReceiptHandle ?? '' }));
      // DeleteMessageBatch answers 200 with a per-entry Failed list: retry those once.
      for (let attempt = 0; attempt < 2 && entries.length > 0; attempt++) {
        try {
          const out = await this.#options.sqs.send(
            new DeleteMessageBatchCommand({ QueueUrl: this.eventSource.queueUrl, Entries: entries }),
          );
          this.#stats.messagesDeleted += out.Successful?.length ?? 0;
          const failed = new Set((out.Failed ?? []).map((f) => f.Id));
          entries = entries.filter((e) => failed.has(e.Id));
        } catch (err) {
          if (attempt === 1) this.#log(`${this.#label} DeleteMessageBatch failed: ${describe(err)}`);
        }
      }
      if (entries.length > 0) {
        this.#stats.deleteFailures += entries.length;
        this.#log(`${this.#label} ${entries.length} message(s) not deleted; they will be delivered again`);
      }
    }
  }
}

/** What an invocation came to, and which of its messages are done with (deleted from the queue). */
interface Verdict {
  outcome: InvocationOutcome;
  deleteIds: string[];
  error: unknown;
  /** batchItemFailures returned while the mapping does not report them. */
  ignored: number;
}

/** The invocation's raw outcome settled the way Lambda settles it, and counted in `stats`. */
function settleInvocation(
  raw: RawOutcome,
  ids: string[],
  fn: LocalFunction,
  reportBatchItemFailures: boolean,
  stats: PollerStats,
): Verdict {
  if (raw.kind === 'timeout') {
    stats.timeouts++;
    const error = new Error(`Task timed out after ${fn.timeoutSeconds.toFixed(2)} seconds`);
    return { outcome: 'timeout', deleteIds: [], error, ignored: 0 };
  }
  if (raw.kind === 'threw') {
    stats.errors++;
    return { outcome: 'error', deleteIds: [], error: raw.error, ignored: 0 };
  }
  if (raw.kind === 'unserializable') {
    stats.invalidResponses++;
    return { outcome: 'invalid-response', deleteIds: [], error: new Error(raw.reason), ignored: 0 };
  }
  const verdict = judgeResponse(raw.value, ids, reportBatchItemFailures);
  if (verdict.kind === 'invalid') {
    stats.invalidResponses++;
    return { outcome: 'invalid-response', deleteIds: [], error: new Error(verdict.reason), ignored: 0 };
  }
  if (verdict.kind === 'partial') {
    stats.itemFailures += verdict.failed.size;
    return {
      outcome: 'partial',
      deleteIds: ids.filter((id) => !verdict.failed.has(id)),
      error: undefined,
      ignored: 0,
    };
  }
  stats.ignoredBatchItemFailures += verdict.ignoredFailures;
  return { outcome: 'success', deleteIds: ids, error: undefined, ignored: verdict.ignoredFailures };
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
