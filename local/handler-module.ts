// A function's handler module: `createHandler(env)` returning the handler, and where its containers run.
import { pathToFileURL } from 'node:url';
import type { Context, SQSEvent } from 'aws-lambda';
import type { HandlerWiring } from '../lambdas/shared/aws-clients.ts';
import type { LocalFunction } from './stack-model.ts';

export type HandlerInstance = (event: SQSEvent, context: Context) => unknown;
/** `wiring`: the runtime's meters, its browser, and in this thread its transport (a worker's handler reaches the AWS over the wire). */
export type HandlerFactory = (
  env: Record<string, string>,
  wiring?: HandlerWiring,
) => HandlerInstance | Promise<HandlerInstance>;

/**
 * A module exporting `runInProcess = true` has its containers run in the runtime's own thread: a test
 * fixture that shares module state with the test (a recorder, an installed synthetic web, a crash
 * log). Its timeouts are only raced: the invocation runs on after its deadline.
 */
export const IN_PROCESS_EXPORT = 'runInProcess';

export interface HandlerModule {
  factory: HandlerFactory;
  inProcess: boolean;
}

/** Imports the handler module (once per thread, like Node's module cache) and checks its contract. */
export async function loadHandlerModule(
  fn: Pick<LocalFunction, 'handlerPath' | 'handlerModule' | 'logicalId'>,
): Promise<HandlerModule> {
  const mod: unknown = await import(pathToFileURL(fn.handlerPath).href);
  const get = (name: string): unknown =>
    typeof mod === 'object' && mod !== null ? Reflect.get(mod, name) : undefined;
  const createHandler = get('createHandler');
  if (typeof createHandler !== 'function') {
    throw new Error(`${fn.handlerModule} (function ${fn.logicalId}) does not export createHandler(env)`);
  }
  const factory: HandlerFactory = async (env, wiring) => {
    const instance: unknown = await createHandler(env, wiring);
    if (typeof instance !== 'function') {
      throw new Error(`${fn.handlerModule}: createHandler(env) did not return a handler function`);
    }
    return instance as HandlerInstance;
  };
  return { factory, inProcess: get(IN_PROCESS_EXPORT) === true };
}
