// The whole local AWS: emulators (or an endpoint), the provisioned stack, one poller per event source.
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { SendMessageCommand, type SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { LOCAL_RUNTIME } from '../lambdas/shared/aws-call-ledger.ts';
import { FUNCTION_ENV, HANDLERS } from '../lambdas/shared/contracts.ts';
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
  endpointsFromUrl,
  s3Config,
  sqsConfig,
} from './aws-clients.ts';
import type { TemplateInput } from './cfn-template.ts';
import { type Emulators, startEmulators } from './emulators.ts';
import {
  createEventSourcePoller,
  type EventSourcePoller,
  emptyPollerStats,
  type InvocationReport,
  type PollerStats,
} from './event-source-poller.ts';
import type { LocalEventBus } from './eventbridge-server.ts';
import { depths, holdsNothing, type IdleSnapshot, type WaitForIdleOptions, waitForIdle } from './idle.ts';
import { localRenderer } from './local-renderer.ts';
import { processMeters } from './process-meters.ts';
import { provisionStack } from './provision.ts';
import type { LocalScheduler } from './scheduler-server.ts';
import type { LocalFunction, ProvisionedStack } from './stack-model.ts';
import {
  readStateMarker,
  STORAGE_OUTPUTS,
  type StateMarker,
  stateInstanceId,
  stateLayout,
} from './state-dir.ts';
import { acquireStateLock, type StateLock } from './state-lock.ts';
import { sweepStrandedHosts } from './takeover.ts';

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

export interface RuntimeStats {
  total: PollerStats;
  byFunction: Record<string, PollerStats>;
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
  let settings = clientSettings(options.clientSettings);
  let emulators: Emulators | undefined;
  let endpoints: Endpoints;
  let lock: StateLock | undefined;
  /** When this process took the state dir over from a killed one: older claims have no sender left. */
  let takenOverAt: number | undefined;
  const layout = options.stateDir ? stateLayout(options.stateDir) : undefined;
  // With a state dir: its own random id (state-dir.ts), read once the lock is held.
  let instanceId = options.instanceId;
  if (layout && options.endpoint !== undefined) {
    throw new Error('stateDir applies to the embedded emulators only, not with an endpoint');
  }
  if (layout && options.s3Dir) throw new Error('give stateDir or s3Dir, not both');
  if (options.inProcessAws && options.endpoint !== undefined) {
    throw new Error('inProcessAws applies to the embedded emulators only, not with an endpoint');
  }
  if (layout) {
    await makeStateDir(layout.dir);
    let stale = false;
    lock = await acquireStateLock(layout.dir, {
      onStaleLock: (line) => {
        stale = true;
        options.onStaleLock?.(line);
      },
    });
    // Its holder was killed (a clean stop releases the lock): it may have left claims with no sender.
    if (stale) takenOverAt = Date.now();
    try {
      await ignoreInGit(layout.dir);
      instanceId ??= await stateInstanceId(layout.dir);
      emulators = await startEmulators({
        s3Dir: layout.s3Dir,
        sqsDir: layout.sqsDir,
        dynamodbDir: layout.dynamodbDir,
        ...(options.port !== undefined ? { port: options.port } : {}),
      });
    } catch (err) {
      await lock.release();
      throw err;
    }
    endpoints = emulators.endpoints;
  } else if (options.endpoint === undefined) {
    emulators = await startEmulators({
      ...(options.s3Dir ? { s3Dir: options.s3Dir } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
    });
    endpoints = emulators.endpoints;
  } else {
    endpoints = typeof options.endpoint === 'string' ? endpointsFromUrl(options.endpoint) : options.endpoint;
  }
  if (options.inProcessAws && emulators) settings = { ...settings, transport: emulators.inProcess };
  // AWS's own work (CloudFormation's provisioning, the idle checks) is no principal of the stack's.
  const clients = createClients(endpoints, settings, { principal: LOCAL_RUNTIME });
  // Lambda polls an event source with the function's role: its pollers' calls are the function's.
  const pollerClients: SQSClient[] = [];
  const schedulerClients = new Map<string, SQSClient>();
  const schedulerClient = (roleArn: string): SQSClient => {
    let client = schedulerClients.get(roleArn);
    if (client === undefined) {
      client = createSqsClient(endpoints, settings, {
        principal: roleArn.slice(roleArn.lastIndexOf('/') + 1),
      });
      schedulerClients.set(roleArn, client);
      pollerClients.push(client);
    }
    return client;
  };
  try {
    const stack = await provisionStack(options.template, clients, {
      stackName: options.stackName,
      region: settings.region,
      ...(instanceId ? { instanceId } : {}),
      ...(options.rootDir ? { rootDir: options.rootDir } : {}),
    });
    if (layout && lock) {
      await writeStateMarker(layout.dir, stack);
      // Other processes (read-only CLI commands) can now read through our emulators.
      await lock.publish({ endpoints, stackName: stack.stackName, instanceId: stack.instanceId });
    }
    if (emulators) {
      // The stack's buses: `default` and whichever its functions publish to.
      const buses = new Set(['default', ...stack.eventRules.map((rule) => rule.busName)]);
      for (const fn of Object.values(stack.functions)) {
        const bus = fn.environment[FUNCTION_ENV.eventBusName];
        if (bus !== undefined) buses.add(bus);
      }
      emulators.eventBus.configure({
        region: settings.region,
        accountId: stack.accountId,
        buses: [...buses],
        rules: stack.eventRules,
        deliver: async (queueUrl, body) => {
          await clients.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
        },
        ...(options.log
          ? {
              onDeliveryError: (where, error) =>
                options.log?.(`event not delivered to ${where}: ${String(error)}`),
            }
          : {}),
      });
      if (layout) emulators.eventBus.addLogFile(join(layout.dir, EVENTS_LOG));
      const queueUrls = new Map(
        Object.values(stack.resources).flatMap((r) =>
          r.type === 'AWS::SQS::Queue' && r.arn && r.url ? [[r.arn, r.url] as const] : [],
        ),
      );
      await emulators.scheduler.configure({
        region: settings.region,
        accountId: stack.accountId,
        groups: [
          'default',
          ...Object.values(stack.resources).flatMap((r) =>
            r.type === 'AWS::Scheduler::ScheduleGroup' ? [r.physicalId] : [],
          ),
        ],
        queueUrlOf: (arn) => queueUrls.get(arn),
        // Scheduler sends as the schedule's role: its calls are that role's.
        deliver: async (queueUrl, body, role) => {
          await schedulerClient(role).send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
        },
        ...(layout ? { file: join(layout.dir, SCHEDULES_FILE) } : {}),
        ...(options.log
          ? {
              onDeliveryError: (schedule, error) =>
                options.log?.(`schedule ${schedule} not sent: ${String(error)}`),
            }
          : {}),
      });
      await emulators.parameters.configure({
        region: settings.region,
        accountId: stack.accountId,
        ...(layout ? { file: join(layout.dir, PARAMETERS_FILE) } : {}),
      });
    }
    const functionEnv: Record<string, Record<string, string>> = {};
    for (const fn of Object.values(stack.functions)) {
      const { [FUNCTION_ENV.eventBusName]: bus, ...environment } = fn.environment;
      functionEnv[fn.logicalId] = {
        ...lambdaReservedEnv(fn),
        ...environment,
        // No EventBridge among the endpoints: no events (a publish would go nowhere).
        ...(bus === undefined || endpoints.events === undefined ? {} : { [FUNCTION_ENV.eventBusName]: bus }),
        ...endpointEnv(endpoints, settings),
        ...options.handlerEnvOverrides,
      };
    }
    // One browser for the handlers in this thread (it starts with the first render, if any).
    const renderer = localRenderer();
    const pollers = Object.values(stack.eventSources).flatMap((source) => {
      const fn = stack.functions[source.functionLogicalId];
      const env = functionEnv[source.functionLogicalId];
      if (!fn || !env) return [];
      const sqs = createSqsClient(endpoints, settings, { principal: fn.functionName });
      pollerClients.push(sqs);
      return [
        createEventSourcePoller({
          sqs,
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
    const queues = Object.fromEntries(
      Object.entries(stack.resources).flatMap(([id, r]) =>
        r.type === 'AWS::SQS::Queue' && r.url ? [[id, r.url]] : [],
      ),
    );
    const gating = pollers.filter((p) => p.eventSource.enabled).map((p) => p.eventSource.queueLogicalId);
    let stopped = false;
    /** These pollers' queues, by logical id. */
    const queuesOf = (subset: EventSourcePoller[]): Record<string, string> =>
      Object.fromEntries(
        subset.map((p) => [p.eventSource.queueLogicalId, queues[p.eventSource.queueLogicalId] ?? '']),
      );
    /** Whether these pollers' queues hold no message: visible, in flight or delayed. */
    const empty = async (subset: EventSourcePoller[]): Promise<boolean> =>
      Object.values(await depths({ sqs: clients.sqs, queues: queuesOf(subset) })).every(holdsNothing);
    /** Resolves once these pollers' queues are empty and they hold nothing, or `timeoutMs` passed. */
    const drained = async (subset: EventSourcePoller[], timeoutMs: number): Promise<void> => {
      if (subset.length === 0) return;
      await waitForIdle(
        {
          sqs: clients.sqs,
          queues: queuesOf(subset),
          gating: subset.map((p) => p.eventSource.queueLogicalId),
          busySlots: () => sum(subset.map((p) => p.busySlots())),
          activity: () => sum(subset.map((p) => p.activity())),
        },
        { intervalMs: 100, timeoutMs },
      ).catch(() => {});
    };
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
      functionEnv,
      pollers,
      async start(startOptions = {}) {
        const first = new Set(startOptions.first ?? []);
        const leading = pollers.filter((p) => first.has(p.eventSource.functionLogicalId));
        // Nothing waiting for them (a fresh state): they need no head start, nor its idle checks.
        if (leading.length > 0 && !(await empty(leading))) {
          await Promise.all(leading.map((p) => p.start()));
          // Still not empty (a result that keeps failing): the rest start anyway; nothing waits on it.
          await drained(leading, startOptions.firstTimeoutMs ?? 60_000);
        }
        if (takenOverAt !== undefined) {
          // The first time this process serves the state: hosts that a process before it claimed and
          // never sent a visit get one (read-only commands open the state too, and send nothing).
          await sweepStrandedHosts(clients, stack.outputs, takenOverAt);
          takenOverAt = undefined;
        }
        await Promise.all(pollers.map((p) => p.start()));
      },
      async windDown(windOptions = {}) {
        const keep = new Set(windOptions.drain ?? []);
        const kept = pollers.filter((p) => keep.has(p.eventSource.functionLogicalId));
        await Promise.all(pollers.filter((p) => !kept.includes(p)).map((p) => p.windDown()));
        await drained(kept, windOptions.drainTimeoutMs ?? 60_000);
        await Promise.all(kept.map((p) => p.stop()));
      },
      waitForIdle: (waitOptions) =>
        waitForIdle(
          {
            sqs: clients.sqs,
            queues,
            gating,
            busySlots: () => sum(pollers.map((p) => p.busySlots())),
            activity: () => sum(pollers.map((p) => p.activity())),
          },
          waitOptions,
        ),
      stats: () => collectStats(pollers),
      async stop() {
        if (stopped) return;
        stopped = true;
        await Promise.all(pollers.map((p) => p.stop()));
        await renderer?.close();
        destroyClients(clients);
        for (const sqs of pollerClients) sqs.destroy();
        try {
          await emulators?.stop();
        } finally {
          await lock?.release();
        }
      },
    };
  } catch (err) {
    destroyClients(clients);
    for (const sqs of pollerClients) sqs.destroy();
    await emulators?.stop().catch(() => {});
    await lock?.release();
    throw err;
  }
}

/** A state directory that cannot be made (a path under /proc, a file in the way, no permission). */
export class StateDirError extends Error {
  constructor(dir: string, why: string) {
    super(
      `${dir} cannot be made the state directory (${why}); give a directory that can be created and written`,
    );
    this.name = 'StateDirError';
  }
}

/**
 * `mkdir -p` one level at a time: Node's recursive mkdir never settles on a path it cannot create
 * under /proc (it retries the parent, which exists, forever), so it would hang the start.
 */
async function makeStateDir(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    const info = await stat(at).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw new StateDirError(dir, `${at}: ${error.code ?? error.message}`);
    });
    if (info) {
      if (!info.isDirectory()) throw new StateDirError(dir, `${at} is not a directory`);
      break;
    }
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const at of missing) {
    await mkdir(at).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw new StateDirError(dir, `${at}: ${error.code ?? error.message}`);
    });
  }
}

async function writeStateMarker(dir: string, stack: ProvisionedStack): Promise<void> {
  const previous = readStateMarker(dir);
  const storage = Object.fromEntries(STORAGE_OUTPUTS.map((name) => [name, stack.outputs[name] ?? '']));
  if (
    previous?.stackName === stack.stackName &&
    previous.instanceId === stack.instanceId &&
    JSON.stringify(previous.storage) === JSON.stringify(storage)
  )
    return;
  const marker: StateMarker = {
    format: 1,
    stackName: stack.stackName,
    instanceId: stack.instanceId,
    createdAt: previous?.createdAt ?? new Date().toISOString(),
    storage,
  };
  const file = stateLayout(dir).markerFile;
  await writeFile(`${file}.tmp`, `${JSON.stringify(marker, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
}

// A state dir inside a repository (the default `.crawler` in cwd) should not show up in git status.
async function ignoreInGit(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, '.gitignore'), '*\n', { flag: 'wx' }).catch((err: unknown) => {
    if (!(err instanceof Error && Reflect.get(err, 'code') === 'EEXIST')) throw err;
  });
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

function collectStats(pollers: EventSourcePoller[]): RuntimeStats {
  const byFunction: Record<string, PollerStats> = {};
  let total: PollerStats | undefined;
  for (const poller of pollers) {
    const stats = poller.stats();
    const id = poller.eventSource.functionLogicalId;
    byFunction[id] = byFunction[id] ? addStats(byFunction[id], stats) : stats;
    total = total ? addStats(total, stats) : stats;
  }
  return { total: total ?? emptyPollerStats(), byFunction };
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
