// The whole local AWS: emulators (or an endpoint), the provisioned stack, one poller per event source.
// Composed here in order; where it runs is aws-backend.ts, what the emulators are told of the stack
// emulator-wiring.ts, and how the pollers start, wind down and stop together poller-fleet.ts.
import { join } from 'node:path';
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { SQSClient, SQSClientConfig } from '@aws-sdk/client-sqs';
import { LOCAL_RUNTIME } from '../lambdas/shared/aws-call-ledger.ts';
import { FUNCTION_ENV, HANDLERS } from '../lambdas/shared/contracts.ts';
import { type Backend, openBackend, recordStack } from './aws-backend.ts';
import {
  type AwsClients,
  type ClientSettings,
  clientSettings,
  createClients,
  createSqsClient,
  destroyClients,
  dynamodbConfig,
  type Endpoints,
  endpointEnv,
  s3Config,
  sqsConfig,
} from './aws-clients.ts';
import type { TemplateInput } from './cfn-template.ts';
import { wireEmulators } from './emulator-wiring.ts';
import {
  createEventSourcePoller,
  type EventSourcePoller,
  type InvocationReport,
} from './event-source-poller.ts';
import type { LocalEventBus } from './eventbridge-server.ts';
import type { IdleSnapshot, WaitForIdleOptions } from './idle.ts';
import { localRenderer } from './local-renderer.ts';
import { PollerFleet, type RuntimeStats } from './poller-fleet.ts';
import { processMeters } from './process-meters.ts';
import { provisionStack } from './provision.ts';
import type { LocalScheduler } from './scheduler-server.ts';
import type { LocalFunction, ProvisionedStack } from './stack-model.ts';
import { sweepStrandedHosts } from './takeover.ts';

export { StateDirError } from './aws-backend.ts';
export type { RuntimeStats } from './poller-fleet.ts';

/** Slots per event source when neither the template (ScalingConfig) nor an override says. */
export const DEFAULT_CONCURRENCY = 2;

export interface LocalAwsOptions {
  /** The synthesized stack template (JSON); names and settings are taken only from it. */
  template: TemplateInput;
  stackName: string;
  /** An already-running endpoint (LocalStack...) for all services, or one per service; embedded emulators otherwise. */
  endpoint?: string | Endpoints;
  /** Embedded emulators only: S3 objects as files under this directory (nothing else persists). */
  s3Dir?: string;
  /**
   * Embedded emulators only: keep the whole local AWS here between processes: S3 objects as files
   * (`s3/`), DynamoDB in LevelDB (`dynamodb/`), queues and messages in SQLite (`sqs/`). Taken with a
   * lock file (`lock`, holding the pid); names are deterministic (the dir's own random instance id
   * unless given) and provisioning reuses what exists. See local/README.md.
   */
  stateDir?: string;
  /** Embedded emulators only: serve all services on this one 127.0.0.1 port (e.g. for `crawler local`). */
  port?: number;
  handlerEnvOverrides?: Record<string, string>;
  /** Slots per function logical id; wins over ScalingConfig.MaximumConcurrency. */
  concurrencyOverride?: Record<string, number>;
  defaultConcurrency?: number;
  instanceId?: string;
  rootDir?: string;
  clientSettings?: Partial<ClientSettings>;
  receiveWaitSeconds?: number;
  /**
   * Invoke as soon as the queue has nothing more to add, instead of waiting out the batching window
   * (poller option `eagerBatches`): for a local crawl, whose latency is all a user sees. `crawler
   * local` and the suites keep Lambda's window.
   */
  eagerBatches?: boolean;
  /**
   * Run the handlers in this thread, timeouts raced instead of enforced (poller option `inProcess`):
   * a local crawl starts faster and holds one isolate instead of one per slot. `crawler local` and
   * the suites keep worker containers, cut off at their deadlines as on Lambda.
   */
  inProcessHandlers?: boolean;
  /**
   * This process's calls to the embedded emulators skip the sockets (local/in-process-http.ts): the
   * runtime's own, the caller's (`clients`, `clientConfig`) and, with `inProcessHandlers`, the
   * handlers'. For `crawler crawl`; `crawler local` and the suites keep the wire. Not with `endpoint`.
   */
  inProcessAws?: boolean;
  log?: (line: string) => void;
  onInvocation?: (report: InvocationReport) => void;
  /** Told when the state dir's lock was left by a process that is gone and is taken over. */
  onStaleLock?: (message: string) => void;
}

/** Every event put on the embedded EventBridge, one envelope a line, in the state directory. */
export const EVENTS_LOG = 'events.jsonl';
/** The local Scheduler's schedules (`crawler schedule add`), kept across restarts, in the state directory. */
export const SCHEDULES_FILE = 'schedules.json';
/** The local SSM Parameter Store's parameters (a crawl's credentials), in the state directory, mode 0600. */
export const PARAMETERS_FILE = 'parameters.json';

export interface LocalAws {
  endpoints: Endpoints;
  /** The embedded EventBridge (absent with an endpoint): `addLogFile` for `crawler crawl --events FILE`. */
  eventBus?: LocalEventBus;
  /** The embedded EventBridge Scheduler (absent with an endpoint): `crawler local` starts its clock. */
  scheduler?: LocalScheduler;
  /** The persistent state directory (absolute), when started with one. */
  stateDir?: string;
  clientConfig: { sqs: SQSClientConfig; s3: S3ClientConfig; dynamodb: DynamoDBClientConfig };
  /** Clients for the caller's own use (submitting tasks, reading results); closed by stop(). */
  clients: AwsClients;
  stack: ProvisionedStack;
  outputs: Record<string, string>;
  /** The full environment each function's handlers get, by function logical id. */
  functionEnv: Record<string, Record<string, string>>;
  pollers: EventSourcePoller[];
  /**
   * Starts every poller. `first`: function logical ids whose pollers start alone, until their queues
   * are empty (or `firstTimeoutMs`, default 60 s, passed), before the others start; all start at
   * once when those queues hold nothing to begin with.
   */
  start(options?: { first?: readonly string[]; firstTimeoutMs?: number }): Promise<void>;
  /**
   * Stops early (Ctrl-C) without losing what was done: the pollers of every function but `drain`
   * stop taking messages, and their invocations in flight see their deadline arrive now, so a fetch
   * batch starts no request and hands its hosts back; once those have settled, the `drain`
   * functions keep going until their queues are empty (or `drainTimeoutMs`, default 60 s, passed),
   * so what the others sent is finalized; then they stop too. The AWS stays up.
   */
  windDown(options?: { drain?: readonly string[]; drainTimeoutMs?: number }): Promise<void>;
  waitForIdle(options?: WaitForIdleOptions): Promise<IdleSnapshot>;
  stats(): RuntimeStats;
  stop(): Promise<void>;
}

export async function startLocalAws(options: LocalAwsOptions): Promise<LocalAws> {
  const baseSettings = clientSettings(options.clientSettings);
  const backend = await openBackend(options);
  const { emulators, endpoints, layout } = backend;
  const settings =
    options.inProcessAws && emulators ? { ...baseSettings, transport: emulators.inProcess } : baseSettings;
  // AWS's own work (CloudFormation's provisioning, the idle checks) is no principal of the stack's.
  const clients = createClients(endpoints, settings, { principal: LOCAL_RUNTIME });
  const principals = new PrincipalSqsClients(endpoints, settings);
  try {
    const stack = await provisionStack(options.template, clients, {
      stackName: options.stackName,
      region: settings.region,
      ...(backend.instanceId ? { instanceId: backend.instanceId } : {}),
      ...(options.rootDir ? { rootDir: options.rootDir } : {}),
    });
    await recordStack(backend, stack);
    if (emulators) {
      await wireEmulators(emulators, stack, {
        region: settings.region,
        sqs: clients.sqs,
        sqsAs: (roleArn) => principals.forRole(roleArn),
        ...(layout
          ? {
              files: {
                events: join(layout.dir, EVENTS_LOG),
                schedules: join(layout.dir, SCHEDULES_FILE),
                parameters: join(layout.dir, PARAMETERS_FILE),
              },
            }
          : {}),
        ...(options.log ? { log: options.log } : {}),
      });
    }
    const functionEnv = functionEnvironments(stack, endpoints, settings, options.handlerEnvOverrides);
    // One browser for the handlers in this thread (it starts with the first render, if any).
    const renderer = localRenderer();
    const pollers = createPollers({ stack, functionEnv, settings, renderer, principals, options });
    return runtime({ backend, settings, clients, principals, stack, functionEnv, renderer, pollers });
  } catch (err) {
    destroyClients(clients);
    principals.destroy();
    await emulators?.stop().catch(() => {});
    await backend.lock?.release();
    throw err;
  }
}

/**
 * SQS clients that call as a principal of the stack, destroyed together at stop: Lambda polls an
 * event source with the function's role (its pollers' calls are the function's), and Scheduler
 * sends as the schedule's role.
 */
class PrincipalSqsClients {
  readonly #endpoints: Endpoints;
  readonly #settings: ClientSettings;
  /** Every client made, in order. */
  readonly #all: SQSClient[] = [];
  readonly #byRole = new Map<string, SQSClient>();

  constructor(endpoints: Endpoints, settings: ClientSettings) {
    this.#endpoints = endpoints;
    this.#settings = settings;
  }

  forFunction(fn: LocalFunction): SQSClient {
    const sqs = createSqsClient(this.#endpoints, this.#settings, { principal: fn.functionName });
    this.#all.push(sqs);
    return sqs;
  }

  forRole(roleArn: string): SQSClient {
    let client = this.#byRole.get(roleArn);
    if (client === undefined) {
      client = createSqsClient(this.#endpoints, this.#settings, {
        principal: roleArn.slice(roleArn.lastIndexOf('/') + 1),
      });
      this.#byRole.set(roleArn, client);
      this.#all.push(client);
    }
    return client;
  }

  destroy(): void {
    for (const sqs of this.#all) sqs.destroy();
  }
}

/** The full environment each function's handlers get, by function logical id. */
function functionEnvironments(
  stack: ProvisionedStack,
  endpoints: Endpoints,
  settings: ClientSettings,
  overrides: Record<string, string> | undefined,
): Record<string, Record<string, string>> {
  const functionEnv: Record<string, Record<string, string>> = {};
  for (const fn of Object.values(stack.functions)) {
    const { [FUNCTION_ENV.eventBusName]: bus, ...environment } = fn.environment;
    functionEnv[fn.logicalId] = {
      ...lambdaReservedEnv(fn),
      ...environment,
      // No EventBridge among the endpoints: no events (a publish would go nowhere).
      ...(bus === undefined || endpoints.events === undefined ? {} : { [FUNCTION_ENV.eventBusName]: bus }),
      ...endpointEnv(endpoints, settings),
      ...overrides,
    };
  }
  return functionEnv;
}

interface PollerParts {
  stack: ProvisionedStack;
  functionEnv: Record<string, Record<string, string>>;
  settings: ClientSettings;
  renderer: ReturnType<typeof localRenderer>;
  principals: PrincipalSqsClients;
  options: LocalAwsOptions;
}

/** One poller per event source of the stack, polling as its function. */
function createPollers({
  stack,
  functionEnv,
  settings,
  renderer,
  principals,
  options,
}: PollerParts): EventSourcePoller[] {
  return Object.values(stack.eventSources).flatMap((source) => {
    const fn = stack.functions[source.functionLogicalId];
    const env = functionEnv[source.functionLogicalId];
    if (!fn || !env) return [];
    return [
      createEventSourcePoller({
        sqs: principals.forFunction(fn),
        eventSource: source,
        fn,
        env,
        region: settings.region,
        concurrency: slotsFor(fn, source.maximumConcurrency, options),
        ...(options.receiveWaitSeconds !== undefined
          ? { receiveWaitSeconds: options.receiveWaitSeconds }
          : {}),
        ...(options.eagerBatches ? { eagerBatches: true } : {}),
        ...(options.inProcessHandlers ? { inProcess: true } : {}),
        // Handlers in this thread count into the process's meters (a worker's, into its own, relayed).
        wiring: {
          meters: processMeters,
          ...(options.inProcessHandlers && settings.transport ? { awsTransport: settings.transport } : {}),
          ...(options.inProcessHandlers && fn.handlerModule === HANDLERS.render && renderer
            ? { renderer }
            : {}),
        },
        // A worker's handler starts its own browser (objects do not cross threads).
        ...(fn.handlerModule === HANDLERS.render && renderer ? { render: true } : {}),
        ...(options.log ? { log: options.log } : {}),
        ...(options.onInvocation ? { onInvocation: options.onInvocation } : {}),
      }),
    ];
  });
}

interface RuntimeParts {
  backend: Backend;
  settings: ClientSettings;
  clients: AwsClients;
  principals: PrincipalSqsClients;
  stack: ProvisionedStack;
  functionEnv: Record<string, Record<string, string>>;
  renderer: ReturnType<typeof localRenderer>;
  pollers: EventSourcePoller[];
}

/** The started runtime as its caller holds it. */
function runtime(parts: RuntimeParts): LocalAws {
  const { backend, settings, clients, stack, renderer, pollers } = parts;
  const { emulators, endpoints, layout, lock } = backend;
  const fleet = new PollerFleet(pollers, clients.sqs, stack);
  let takenOverAt = backend.takenOverAt;
  let stopped = false;
  return {
    endpoints,
    ...(emulators ? { eventBus: emulators.eventBus, scheduler: emulators.scheduler } : {}),
    ...(layout ? { stateDir: layout.dir } : {}),
    clientConfig: {
      sqs: sqsConfig(endpoints, settings),
      s3: s3Config(endpoints, settings),
      dynamodb: dynamodbConfig(endpoints, settings),
    },
    clients,
    stack,
    outputs: stack.outputs,
    functionEnv: parts.functionEnv,
    pollers,
    async start(startOptions = {}) {
      await fleet.startFirst(startOptions.first ?? [], startOptions.firstTimeoutMs ?? 60_000);
      if (takenOverAt !== undefined) {
        // The first time this process serves the state: hosts that a process before it claimed and
        // never sent a visit get one (read-only commands open the state too, and send nothing).
        await sweepStrandedHosts(clients, stack.outputs, takenOverAt);
        takenOverAt = undefined;
      }
      await fleet.startAll();
    },
    windDown: (windOptions = {}) =>
      fleet.windDown(windOptions.drain ?? [], windOptions.drainTimeoutMs ?? 60_000),
    waitForIdle: (waitOptions) => fleet.waitForIdle(waitOptions),
    stats: () => fleet.stats(),
    async stop() {
      if (stopped) return;
      stopped = true;
      await fleet.stop();
      await renderer?.close();
      destroyClients(clients);
      parts.principals.destroy();
      try {
        await emulators?.stop();
      } finally {
        await lock?.release();
      }
    },
  };
}

function slotsFor(fn: LocalFunction, fromTemplate: number | undefined, options: LocalAwsOptions): number {
  const override = options.concurrencyOverride?.[fn.logicalId];
  if (override !== undefined) return override;
  const wanted = fromTemplate ?? options.defaultConcurrency ?? DEFAULT_CONCURRENCY;
  // Reserved concurrency caps the function as a whole, as on Lambda.
  return fn.reservedConcurrency === undefined ? wanted : Math.min(wanted, fn.reservedConcurrency);
}

// What Lambda itself puts in every function's environment.
function lambdaReservedEnv(fn: LocalFunction): Record<string, string> {
  return {
    AWS_LAMBDA_FUNCTION_NAME: fn.functionName,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memorySizeMb),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${fn.functionName}`,
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  };
}
