/**
 * The IAM ledger: an AWS SDK v3 middleware that records, for every call a client makes, who made it
 * (the principal), the IAM action the call needs and the resource ARN it acts on, so a test can check
 * each call against the stack's policies (the emulators enforce no IAM).
 *
 * The principal is fixed per client: a function's clients (createAwsClients) are the function's
 * role, named by AWS_LAMBDA_FUNCTION_NAME; the CLI's are the operator's (OPERATOR). One call can need
 * several permissions (a BatchGetItem on two tables; a GetObject of a missing key, which answers 404
 * instead of 403 only with s3:ListBucket on the bucket). `permissionsFor` is the mapping, pure.
 *
 * A ledger is passed to the clients that record into it, never a global: the local runtime's process
 * has one (local/process-meters.ts), off until `enable()`; a function on Lambda has none, and its
 * clients carry no recording middleware. `snapshot()` is plain data, and `absorb(snapshot)` adds one
 * recorded elsewhere (a worker thread) into this one.
 */

/** The principal of the CLI's clients: whoever runs `crawler submit/status/...` (docs/deploy.md). */
export const OPERATOR = 'operator';
/** The principal of the local runtime's own clients: AWS's work (provisioning, event source polling). */
export const LOCAL_RUNTIME = 'local-runtime';

/** One IAM permission a call needs. */
export interface Permission {
  /** `service:Action`, e.g. `sqs:SendMessage`. */
  action: string;
  /** The resource ARN; `*` where the action takes no resource. */
  resource: string;
}

/** A distinct (principal, action, resource), with how many calls needed it and how many failed. */
export interface LedgerEntry extends Permission {
  principal: string;
  calls: number;
  errors: number;
}

export interface LedgerSnapshot {
  entries: LedgerEntry[];
}

/** What `permissionsFor` needs to know about one call. */
export interface CallFacts {
  /** The client's service, as the SDK names it without `Client`: SQS, S3, DynamoDB, CloudFormation. */
  service: string;
  /** The command without `Command`: SendMessageBatch, GetObject... */
  operation: string;
  input: Record<string, unknown>;
  /** The output, when the call succeeded. */
  output?: unknown;
  /** The error, when it failed. */
  error?: unknown;
  region: string;
  /** The account, where the input does not name it (DynamoDB tables); unknown leaves the ARN's account empty. */
  accountId?: string | undefined;
}

/** SQS batch actions are authorized as their single-message action (SQS developer guide, batch actions). */
const SQS_BATCH = /^(SendMessage|DeleteMessage|ChangeMessageVisibility)Batch$/;
/** S3 operations whose action is not `s3:<operation>`, and the resource they act on. */
const S3_ACTIONS: Record<string, { action: string; on: 'object' | 'bucket' }> = {
  GetObject: { action: 's3:GetObject', on: 'object' },
  HeadObject: { action: 's3:GetObject', on: 'object' },
  PutObject: { action: 's3:PutObject', on: 'object' },
  CreateMultipartUpload: { action: 's3:PutObject', on: 'object' },
  UploadPart: { action: 's3:PutObject', on: 'object' },
  CompleteMultipartUpload: { action: 's3:PutObject', on: 'object' },
  AbortMultipartUpload: { action: 's3:AbortMultipartUpload', on: 'object' },
  DeleteObject: { action: 's3:DeleteObject', on: 'object' },
  ListObjectsV2: { action: 's3:ListBucket', on: 'bucket' },
  ListObjects: { action: 's3:ListBucket', on: 'bucket' },
  HeadBucket: { action: 's3:ListBucket', on: 'bucket' },
};
/** TransactWriteItems is authorized per item, as the single-item action (DynamoDB developer guide). */
const TRANSACT_WRITE_ACTIONS: Record<string, string> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
};

/** The permissions one call needs. An input this does not understand yields a resource that matches no policy. */
export function permissionsFor(call: CallFacts): Permission[] {
  switch (call.service) {
    case 'SQS':
      return [sqsPermission(call)];
    case 'S3':
      return s3Permissions(call);
    case 'DynamoDB':
      return dynamodbPermissions(call);
    case 'CloudFormation':
      return [{ action: `cloudformation:${call.operation}`, resource: stackArn(call) }];
    case 'EventBridge':
      return eventsPermissions(call);
    case 'Scheduler':
      return schedulerPermissions(call);
    case 'SSM':
      return [ssmPermission(call)];
    default:
      return [{ action: `${call.service.toLowerCase()}:${call.operation}`, resource: unknownResource(call) }];
  }
}

/** PutEvents is authorized on each entry's bus (`default` when an entry names none). */
function eventsPermissions(call: CallFacts): Permission[] {
  const input = isRecord(call.input) ? call.input : {};
  if (call.operation !== 'PutEvents' || !Array.isArray(input.Entries))
    return [{ action: `events:${call.operation}`, resource: unknownResource(call) }];
  const buses = new Set(
    input.Entries.map((entry) =>
      isRecord(entry) && typeof entry.EventBusName === 'string' ? entry.EventBusName : 'default',
    ),
  );
  return [...buses].map((bus) => ({
    action: 'events:PutEvents',
    resource: bus.startsWith('arn:')
      ? bus
      : `arn:aws:events:${call.region}:${call.accountId ?? ''}:event-bus/${bus}`,
  }));
}

/**
 * Schedule calls act on `schedule/<group>/<name>` (group `default` when the input names none); a
 * CreateSchedule also needs iam:PassRole on the role its target sends as.
 */
function schedulerPermissions(call: CallFacts): Permission[] {
  const { Name: name, GroupName: group, Target: target } = call.input;
  if (typeof name !== 'string')
    return [{ action: `scheduler:${call.operation}`, resource: unknownResource(call) }];
  const permissions: Permission[] = [
    {
      action: `scheduler:${call.operation}`,
      resource: `arn:aws:scheduler:${call.region}:${call.accountId ?? ''}:schedule/${typeof group === 'string' ? group : 'default'}/${name}`,
    },
  ];
  const role = isRecord(target) ? target.RoleArn : undefined;
  if (call.operation === 'CreateSchedule' || call.operation === 'UpdateSchedule')
    permissions.push({
      action: 'iam:PassRole',
      resource: typeof role === 'string' ? role : unknownResource(call),
    });
  return permissions;
}

/** A parameter call acts on `parameter/<name>` (the name's leading slash is not doubled in the ARN). */
function ssmPermission(call: CallFacts): Permission {
  const name = call.input.Name;
  if (typeof name !== 'string') return { action: `ssm:${call.operation}`, resource: unknownResource(call) };
  const path = name.startsWith('/') ? name.slice(1) : name;
  return {
    action: `ssm:${call.operation}`,
    resource: `arn:aws:ssm:${call.region}:${call.accountId ?? ''}:parameter/${path}`,
  };
}

function unknownResource(call: CallFacts): string {
  return `unknown:${call.service}:${call.operation}`;
}

function sqsPermission(call: CallFacts): Permission {
  const action = `sqs:${call.operation.replace(SQS_BATCH, '$1')}`;
  if (call.operation === 'ListQueues') return { action, resource: '*' };
  const url = call.input.QueueUrl;
  if (typeof url === 'string') {
    // https://sqs.<region>.amazonaws.com/<account>/<name>, or an emulator's http://host:port/<account>/<name>
    const [account, name] = new URL(url).pathname.split('/').filter(Boolean);
    if (account && name) return { action, resource: `arn:aws:sqs:${call.region}:${account}:${name}` };
  }
  const name = call.input.QueueName;
  if (typeof name === 'string') {
    const owner = call.input.QueueOwnerAWSAccountId;
    const account = typeof owner === 'string' ? owner : (call.accountId ?? '');
    return { action, resource: `arn:aws:sqs:${call.region}:${account}:${name}` };
  }
  return { action, resource: unknownResource(call) };
}

function s3Permissions(call: CallFacts): Permission[] {
  const bucket = call.input.Bucket;
  if (typeof bucket !== 'string')
    return [{ action: `s3:${call.operation}`, resource: unknownResource(call) }];
  const known = S3_ACTIONS[call.operation];
  const on = known?.on ?? (typeof call.input.Key === 'string' ? 'object' : 'bucket');
  const action = known?.action ?? `s3:${call.operation}`;
  const bucketArn = `arn:aws:s3:::${bucket}`;
  const key = call.input.Key;
  const resource = on === 'object' && typeof key === 'string' ? `${bucketArn}/${key}` : bucketArn;
  const permissions = [{ action, resource }];
  // S3 answers a read of a missing key with 404 only to a caller that may list the bucket, else 403:
  // code that tells "absent" from "denied" (a cache miss) needs ListBucket too (GetObject docs).
  if ((call.operation === 'GetObject' || call.operation === 'HeadObject') && isNotFound(call.error)) {
    permissions.push({ action: 's3:ListBucket', resource: bucketArn });
  }
  return permissions;
}

function isNotFound(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const name = Reflect.get(error, 'name');
  const metadata = Reflect.get(error, '$metadata');
  const status =
    typeof metadata === 'object' && metadata !== null ? Reflect.get(metadata, 'httpStatusCode') : undefined;
  return name === 'NoSuchKey' || name === 'NotFound' || status === 404;
}

function dynamodbPermissions(call: CallFacts): Permission[] {
  const table = (name: unknown, index?: unknown): string => {
    if (typeof name !== 'string') return unknownResource(call);
    const arn = name.startsWith('arn:')
      ? name
      : `arn:aws:dynamodb:${call.region}:${call.accountId ?? ''}:table/${name}`;
    return typeof index === 'string' ? `${arn}/index/${index}` : arn;
  };
  const { input } = call;
  switch (call.operation) {
    case 'BatchGetItem':
    case 'BatchWriteItem': {
      const tables = isRecord(input.RequestItems) ? Object.keys(input.RequestItems) : [];
      return tables.map((name) => ({ action: `dynamodb:${call.operation}`, resource: table(name) }));
    }
    case 'TransactWriteItems':
    case 'TransactGetItems': {
      const items = Array.isArray(input.TransactItems) ? input.TransactItems : [];
      return items.flatMap((item: unknown) =>
        Object.entries(isRecord(item) ? item : {}).map(([kind, request]) => ({
          action:
            call.operation === 'TransactGetItems'
              ? 'dynamodb:GetItem'
              : (TRANSACT_WRITE_ACTIONS[kind] ?? `dynamodb:${kind}`),
          resource: table(isRecord(request) ? request.TableName : undefined),
        })),
      );
    }
    case 'ListTables':
      return [{ action: 'dynamodb:ListTables', resource: '*' }];
    default:
      return [{ action: `dynamodb:${call.operation}`, resource: table(input.TableName, input.IndexName) }];
  }
}

/** DescribeStacks names a stack by name or id; the id (from the answer, when there is one) is its ARN. */
function stackArn(call: CallFacts): string {
  const name = call.input.StackName;
  if (typeof name === 'string' && name.startsWith('arn:')) return name;
  const stacks = isRecord(call.output) && Array.isArray(call.output.Stacks) ? call.output.Stacks : [];
  const id = isRecord(stacks[0]) ? stacks[0].StackId : undefined;
  if (typeof id === 'string') return id;
  if (typeof name !== 'string') return unknownResource(call);
  return `arn:aws:cloudformation:${call.region}:${call.accountId ?? ''}:stack/${name}/*`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// --- the ledger ---------------------------------------------------------------------------------

export class AwsCallLedger {
  readonly #entries = new Map<string, LedgerEntry>();

  #enabled = false;

  /**
   * Off until a test turns it on: it keeps one entry per object key, so a long-lived Lambda container
   * or a big local crawl would grow it without bound.
   */
  get enabled(): boolean {
    return this.#enabled;
  }

  enable(): void {
    this.#enabled = true;
  }

  /** One call by `principal` that needed `permissions`. */
  record(principal: string, permissions: readonly Permission[], failed: boolean): void {
    if (!this.#enabled) return;
    for (const { action, resource } of permissions) {
      this.#add({ principal, action, resource, calls: 1, errors: failed ? 1 : 0 });
    }
  }

  #add(entry: LedgerEntry): void {
    const key = JSON.stringify([entry.principal, entry.action, entry.resource]);
    const existing = this.#entries.get(key);
    if (existing) {
      existing.calls += entry.calls;
      existing.errors += entry.errors;
    } else {
      this.#entries.set(key, { ...entry });
    }
  }

  /** Plain, serializable data (structured-clone and JSON safe), sorted. */
  snapshot(): LedgerSnapshot {
    const entries = [...this.#entries.values()].map((entry) => ({ ...entry }));
    entries.sort(
      (a, b) =>
        a.principal.localeCompare(b.principal) ||
        a.action.localeCompare(b.action) ||
        a.resource.localeCompare(b.resource),
    );
    return { entries };
  }

  /** Adds a snapshot taken elsewhere (another thread's ledger) to this one. */
  absorb(snapshot: LedgerSnapshot): void {
    for (const entry of snapshot.entries) this.#add(entry);
  }

  reset(): void {
    this.#entries.clear();
  }
}

// --- the middleware -----------------------------------------------------------------------------

/** The parts of an SDK v3 client this module uses (structural, so no @smithy import). */
export interface LedgerClient {
  middlewareStack: { add(middleware: unknown, options: Record<string, unknown>): void };
  config: { region: unknown };
}

export interface LedgerTag {
  principal: string;
  /** The account of unqualified names (DynamoDB tables); see CallFacts.accountId. */
  accountId?: string | undefined;
}

interface MiddlewareContext {
  clientName?: string;
  commandName?: string;
}

type Next = (args: { input: Record<string, unknown> }) => Promise<{ output: unknown }>;

const MIDDLEWARE_NAME = 'awsCallLedger';
const recorded = new WeakSet<object>();

/** Attaches the recording middleware to `client` (once; a second call is a no-op). */
export function recordAwsCalls<T extends LedgerClient>(client: T, tag: LedgerTag, ledger: AwsCallLedger): T {
  if (recorded.has(client)) return client;
  recorded.add(client);
  const regionOf = async (): Promise<string> => {
    const region = client.config.region;
    const value = typeof region === 'function' ? await region() : region;
    return typeof value === 'string' ? value : '';
  };
  const middleware =
    (next: Next, context: MiddlewareContext) =>
    async (args: { input: Record<string, unknown> }): Promise<{ output: unknown }> => {
      if (!ledger.enabled) return next(args);
      const service = (context.clientName ?? 'Unknown').replace(/Client$/, '');
      const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
      const facts = { service, operation, input: args.input, accountId: tag.accountId };
      try {
        const result = await next(args);
        const region = await regionOf();
        ledger.record(tag.principal, permissionsFor({ ...facts, region, output: result.output }), false);
        return result;
      } catch (error) {
        const region = await regionOf().catch(() => '');
        ledger.record(tag.principal, permissionsFor({ ...facts, region, error }), true);
        throw error;
      }
    };
  client.middlewareStack.add(middleware, { step: 'initialize', name: MIDDLEWARE_NAME, override: true });
  return client;
}
