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
import { type Container, inProcessContainer } from './container.ts';
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
  const { sqs, eventSource: source, fn } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const label = `[local ${fn.logicalId}]`;
  const waitSeconds = options.receiveWaitSeconds ?? 1;
  const stats = emptyPollerStats();
  let handlerModule: HandlerModule | undefined;
  let stopping = false;
  /** windDown() was called: every invocation's remaining time is 0 from then on. */
  let windingDown = false;
  let slots: Promise<void>[] = [];
  let busy = 0;
  let running = 0;
  let activity = 0;
  /** Ends the long polls in flight at stop(): a process that is done need not wait out their second. */
  let receives = new AbortController();

  async function receive(max: number, wait: number): Promise<Message[]> {
    try {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: source.queueUrl,
          MaxNumberOfMessages: Math.min(MAX_RECEIVE, max),
          WaitTimeSeconds: wait,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
        { abortSignal: receives.signal },
      );
      const messages = out.Messages ?? [];
      if (messages.length > 0) {
        stats.messagesReceived += messages.length;
        activity++;
      }
      return messages;
    } catch (err) {
      if (stopping) return [];
      stats.receiveErrors++;
      log(`${label} ReceiveMessage failed: ${describe(err)}`);
      await sleep(500);
      return [];
    }
  }

  // Lambda: invoke when the batch is full, the batching window has passed, or (window 0) after one poll.
  async function gather(onFirst: () => void): Promise<Message[]> {
    const batch = await receive(source.batchSize, waitSeconds);
    if (batch.length === 0) return batch;
    onFirst();
    const windowMs = source.maximumBatchingWindowInSeconds * 1000;
    const eager = options.eagerBatches === true;
    const deadline = Date.now() + windowMs;
    while (batch.length < source.batchSize && !stopping) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      const more = await receive(source.batchSize - batch.length, remaining >= 1000 && !eager ? 1 : 0);
      batch.push(...more);
      if (more.length === 0 && eager) break;
      if (more.length === 0 && remaining < 1000) await sleep(Math.min(remaining, 50));
    }
    return batch;
  }

  function newContainer(): Container {
    if (!handlerModule) throw new Error('poller not started');
    return handlerModule.inProcess || options.inProcess
      ? inProcessContainer(handlerModule.factory, options.env, options.wiring)
      : workerContainer(fn, { ...options.env }, options.render ?? false);
  }

  async function runSlot(slot: number): Promise<void> {
    // The first slot's container starts its Init now, while the queue fills: the first batch need not
    // wait for the handler module's import. The others start at their first batch.
    const container = newContainer();
    if (slot === 0) container.init().catch(() => {});
    let stream = logStreamName();
    try {
      while (!stopping) {
        let holding = false;
        try {
          const messages = await gather(() => {
            holding = true;
            busy++;
          });
          if (messages.length === 0) continue;
          const result = await invoke(slot, messages, container, stream);
          if (result.recycle) {
            // Lambda resets an execution environment after a timeout: next batch is a cold start.
            await container.dispose();
            stream = logStreamName();
          }
        } catch (err) {
          log(`${label} slot ${slot}: unexpected error: ${describe(err)}`);
          await sleep(200);
        } finally {
          if (holding) busy--;
        }
      }
    } finally {
      await container.dispose();
    }
  }

  async function invoke(
    slot: number,
    messages: Message[],
    container: Container,
    stream: string,
  ): Promise<{ recycle: boolean }> {
    stats.invocations++;
    running++;
    activity++;
    stats.maxConcurrentInvocations = Math.max(stats.maxConcurrentInvocations, running);
    // Init (a new worker importing the module) happens before the invocation's clock starts.
    const initError = await container.init().then(
      () => undefined,
      (error: unknown) => error,
    );
    const started = Date.now();
    const deadline = started + fn.timeoutSeconds * 1000;
    const context = createLambdaContext(fn, deadline, stream);
    const remaining = context.getRemainingTimeInMillis;
    context.getRemainingTimeInMillis = () => (windingDown ? 0 : remaining());
    const event: SQSEvent = { Records: messages.map((m) => toSqsRecord(m, source.queueArn, options.region)) };
    const ids = event.Records.map((r) => r.messageId);
    const { raw, coldStart } =
      initError === undefined
        ? await container.invoke(event, context, deadline)
        : { raw: { kind: 'threw' as const, error: initError }, coldStart: true };
    if (coldStart) stats.coldStarts++;
    running--;

    let outcome: InvocationOutcome;
    let deleteIds: string[] = [];
    let error: unknown;
    let ignored = 0;
    if (raw.kind === 'timeout') {
      outcome = 'timeout';
      stats.timeouts++;
      error = new Error(`Task timed out after ${fn.timeoutSeconds.toFixed(2)} seconds`);
    } else if (raw.kind === 'threw') {
      outcome = 'error';
      stats.errors++;
      error = raw.error;
    } else if (raw.kind === 'unserializable') {
      outcome = 'invalid-response';
      stats.invalidResponses++;
      error = new Error(raw.reason);
    } else {
      const verdict = judgeResponse(raw.value, ids, source.reportBatchItemFailures);
      if (verdict.kind === 'invalid') {
        outcome = 'invalid-response';
        stats.invalidResponses++;
        error = new Error(verdict.reason);
      } else if (verdict.kind === 'partial') {
        outcome = 'partial';
        stats.itemFailures += verdict.failed.size;
        deleteIds = ids.filter((id) => !verdict.failed.has(id));
      } else {
        outcome = 'success';
        ignored = verdict.ignoredFailures;
        stats.ignoredBatchItemFailures += ignored;
        deleteIds = ids;
      }
    }
    if (outcome === 'error' || outcome === 'timeout' || outcome === 'invalid-response') {
      // Nothing deleted: the messages reappear after the queue's visibility timeout and the
      // queue's RedrivePolicy moves them to the DLQ after maxReceiveCount receives.
      stats.batchFailures++;
      log(`${label} invocation ${context.awsRequestId} ${outcome}: ${describe(error)}`);
    }
    if (ignored > 0) {
      log(
        `${label} returned ${ignored} batchItemFailures but the mapping lacks ReportBatchItemFailures: whole batch deleted`,
      );
    }
    await deleteMessages(messages.filter((m) => deleteIds.includes(m.MessageId ?? '')));
    activity++;
    const deleted = new Set(deleteIds);
    options.onInvocation?.({
      functionLogicalId: fn.logicalId,
      eventSourceLogicalId: source.logicalId,
      slot,
      requestId: context.awsRequestId,
      messageIds: ids,
      outcome,
      retainedIds: ids.filter((id) => !deleted.has(id)),
      durationMs: Date.now() - started,
      ...(error === undefined ? {} : { error }),
      ignoredBatchItemFailures: ignored,
    });
    return { recycle: outcome === 'timeout' };
  }

  async function deleteMessages(messages: Message[]): Promise<void> {
    for (let i = 0; i < messages.length; i += MAX_RECEIVE) {
      let entries: DeleteMessageBatchRequestEntry[] = messages
        .slice(i, i + MAX_RECEIVE)
        .map((m, j) => ({ Id: `m${j}`, ReceiptHandle: m.ReceiptHandle ?? '' }));
      // DeleteMessageBatch answers 200 with a per-entry Failed list: retry those once.
      for (let attempt = 0; attempt < 2 && entries.length > 0; attempt++) {
        try {
          const out = await sqs.send(
            new DeleteMessageBatchCommand({ QueueUrl: source.queueUrl, Entries: entries }),
          );
          stats.messagesDeleted += out.Successful?.length ?? 0;
          const failed = new Set((out.Failed ?? []).map((f) => f.Id));
          entries = entries.filter((e) => failed.has(e.Id));
        } catch (err) {
          if (attempt === 1) log(`${label} DeleteMessageBatch failed: ${describe(err)}`);
        }
      }
      if (entries.length > 0) {
        stats.deleteFailures += entries.length;
        log(`${label} ${entries.length} message(s) not deleted; they will be delivered again`);
      }
    }
  }

  return {
    eventSource: source,
    concurrency: options.concurrency,
    async start() {
      if (slots.length > 0 || !source.enabled) return;
      handlerModule = await loadHandlerModule(fn);
      stopping = false;
      windingDown = false;
      // A poller started again after stop() polls with a controller not yet aborted.
      if (receives.signal.aborted) receives = new AbortController();
      slots = Array.from({ length: options.concurrency }, (_, slot) => runSlot(slot));
    },
    async stop() {
      stopping = true;
      // A receive cut off as a message arrived leaves it hidden for the queue's visibility timeout
      // (nothing is lost: it comes back then). windDown() lets its receives end on their own.
      receives.abort();
      await Promise.all(slots);
      slots = [];
    },
    async windDown() {
      windingDown = true;
      stopping = true;
      await Promise.all(slots);
      slots = [];
    },
    stats: () => ({ ...stats }),
    busySlots: () => busy,
    activity: () => activity,
  };
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
