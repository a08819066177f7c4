// One place that turns emulator endpoints into AWS SDK v3 client config and handler env.
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { countAwsCalls } from '../lambdas/shared/aws-call-counter.ts';
import {
  type LedgerClient,
  type LedgerTag,
  OPERATOR,
  recordAwsCalls,
} from '../lambdas/shared/aws-call-ledger.ts';
import type { AwsTransport } from '../lambdas/shared/aws-clients.ts';
import { processMeters } from './process-meters.ts';

export interface Endpoints {
  sqs: string;
  s3: string;
  dynamodb: string;
  /**
   * EventBridge (PutEvents). Absent (emulators started without it): the handlers publish no events
   * (their EVENT_BUS_NAME is left out).
   */
  events?: string;
  /** EventBridge Scheduler (`crawler schedule`). Absent: the CLI cannot create schedules there. */
  scheduler?: string;
  /** SSM Parameter Store (a crawl's credentials). Absent: crawls with credentials cannot be started there. */
  ssm?: string;
}

export interface ClientSettings {
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  maxAttempts: number;
  /** How calls travel: the SDK's signed HTTP when absent; the embedded emulators' in-process one. */
  transport?: AwsTransport;
}

export const LOCAL_REGION = 'us-east-1';
/** Account id the emulators (fauxqs, LocalStack) use in ARNs. */
export const LOCAL_ACCOUNT_ID = '000000000000';
/** Env var the handler side reads to set `forcePathStyle` (the SDK has no such env var itself). */
export const FORCE_PATH_STYLE_ENV = 'AWS_S3_FORCE_PATH_STYLE';

// Emulators accept any credentials; static ones keep the SDK from walking the default chain (IMDS timeouts).
const defaults: ClientSettings = {
  region: LOCAL_REGION,
  accessKeyId: 'test',
  secretAccessKey: 'test',
  maxAttempts: 3,
};

export function clientSettings(overrides: Partial<ClientSettings> = {}): ClientSettings {
  return { ...defaults, ...overrides };
}

/** One endpoint for all services (LocalStack, a standalone emulator). */
export function endpointsFromUrl(url: string): Endpoints {
  const normalized = new URL(url).origin;
  return {
    sqs: normalized,
    s3: normalized,
    dynamodb: normalized,
    events: normalized,
    scheduler: normalized,
    ssm: normalized,
  };
}

/** An SDK client's config for one emulator endpoint (any service's client takes it). */
export function clientConfig(endpoint: string, settings = clientSettings()) {
  return {
    region: settings.region,
    endpoint,
    credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
    maxAttempts: settings.maxAttempts,
    ...settings.transport,
  };
}

export function sqsConfig(endpoints: Endpoints, settings = clientSettings()): SQSClientConfig {
  return clientConfig(endpoints.sqs, settings);
}

// Path-style: fauxqs (and LocalStack on a plain host) cannot serve bucket.host virtual-hosted URLs here.
export function s3Config(endpoints: Endpoints, settings = clientSettings()): S3ClientConfig {
  return { ...clientConfig(endpoints.s3, settings), forcePathStyle: true };
}

export function dynamodbConfig(endpoints: Endpoints, settings = clientSettings()): DynamoDBClientConfig {
  return clientConfig(endpoints.dynamodb, settings);
}

export interface AwsClients {
  sqs: SQSClient;
  s3: S3Client;
  dynamodb: DynamoDBClient;
  /** Absent when the endpoints have no EventBridge (emulators started without it). */
  eventbridge?: EventBridgeClient;
  /** Absent when the endpoints have no Scheduler. */
  scheduler?: SchedulerClient;
  /** Absent when the endpoints have no SSM. */
  ssm?: SSMClient;
}

/** The CLI's calls against a local AWS: the operator's, in the emulators' account. */
const LOCAL_OPERATOR: LedgerTag = { principal: OPERATOR, accountId: LOCAL_ACCOUNT_ID };

/** Counted (lambdas/shared/aws-call-counter.ts) and recorded under `tag` (aws-call-ledger.ts). */
function watch<T extends LedgerClient & Parameters<typeof countAwsCalls>[0]>(client: T, tag: LedgerTag): T {
  const { counter, ledger, reportCapacity } = processMeters;
  return recordAwsCalls(countAwsCalls(client, counter, { reportCapacity }), tag, ledger);
}

/**
 * Every call of these clients is counted, as the handlers' are, and recorded with the permission it
 * needs under `tag`'s principal: the operator's unless the caller is the local runtime itself.
 */
export function createClients(
  endpoints: Endpoints,
  settings = clientSettings(),
  tag: LedgerTag = LOCAL_OPERATOR,
): AwsClients {
  return {
    sqs: createSqsClient(endpoints, settings, tag),
    s3: watch(new S3Client(s3Config(endpoints, settings)), tag),
    dynamodb: watch(new DynamoDBClient(dynamodbConfig(endpoints, settings)), tag),
    ...(endpoints.events === undefined
      ? {}
      : { eventbridge: watch(new EventBridgeClient(clientConfig(endpoints.events, settings)), tag) }),
    ...(endpoints.scheduler === undefined
      ? {}
      : { scheduler: watch(new SchedulerClient(clientConfig(endpoints.scheduler, settings)), tag) }),
    ...(endpoints.ssm === undefined
      ? {}
      : { ssm: watch(new SSMClient(clientConfig(endpoints.ssm, settings)), tag) }),
  };
}

/** One SQS client, as createClients makes it (the local runtime's pollers: one per function's role). */
export function createSqsClient(endpoints: Endpoints, settings: ClientSettings, tag: LedgerTag): SQSClient {
  return watch(new SQSClient(sqsConfig(endpoints, settings)), tag);
}

/**
 * The region for clients of real AWS: AWS_REGION, else AWS_DEFAULT_REGION (which the AWS CLI and the
 * CDK honour and the SDK v3 does not, so a deploy and a submit could otherwise look in different
 * regions), else undefined: the SDK's own chain (the profile's region).
 */
export function awsRegion(env: Record<string, string | undefined> = process.env): { region?: string } {
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  return region ? { region } : {};
}

/**
 * Clients for real AWS: the SDK's default configuration (region as `awsRegion` says, credentials
 * from the default provider chain, AWS_ENDPOINT_URL_* honoured).
 */
export function createDefaultClients(): AwsClients {
  const tag = { principal: OPERATOR };
  return {
    sqs: watch(new SQSClient(awsRegion()), tag),
    s3: watch(new S3Client(awsRegion()), tag),
    dynamodb: watch(new DynamoDBClient(awsRegion()), tag),
    eventbridge: watch(new EventBridgeClient(awsRegion()), tag),
    scheduler: watch(new SchedulerClient(awsRegion()), tag),
    ssm: watch(new SSMClient(awsRegion()), tag),
  };
}

export function destroyClients(clients: AwsClients): void {
  clients.sqs.destroy();
  clients.s3.destroy();
  clients.dynamodb.destroy();
  clients.eventbridge?.destroy();
  clients.scheduler?.destroy();
  clients.ssm?.destroy();
}

/**
 * Env vars the AWS SDK honours (endpoint per service, region, credentials, the account), so handlers built from
 * this env need no emulator branch. AWS_S3_FORCE_PATH_STYLE is ours: the handler side sets
 * `forcePathStyle` from it.
 */
export function endpointEnv(endpoints: Endpoints, settings = clientSettings()): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_S3: endpoints.s3,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    ...(endpoints.events === undefined ? {} : { AWS_ENDPOINT_URL_EVENTBRIDGE: endpoints.events }),
    ...(endpoints.ssm === undefined ? {} : { AWS_ENDPOINT_URL_SSM: endpoints.ssm }),
    AWS_REGION: settings.region,
    AWS_DEFAULT_REGION: settings.region,
    AWS_ACCESS_KEY_ID: settings.accessKeyId,
    AWS_SECRET_ACCESS_KEY: settings.secretAccessKey,
    AWS_ACCOUNT_ID: LOCAL_ACCOUNT_ID,
    [FORCE_PATH_STYLE_ENV]: 'true',
  };
}
