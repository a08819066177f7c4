// The embedded AWS: fauxqs (SQS + S3), dynalite (DynamoDB), a PutEvents bus (EventBridge) and a
// Scheduler (local/scheduler-server.ts) on loopback.

import type { AwsTransport } from '../lambdas/shared/aws-clients.ts';
import type { Endpoints } from './aws-clients.ts';
import { startDynaliteServer } from './dynalite-server.ts';
import { startEndpointRouter } from './endpoint-router.ts';
import { LocalEventBus, startEventBridgeServer } from './eventbridge-server.ts';
import { type RunningServer, startFauxqsServer } from './fauxqs-server.ts';
import { inProcessTransport } from './in-process-http.ts';
import { LocalScheduler, startSchedulerServer } from './scheduler-server.ts';
import { LocalParameterStore, startSsmServer } from './ssm-server.ts';

export interface Emulators {
  endpoints: Endpoints;
  /** SDK client config that reaches these emulators in this thread: no socket, no signature. */
  inProcess: AwsTransport;
  /** The EventBridge behind `endpoints.events`: its rules and logs are set once the stack exists. */
  eventBus: LocalEventBus;
  /** The EventBridge Scheduler behind `endpoints.scheduler`: configured once the stack exists. */
  scheduler: LocalScheduler;
  /** The SSM Parameter Store behind `endpoints.ssm` (a crawl's credentials). */
  parameters: LocalParameterStore;
  stop(): Promise<void>;
}

export interface EmulatorOptions {
  /** Keep S3 objects as plain files here (inspectable, survive restarts); in-memory otherwise. */
  s3Dir?: string;
  /** Keep queues and their messages (DLQs included) in SQLite here; in-memory otherwise. */
  sqsDir?: string;
  /** Keep DynamoDB tables and items in LevelDB here; in-memory otherwise. */
  dynamodbDir?: string;
  /**
   * Serve all services on this one 127.0.0.1 port (0 = any free one), like LocalStack. Without it each
   * emulator gets its own free port and the endpoints differ per service.
   */
  port?: number;
}

export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const started: RunningServer[] = [];
  try {
    const fauxqs = await startFauxqsServer({
      ...(options.s3Dir ? { s3Dir: options.s3Dir } : {}),
      ...(options.sqsDir ? { sqsDir: options.sqsDir } : {}),
    });
    started.push(fauxqs);
    const dynamodb = await startDynaliteServer(options.dynamodbDir ? { path: options.dynamodbDir } : {});
    started.push(dynamodb);
    const eventBus = new LocalEventBus();
    const events = await startEventBridgeServer(eventBus);
    started.push(events);
    const scheduler = new LocalScheduler();
    const schedules = await startSchedulerServer(scheduler);
    started.push(schedules);
    const parameters = new LocalParameterStore();
    const ssm = await startSsmServer(parameters);
    started.push(ssm);
    let endpoints: Endpoints = {
      sqs: fauxqs.url,
      s3: fauxqs.url,
      dynamodb: dynamodb.url,
      events: events.url,
      scheduler: schedules.url,
      ssm: ssm.url,
    };
    if (options.port !== undefined) {
      const router = await startEndpointRouter(
        {
          sqsAndS3: fauxqs.url,
          dynamodb: dynamodb.url,
          events: events.url,
          scheduler: schedules.url,
          ssm: ssm.url,
        },
        options.port,
      );
      started.unshift(router); // stopped first
      endpoints = {
        sqs: router.url,
        s3: router.url,
        dynamodb: router.url,
        events: router.url,
        scheduler: router.url,
        ssm: router.url,
      };
      // Queues loaded from disk must name the router, which clients use, not fauxqs' own port.
      fauxqs.rehostQueues(router.url);
    }
    const servers = new Map(started.map((running) => [running.url, running.server]));
    return {
      endpoints,
      inProcess: inProcessTransport(servers),
      eventBus,
      scheduler,
      parameters,
      stop: () => stopAll(started),
    };
  } catch (err) {
    await stopAll(started).catch(() => {});
    throw err;
  }
}

async function stopAll(servers: RunningServer[]): Promise<void> {
  const errors: unknown[] = [];
  for (const server of servers) {
    try {
      await server.stop();
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length > 0) throw new AggregateError(errors, 'stopping emulators failed');
}
