/**
 * SDK clients built from a function's own environment. Endpoints are passed explicitly (not only via
 * process.env) because locally several functions with different environments share one process.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { HttpHandlerOptions, HttpRequest, HttpResponse, RequestSigner } from '@smithy/types';
import type { PageRenderer } from '../core/crawl/index.ts';
import { AwsCallCounter, countAwsCalls } from './aws-call-counter.ts';
import { type AwsCallLedger, type LedgerClient, recordAwsCalls } from './aws-call-ledger.ts';
import type { AwsEnv } from './env.ts';

export interface AwsClients {
  sqs: SQSClient;
  s3: S3Client;
  dynamodb: DynamoDBClient;
  eventbridge: EventBridgeClient;
  /** A crawl's credentials (adapters/credential-store.ts). */
  ssm: SSMClient;
  /**
   * The same services with one attempt per call (no SDK retries), for writes that must not be
   * repeated blindly: a retry after a first attempt that took effect (its answer lost) would add a
   * counter twice or write an object twice. Their callers retry only what they know did not happen.
   */
  singleAttempt: { s3: S3Client; dynamodb: DynamoDBClient };
  /** What counts these clients' calls (the function's budget charges it); none when counting is off. */
  counter: AwsCallCounter | undefined;
}

/** What counts a function's AWS calls (aws-call-counter.ts) and records their permissions (aws-call-ledger.ts). */
export interface AwsMeters {
  counter: AwsCallCounter;
  /** DynamoDB's units as the service reports them (`ReturnConsumedCapacity`), not estimated. */
  reportCapacity: boolean;
  ledger?: AwsCallLedger;
}

/** An SDK v3 client's `requestHandler`, as NodeHttpHandler is one. */
export interface AwsRequestHandler {
  handle(request: HttpRequest, options?: HttpHandlerOptions): Promise<{ response: HttpResponse }>;
  updateHttpClientConfig(key: never, value: never): void;
  httpHandlerConfigs(): Record<string, never>;
  destroy(): void;
}

/**
 * How SDK calls travel, in place of the SDK's HTTP and SigV4: the local runtime reaches its embedded
 * emulators in its own thread, with no socket and no signature to compute (local/in-process-http.ts).
 */
export interface AwsTransport {
  requestHandler: AwsRequestHandler;
  signer: RequestSigner;
}

/** What the runtime hands a handler besides its environment (`createHandler(env, wiring)`). */
export interface HandlerWiring {
  /** The local runtime's transport to its emulators, for handlers in its thread; Lambda gives none. */
  awsTransport?: AwsTransport;
  /** The local runtime's browser for the render function (local/local-renderer.ts); on Lambda, @sparticuz/chromium's. */
  renderer?: PageRenderer;
  /** The local runtime's meters, shared with its process (local/process-meters.ts); on Lambda, the function's own. */
  meters?: AwsMeters;
}

/** A function's own meters on Lambda, as `CRAWLER_CALL_COUNTING` says (contracts.ts CALL_COUNTING). */
function functionMeters(env: AwsEnv): AwsMeters | undefined {
  const mode = env.CRAWLER_CALL_COUNTING;
  return mode === 'off' ? undefined : { counter: new AwsCallCounter(), reportCapacity: mode === 'reported' };
}

/** The principal of clients built outside Lambda without a function name (tests, benchmarks). */
export const UNNAMED_FUNCTION = 'unnamed-function';

/**
 * `wiring.awsTransport`: how the calls travel, the SDK's own (signed HTTP) when absent;
 * `wiring.meters`: what counts them, the function's own (functionMeters) when absent.
 */
export function createAwsClients(
  env: AwsEnv,
  wiring: Pick<HandlerWiring, 'awsTransport' | 'meters'> = {},
): AwsClients {
  const transport = wiring.awsTransport;
  const meters = wiring.meters ?? functionMeters(env);
  const credentials =
    env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
      ? {
          accessKeyId: env.AWS_ACCESS_KEY_ID,
          secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
          ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
        }
      : undefined;
  const common = {
    region: env.AWS_REGION,
    ...(credentials ? { credentials } : {}),
    ...(env.AWS_MAX_ATTEMPTS ? { maxAttempts: env.AWS_MAX_ATTEMPTS } : {}),
    ...transport,
  };
  const endpoint = (specific: string | undefined) => {
    const url = specific ?? env.AWS_ENDPOINT_URL;
    return url ? { endpoint: url } : {};
  };
  // Where there is a ledger, every call is recorded with the IAM permission it needs, under the
  // function's name (its role).
  const tag = { principal: env.AWS_LAMBDA_FUNCTION_NAME ?? UNNAMED_FUNCTION, accountId: env.AWS_ACCOUNT_ID };
  const watch = <T extends LedgerClient & Parameters<typeof countAwsCalls>[0]>(client: T): T => {
    if (meters === undefined) return client;
    countAwsCalls(client, meters.counter, { reportCapacity: meters.reportCapacity });
    return meters.ledger === undefined ? client : recordAwsCalls(client, tag, meters.ledger);
  };
  // The singleAttempt clients set maxAttempts 1; the others take the environment's.
  const attempts = (maxAttempts?: number) => ({ ...common, ...(maxAttempts ? { maxAttempts } : {}) });
  const forcePathStyle = env.AWS_S3_FORCE_PATH_STYLE === 'true';
  const s3 = (maxAttempts?: number) =>
    watch(new S3Client({ ...attempts(maxAttempts), ...endpoint(env.AWS_ENDPOINT_URL_S3), forcePathStyle }));
  const dynamodb = (maxAttempts?: number) =>
    watch(new DynamoDBClient({ ...attempts(maxAttempts), ...endpoint(env.AWS_ENDPOINT_URL_DYNAMODB) }));
  // Counted (aws-call-counter.ts): requests per page, cost per million pages, crawl budgets.
  return {
    sqs: watch(new SQSClient({ ...common, ...endpoint(env.AWS_ENDPOINT_URL_SQS) })),
    s3: s3(),
    dynamodb: dynamodb(),
    eventbridge: watch(new EventBridgeClient({ ...common, ...endpoint(env.AWS_ENDPOINT_URL_EVENTBRIDGE) })),
    ssm: watch(new SSMClient({ ...common, ...endpoint(env.AWS_ENDPOINT_URL_SSM) })),
    singleAttempt: { s3: s3(1), dynamodb: dynamodb(1) },
    counter: meters?.counter,
  };
}
