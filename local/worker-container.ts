// A container in a worker thread: started at its first invocation (the cold start), kept warm between
// invocations, and terminated at an invocation's deadline, so nothing the invocation would still do
// (a send, a PUT) happens, as when Lambda stops a timed-out function. The next invocation starts a
// new worker. What the worker counts reaches this thread through the relays (worker-relays.ts).
import { Worker } from 'node:worker_threads';
import type { Context, SQSEvent } from 'aws-lambda';
import type { Container, RawOutcome } from './container.ts';
import { processMeters } from './process-meters.ts';
import type { LocalFunction } from './stack-model.ts';
import { absorbAll, createRelays } from './worker-relays.ts';

export interface WorkerData {
  fn: LocalFunction;
  env: Record<string, string>;
  /** The IAM ledger records in the worker too when it does on the main thread (a test enabled it). */
  ledger: boolean;
  /** The handler gets a browser of its own (local/local-renderer.ts). */
  render: boolean;
}

export interface ToWorker {
  id: number;
  event: SQSEvent;
  deadline: number;
  stream: string;
  requestId: string;
}

export type FromWorker =
  | { type: 'relay'; deltas: Record<string, unknown> }
  /** The handler module is imported (Init): invocations may come. */
  | { type: 'ready' }
  | { type: 'init-failed'; error: { name: string; message: string; stack?: string } }
  /** `warm`: the worker holds a handler instance now (its createHandler succeeded). */
  | { type: 'returned'; id: number; warm: boolean; json: string | undefined }
  | { type: 'unserializable'; id: number; warm: boolean; reason: string }
  | { type: 'threw'; id: number; warm: boolean; error: { name: string; message: string; stack?: string } };

const WORKER_URL = new URL('./handler-worker.ts', import.meta.url);
/** One set per thread: every worker's counts are absorbed into this thread's tallies. */
const relays = createRelays();

export function workerContainer(fn: LocalFunction, env: Record<string, string>, render = false): Container {
  return new WorkerContainer(fn, env, render);
}

/** One function's container: at most one worker at a time, one invocation at a time in it. */
class WorkerContainer implements Container {
  readonly #fn: LocalFunction;
  readonly #env: Record<string, string>;
  readonly #render: boolean;
  #worker: Worker | undefined;
  /** Whether the worker holds a handler instance (its createHandler succeeded). */
  #warm = false;
  #sequence = 0;
  #settle: ((raw: RawOutcome) => void) | undefined;
  #pendingId = 0;
  /** The current worker's Init: resolves once its module is imported. */
  #ready: Promise<void> | undefined;

  constructor(fn: LocalFunction, env: Record<string, string>, render: boolean) {
    this.#fn = fn;
    this.#env = env;
    this.#render = render;
  }

  async init(): Promise<void> {
    if (!this.#worker) this.#worker = this.#start();
    try {
      await this.#ready;
    } catch (error) {
      // A worker whose Init failed is gone: the next batch starts another.
      await this.#stop();
      throw error;
    }
  }

  async invoke(
    event: SQSEvent,
    context: Context,
    deadline: number,
  ): Promise<{ raw: RawOutcome; coldStart: boolean }> {
    const coldStart = !this.#warm;
    this.#worker ??= this.#start();
    const current = this.#worker;
    const id = ++this.#sequence;
    this.#pendingId = id;
    let timer: NodeJS.Timeout | undefined;
    const raw = await new Promise<RawOutcome>((resolve) => {
      this.#settle = resolve;
      timer = setTimeout(() => resolve({ kind: 'timeout' }), Math.max(0, deadline - Date.now()));
      const message: ToWorker = {
        id,
        event,
        deadline,
        stream: context.logStreamName,
        requestId: context.awsRequestId,
      };
      current.postMessage(message);
    });
    clearTimeout(timer);
    this.#settle = undefined;
    // Past its deadline the invocation is cut off, whatever it was doing.
    if (raw.kind === 'timeout' || this.#worker !== current) {
      if (this.#worker === current) await this.#stop();
      else await current.terminate();
    }
    return { raw, coldStart };
  }

  dispose(): Promise<void> {
    return this.#stop();
  }

  async #stop(): Promise<void> {
    const ending = this.#worker;
    this.#worker = undefined;
    this.#ready = undefined;
    this.#warm = false;
    await ending?.terminate();
  }

  #start(): Worker {
    const started = new Worker(WORKER_URL, {
      workerData: {
        fn: this.#fn,
        env: this.#env,
        ledger: processMeters.ledger.enabled,
        render: this.#render,
      } satisfies WorkerData,
    });
    let initDone: (error?: Error) => void = () => {};
    this.#ready = new Promise<void>((resolve, reject) => {
      initDone = (error) => (error ? reject(error) : resolve());
    });
    this.#ready.catch(() => {});
    started.on('message', (message: FromWorker) => this.#receive(message, initDone));
    // An uncaught exception ends the worker (as it ends Lambda's runtime process): the invocation
    // fails and the next one is a cold start.
    started.on('error', (error) => {
      if (this.#worker === started) this.#worker = undefined;
      initDone(error);
      this.#settle?.({ kind: 'threw', error });
    });
    started.on('exit', (code) => {
      if (this.#worker === started) this.#worker = undefined;
      const error = new Error(`Runtime exited with status ${code}`);
      initDone(error);
      this.#settle?.({ kind: 'threw', error });
    });
    return started;
  }

  /** A message from the worker: counts relayed, its Init's end, or the pending invocation's outcome. */
  #receive(message: FromWorker, initDone: (error?: Error) => void): void {
    if (message.type === 'relay') {
      absorbAll(relays, message.deltas);
      return;
    }
    if (message.type === 'ready' || message.type === 'init-failed') {
      initDone(message.type === 'ready' ? undefined : rebuild(message.error));
      return;
    }
    if (message.id !== this.#pendingId || !this.#settle) return;
    this.#warm = message.warm;
    if (message.type === 'threw') {
      this.#settle({ kind: 'threw', error: rebuild(message.error) });
      return;
    }
    if (message.type === 'unserializable')
      this.#settle({
        kind: 'unserializable',
        reason: `response is not JSON-serializable: ${message.reason}`,
      });
    else
      this.#settle({
        kind: 'returned',
        value: message.json === undefined ? undefined : JSON.parse(message.json),
      });
  }
}

function rebuild(described: { name: string; message: string; stack?: string }): Error {
  const error = new Error(described.message);
  error.name = described.name;
  if (described.stack) error.stack = described.stack;
  return error;
}
