// A warm "container" of a function: one handler instance, one invocation at a time. In a worker
// thread (worker-container.ts) a timeout terminates it, cutting off whatever the invocation would
// still do, as Lambda does; in process (for test fixtures that share state with the test) the
// timeout is only raced and the invocation runs on.
import type { Context, SQSEvent } from 'aws-lambda';
import type { HandlerWiring } from '../lambdas/shared/aws-clients.ts';
import type { HandlerFactory, HandlerInstance } from './handler-module.ts';

/** What one invocation came to, as the runtime settles it. */
export type RawOutcome =
  | { kind: 'returned'; value: unknown }
  | { kind: 'threw'; error: unknown }
  | { kind: 'timeout' }
  /** The response could not be serialized (Lambda: a function error). */
  | { kind: 'unserializable'; reason: string };

export interface Container {
  /**
   * Lambda's Init phase: the module imported (a new worker started) before the invocation's clock
   * starts, as Lambda does not count it against the function timeout. Rejects if it fails.
   */
  init(): Promise<void>;
  /** Runs one invocation until it settles or `deadline` (epoch ms) passes; never rejects. */
  invoke(
    event: SQSEvent,
    context: Context,
    deadline: number,
  ): Promise<{ raw: RawOutcome; coldStart: boolean }>;
  /** Ends the container (a worker is terminated). */
  dispose(): Promise<void>;
}

/** In this thread: the timeout is raced, not enforced (the handler's promise runs on). */
export function inProcessContainer(
  factory: HandlerFactory,
  env: Record<string, string>,
  wiring?: HandlerWiring,
): Container {
  let instance: HandlerInstance | undefined;
  return {
    // The module was imported once for the whole process (loadHandlerModule).
    init: async () => {},
    async invoke(event, context, deadline) {
      let coldStart = false;
      const call = async (): Promise<unknown> => {
        if (!instance) {
          coldStart = true;
          instance = await factory({ ...env }, wiring);
        }
        return instance(event, context);
      };
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<RawOutcome>((resolve) => {
        timer = setTimeout(() => resolve({ kind: 'timeout' }), Math.max(0, deadline - Date.now()));
      });
      const raw = await Promise.race<RawOutcome>([
        call().then(
          (value): RawOutcome => ({ kind: 'returned', value }),
          (error: unknown): RawOutcome => ({ kind: 'threw', error }),
        ),
        timeout,
      ]);
      clearTimeout(timer);
      return { raw, coldStart };
    },
    async dispose() {
      instance = undefined;
    },
  };
}
