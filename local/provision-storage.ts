// Creates the template's queues, buckets and tables in the emulators, over the AWS wire protocol.
import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
  type LocalSecondaryIndex,
  type Projection,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { type BucketLocationConstraint, CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { NameKind } from './physical-names.ts';
import type { ProvisionedResource } from './stack-model.ts';

export interface CreateInput {
  logicalId: string;
  type: string;
  properties: Record<string, unknown>;
  /** Resolves intrinsics in a (raw) property value; `path` names it in errors. */
  resolve(value: unknown, path: string): unknown;
  physicalName(kind: NameKind, options?: { fifo?: boolean }): string;
  note(text: string): void;
  region: string;
}

const QUEUE_ATTRIBUTES = [
  'VisibilityTimeout',
  'MessageRetentionPeriod',
  'DelaySeconds',
  'ReceiveMessageWaitTimeSeconds',
  'MaximumMessageSize',
  'RedrivePolicy',
  'RedriveAllowPolicy',
  'FifoQueue',
  'ContentBasedDeduplication',
  'DeduplicationScope',
  'FifoThroughputLimit',
];
const QUEUE_SSE_ATTRIBUTES = ['SqsManagedSseEnabled', 'KmsMasterKeyId', 'KmsDataKeyReusePeriodSeconds'];

export async function createQueue(sqs: SQSClient, input: CreateInput): Promise<ProvisionedResource> {
  const { properties: props } = input;
  const path = (key: string) => `Resources.${input.logicalId}.Properties.${key}`;
  const attributes: Record<string, string> = {};
  for (const key of QUEUE_ATTRIBUTES) {
    if (props[key] !== undefined) attributes[key] = attributeString(input.resolve(props[key], path(key)));
  }
  // SSE settings are best effort: an emulator may reject them, or a KMS key may not exist locally.
  const sse: Record<string, string> = {};
  for (const key of QUEUE_SSE_ATTRIBUTES) {
    if (props[key] === undefined) continue;
    try {
      sse[key] = attributeString(input.resolve(props[key], path(key)));
    } catch (err) {
      input.note(`${key} not applied: ${message(err)}`);
    }
  }
  noteUnhandled(input, [...QUEUE_ATTRIBUTES, ...QUEUE_SSE_ATTRIBUTES, 'QueueName', 'Tags']);
  const fifo = attributes.FifoQueue === 'true';
  const name = props.QueueName
    ? String(input.resolve(props.QueueName, path('QueueName')))
    : input.physicalName('queue', { fifo });
  const tags = tagMap(props.Tags === undefined ? undefined : input.resolve(props.Tags, path('Tags')));
  const create = (attrs: Record<string, string>) =>
    sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attrs, ...(tags ? { tags } : {}) }));
  let created: Awaited<ReturnType<typeof create>>;
  try {
    created = await create({ ...attributes, ...sse });
  } catch (err) {
    if (Object.keys(sse).length === 0) throw err;
    created = await create(attributes);
    input.note(
      `SSE attributes ${JSON.stringify(sse)} not accepted by the endpoint (${message(err)}); queue created without them`,
    );
  }
  const url = created.QueueUrl;
  if (!url) throw new Error(`CreateQueue ${name} returned no QueueUrl`);
  const got = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  const { QueueArn: arn, ...reported } = got.Attributes ?? {};
  if (!arn) throw new Error(`GetQueueAttributes ${name} returned no QueueArn`);
  const settings = Object.fromEntries(
    Object.entries(reported).filter(([key]) => !key.startsWith('Approximate')),
  );
  return { type: input.type, physicalId: url, url, arn, attributes: settings };
}

export async function createBucket(s3: S3Client, input: CreateInput): Promise<ProvisionedResource> {
  const { properties: props } = input;
  const name = props.BucketName
    ? String(input.resolve(props.BucketName, `Resources.${input.logicalId}.Properties.BucketName`))
    : input.physicalName('bucket');
  noteUnhandled(input, ['BucketName']);
  const location =
    input.region === 'us-east-1'
      ? {}
      : { CreateBucketConfiguration: { LocationConstraint: input.region as BucketLocationConstraint } };
  try {
    await s3.send(new CreateBucketCommand({ Bucket: name, ...location }));
  } catch (err) {
    // Re-provisioning the same instance against a persistent endpoint finds its bucket already there.
    if (!(err instanceof Error && err.name === 'BucketAlreadyOwnedByYou')) throw err;
  }
  return { type: input.type, physicalId: name, arn: `arn:aws:s3:::${name}` };
}

const TABLE_PROPERTIES = [
  'TableName',
  'KeySchema',
  'AttributeDefinitions',
  'BillingMode',
  'ProvisionedThroughput',
  'GlobalSecondaryIndexes',
  'LocalSecondaryIndexes',
  'TimeToLiveSpecification',
];

/** AWS::DynamoDB::Table and AWS::DynamoDB::GlobalTable (CDK TableV2): keys, indexes, billing, TTL. */
export async function createTable(
  dynamodb: DynamoDBClient,
  input: CreateInput,
): Promise<ProvisionedResource> {
  const resolved = input.resolve(input.properties, `Resources.${input.logicalId}.Properties`);
  const props = isRecord(resolved) ? resolved : {};
  const name = typeof props.TableName === 'string' ? props.TableName : input.physicalName('table');
  noteUnhandled(input, TABLE_PROPERTIES);
  const onDemand = props.BillingMode === 'PAY_PER_REQUEST';
  const request: CreateTableCommandInput = {
    TableName: name,
    KeySchema: props.KeySchema as KeySchemaElement[],
    AttributeDefinitions: props.AttributeDefinitions as AttributeDefinition[],
    BillingMode: onDemand ? 'PAY_PER_REQUEST' : 'PROVISIONED',
  };
  if (!onDemand) {
    request.ProvisionedThroughput =
      (props.ProvisionedThroughput as CreateTableCommandInput['ProvisionedThroughput']) ?? {
        ReadCapacityUnits: 5,
        WriteCapacityUnits: 5,
      };
  }
  const gsis = indexes(props.GlobalSecondaryIndexes, onDemand);
  if (gsis) request.GlobalSecondaryIndexes = gsis;
  const lsis: LocalSecondaryIndex[] | undefined = indexes(props.LocalSecondaryIndexes, true);
  if (lsis) request.LocalSecondaryIndexes = lsis;
  try {
    await dynamodb.send(new CreateTableCommand(request));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err; // already there: same instance re-provisioned
  }
  const arn = await waitForActive(dynamodb, name);
  const ttl = props.TimeToLiveSpecification;
  if (isRecord(ttl) && ttl.Enabled === true && typeof ttl.AttributeName === 'string') {
    try {
      await dynamodb.send(
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: ttl.AttributeName, Enabled: true },
        }),
      );
    } catch (err) {
      // dynalite has no UpdateTimeToLive: items keep their TTL attribute but never expire locally.
      input.note(`TimeToLiveSpecification (${ttl.AttributeName}) not applied: ${errorName(err)}`);
    }
  }
  return { type: input.type, physicalId: name, arn };
}

// Only the fields CreateTable takes; per-index throughput only for provisioned tables.
function indexes(value: unknown, onDemand: boolean): GlobalSecondaryIndex[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  return value.filter(isRecord).map((index) => {
    const out: GlobalSecondaryIndex = {
      IndexName: index.IndexName as string,
      KeySchema: index.KeySchema as KeySchemaElement[],
      Projection: index.Projection as Projection,
    };
    if (!onDemand && index.ProvisionedThroughput) {
      out.ProvisionedThroughput =
        index.ProvisionedThroughput as GlobalSecondaryIndex['ProvisionedThroughput'];
    }
    return out;
  });
}

async function waitForActive(dynamodb: DynamoDBClient, name: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: name }));
    if (Table?.TableStatus === 'ACTIVE' && Table.TableArn) return Table.TableArn;
    if (Date.now() > deadline) throw new Error(`table ${name} not ACTIVE after 30 s (${Table?.TableStatus})`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function noteUnhandled(input: CreateInput, handled: readonly string[]): void {
  const extra = Object.keys(input.properties).filter((key) => !handled.includes(key));
  if (extra.length > 0) input.note(`not applied locally: ${extra.join(', ')}`);
}

function attributeString(value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

function tagMap(value: unknown): Record<string, string> | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  const tags: Record<string, string> = {};
  for (const tag of value) if (isRecord(tag)) tags[String(tag.Key)] = String(tag.Value);
  return tags;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function errorName(err: unknown): string {
  return err instanceof Error
    ? `${err.name}${err.message && err.message !== 'UnknownError' ? `: ${err.message}` : ''}`
    : String(err);
}
