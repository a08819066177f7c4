// Creates the template's queues, buckets and tables in the emulators, over the AWS wire protocol, or
// (lookup) finds the ones an earlier provisioning created, without changing anything.
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
import {
  type BucketLocationConstraint,
  CreateBucketCommand,
  HeadBucketCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { type NameKind, STACK_ID_TAG } from './physical-names.ts';
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
  /** The stack's id (ARN ending in the instance id): tagged on queues, see STACK_ID_TAG. */
  stackId: string;
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
  const name = queueNameOf(input);
  const tags = {
    ...tagMap(props.Tags === undefined ? undefined : input.resolve(props.Tags, path('Tags'))),
    [STACK_ID_TAG]: input.stackId,
  };
  const create = (attrs: Record<string, string>) =>
    sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attrs, tags }));
  const createOrUpdate = async (attrs: Record<string, string>): Promise<string | undefined> => {
    try {
      return (await create(attrs)).QueueUrl;
    } catch (err) {
      if (!isError(err, 'QueueNameExists', 'QueueAlreadyExists')) throw err;
    }
    // Kept from an earlier run with other settings (the template changed): update it in place,
    // as a CloudFormation stack update does. FifoQueue cannot change, and is part of the name anyway.
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    const { FifoQueue: _fifo, ...settable } = attrs;
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: settable }));
    input.note(`existing queue ${name} kept; its attributes updated to the template's`);
    return QueueUrl;
  };
  let url: string | undefined;
  try {
    url = await createOrUpdate({ ...attributes, ...sse });
  } catch (err) {
    if (Object.keys(sse).length === 0) throw err;
    url = await createOrUpdate(attributes);
    input.note(
      `SSE attributes ${JSON.stringify(sse)} not accepted by the endpoint (${message(err)}); queue created without them`,
    );
  }
  if (!url) throw new Error(`CreateQueue ${name} returned no QueueUrl`);
  return describeQueue(sqs, input, name, url);
}

/** Lookup: the queue an earlier provisioning created (GetQueueUrl), or NotProvisionedError. */
export async function findQueue(sqs: SQSClient, input: CreateInput): Promise<ProvisionedResource> {
  const name = queueNameOf(input);
  let url: string | undefined;
  try {
    url = (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl;
  } catch (err) {
    if (isError(err, 'QueueDoesNotExist', 'NonExistentQueue')) {
      throw new NotProvisionedError(input.logicalId, `queue ${name}`);
    }
    throw err;
  }
  if (!url) throw new Error(`GetQueueUrl ${name} returned no QueueUrl`);
  return describeQueue(sqs, input, name, url);
}

function queueNameOf(input: CreateInput): string {
  const { properties: props } = input;
  const path = (key: string) => `Resources.${input.logicalId}.Properties.${key}`;
  if (props.QueueName) return String(input.resolve(props.QueueName, path('QueueName')));
  const fifo =
    props.FifoQueue !== undefined &&
    attributeString(input.resolve(props.FifoQueue, path('FifoQueue'))) === 'true';
  return input.physicalName('queue', { fifo });
}

async function describeQueue(
  sqs: SQSClient,
  input: CreateInput,
  name: string,
  url: string,
): Promise<ProvisionedResource> {
  const got = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  const { QueueArn: arn, ...reported } = got.Attributes ?? {};
  if (!arn) throw new Error(`GetQueueAttributes ${name} returned no QueueArn`);
  const settings = Object.fromEntries(
    Object.entries(reported).filter(([key]) => !key.startsWith('Approximate')),
  );
  return { type: input.type, physicalId: url, url, arn, attributes: settings };
}

export async function createBucket(s3: S3Client, input: CreateInput): Promise<ProvisionedResource> {
  const name = bucketNameOf(input);
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

/** Lookup: the bucket an earlier provisioning created (HeadBucket), or NotProvisionedError. */
export async function findBucket(s3: S3Client, input: CreateInput): Promise<ProvisionedResource> {
  const name = bucketNameOf(input);
  try {
    await s3.send(new HeadBucketCommand({ Bucket: name }));
  } catch (err) {
    if (isError(err, 'NotFound', 'NoSuchBucket'))
      throw new NotProvisionedError(input.logicalId, `bucket ${name}`);
    throw err;
  }
  return { type: input.type, physicalId: name, arn: `arn:aws:s3:::${name}` };
}

function bucketNameOf(input: CreateInput): string {
  const { properties: props } = input;
  return props.BucketName
    ? String(input.resolve(props.BucketName, `Resources.${input.logicalId}.Properties.BucketName`))
    : input.physicalName('bucket');
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
  let existed = false;
  try {
    await dynamodb.send(new CreateTableCommand(request));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
    existed = true; // already there: same instance re-provisioned (persistent state or endpoint)
  }
  const arn = await waitForActive(dynamodb, name);
  if (existed) await assertSameKeys(dynamodb, name, request);
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

/** Lookup: the table an earlier provisioning created (DescribeTable), or NotProvisionedError. */
export async function findTable(dynamodb: DynamoDBClient, input: CreateInput): Promise<ProvisionedResource> {
  const raw = input.properties.TableName;
  const name =
    raw === undefined
      ? input.physicalName('table')
      : String(input.resolve(raw, `Resources.${input.logicalId}.Properties.TableName`));
  let arn: string | undefined;
  try {
    arn = (await dynamodb.send(new DescribeTableCommand({ TableName: name }))).Table?.TableArn;
  } catch (err) {
    if (isError(err, 'ResourceNotFoundException'))
      throw new NotProvisionedError(input.logicalId, `table ${name}`);
    throw err;
  }
  if (!arn) throw new Error(`DescribeTable ${name} returned no TableArn`);
  return { type: input.type, physicalId: name, arn };
}

/** A resource the lookup did not find: the stack was not provisioned there (with these names). */
export class NotProvisionedError extends Error {
  readonly logicalId: string;
  constructor(logicalId: string, what: string) {
    super(`${logicalId}: ${what} does not exist`);
    this.name = 'NotProvisionedError';
    this.logicalId = logicalId;
  }
}

// A kept table must have the template's keys and indexes: items cannot be migrated in place, and
// CloudFormation would replace such a table. Locally we refuse rather than drop data.
async function assertSameKeys(
  dynamodb: DynamoDBClient,
  name: string,
  wanted: CreateTableCommandInput,
): Promise<void> {
  const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: name }));
  const describe = (
    keys: KeySchemaElement[] | undefined,
    indexes: Array<{ IndexName?: string }> | undefined,
  ) =>
    JSON.stringify({
      keys: (keys ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`),
      indexes: (indexes ?? []).map((i) => i.IndexName).sort(),
    });
  const have = describe(Table?.KeySchema, [
    ...(Table?.GlobalSecondaryIndexes ?? []),
    ...(Table?.LocalSecondaryIndexes ?? []),
  ]);
  const want = describe(wanted.KeySchema, [
    ...(wanted.GlobalSecondaryIndexes ?? []),
    ...(wanted.LocalSecondaryIndexes ?? []),
  ]);
  if (have !== want) {
    throw new Error(
      `table ${name} already exists with keys/indexes ${have}, but the template wants ${want}; ` +
        'it was made by an incompatible version: delete the local state (or use a new instance id)',
    );
  }
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

// SQS names its errors in three ways depending on protocol and emulator: `QueueDoesNotExist`,
// `AWS.SimpleQueueService.NonExistentQueue` (query code), `AWS.SimpleQueueService.QueueNameExists`.
function isError(err: unknown, ...names: string[]): boolean {
  if (!(err instanceof Error)) return false;
  const code = Reflect.get(err, 'Code');
  return [err.name, typeof code === 'string' ? code : '']
    .map((name) => name.replace(/^AWS\.SimpleQueueService\./, ''))
    .some((name) => names.includes(name));
}

function errorName(err: unknown): string {
  return err instanceof Error
    ? `${err.name}${err.message && err.message !== 'UnknownError' ? `: ${err.message}` : ''}`
    : String(err);
}
