// The worker thread of one container (worker-container.ts): imports the handler module, builds the
// instance at its first invocation (the cold start), runs invocations posted to it, and relays what
// its thread counted (worker-relays.ts) often enough that a terminated worker loses little.
import { parentPort, workerData } from 'node:worker_threads';
import type { HandlerWiring } from '../lambdas/shared/aws-clients.ts';
import { type HandlerInstance, loadHandlerModule } from './handler-module.ts';
import { createLambdaContext } from './lambda-context.ts';
import { localRenderer } from './local-renderer.ts';
import { processMeters } from './process-meters.ts';
import type { FromWorker, ToWorker, WorkerData } from './worker-container.ts';
import { createRelays, takeAll } from './worker-relays.ts';

/** Relays go out at least this often while the worker lives (a timeout terminates it unannounced). */
const RELAY_EVERY_MS = 50;

const port = parentPort;
if (!port) throw new Error('handler-worker.ts runs only as a worker thread');
const data = workerData as WorkerData;
if (data.ledger) processMeters.ledger.enable();
const relays = createRelays();
const post = (message: FromWorker) => port.postMessage(message);
const relay = () => {
  const deltas = takeAll(relays);
  if (deltas) post({ type: 'relay', deltas });
};
setInterval(relay, RELAY_EVERY_MS).unref();

let instance: HandlerInstance | undefined;

/** This thread's meters, relayed to the main thread's; and for the render function, this worker's browser (it ends with the worker: its pipe to Chromium closes). */
function wiring(): HandlerWiring {
  const renderer = data.render ? localRenderer() : undefined;
  return renderer === undefined ? { meters: processMeters } : { meters: processMeters, renderer };
}
// Init: the module imported before any invocation (Lambda does not count it against the timeout).
const loaded = loadHandlerModule(data.fn);
loaded.then(
  () => post({ type: 'ready' }),
  (error: unknown) => post({ type: 'init-failed', error: describe(error) }),
);

port.on('message', async (message: ToWorker) => {
  try {
    if (!instance) {
      const { factory } = await loaded;
      instance = await factory(data.env, wiring());
    }
    const context = createLambdaContext(data.fn, message.deadline, message.stream, message.requestId);
    const value = await instance(message.event, context);
    let json: string | undefined;
    try {
      // The runtime serializes the response; what cannot be serialized is a function error.
      json = JSON.stringify(value);
    } catch (error) {
      relay();
      post({ type: 'unserializable', id: message.id, warm: true, reason: String(error) });
      return;
    }
    relay();
    post({ type: 'returned', id: message.id, warm: true, json });
  } catch (error) {
    relay();
    post({ type: 'threw', id: message.id, warm: instance !== undefined, error: describe(error) });
  }
});

function describe(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error)
    return { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) };
  return { name: 'Error', message: String(error) };
}
