/**
 * Counted cost: an AWS SDK v3 middleware that counts every call a client makes, per service and
 * operation, with what AWS bills for it (docs/performance.md, "The cost model"):
 *
 * - every HTTP attempt is a request (SDK retries included; throttled attempts too, as SQS and S3 bill
 *   them); `calls` counts logical calls and `errors` those that failed after their retries;
 * - SQS bills each 64 KiB chunk of a request's payload as one request. The chunks of a send are taken
 *   from the serialized request body (a little above the payload: it also holds the queue URL and
 *   JSON framing), those of a ReceiveMessage from the bodies and attributes of the messages returned;
 *   an empty ReceiveMessage is one request and is also counted under `ReceiveMessage(empty)`;
 * - S3 requests fall into the PUT class (PUT, COPY, POST, LIST, multipart) or the GET class (GET,
 *   HEAD and the rest); DELETE and aborts are free;
 * - DynamoDB: with `reportCapacity`, data-plane calls ask for `ReturnConsumedCapacity: TOTAL` and the
 *   capacity units the service reports are added up as write (WRU) or read (RRU) request units. When
 *   none is reported (not asked for; a failed conditional write, which AWS bills all the same; an
 *   emulator that does not report it) they are estimated from the item size in the request: writes 1
 *   WRU per started KiB, reads 1 RRU per started 4 KiB (half for eventually consistent reads) — see
 *   `estimateItemBytes`.
 *
 * A counter is an object its owner passes around, never a global: a function's clients count into
 * their own (lambdas/shared/aws-clients.ts, as `CRAWLER_CALL_COUNTING` says), the local runtime into
 * the one its process shares with the CLI (local/process-meters.ts). `snapshot()` and
 * `diffSnapshots()` cut out a window (e.g. one crawl); `absorb()` adds a window counted elsewhere (a
 * worker thread's, local/worker-relays.ts).
 */

export type S3RequestClass = 'put' | 'get' | 'free';

/** What was counted for one `service:operation`. */
export interface OperationCount {
  /** Logical calls (one `client.send`). */
  calls: number;
  /** HTTP attempts (calls plus SDK retries): what AWS counts as requests. */
  requests: number;
  /** Calls that failed after their retries (a failed conditional write is one). */
  errors: number;
  /** Request body bytes sent, all attempts. */
  bytesOut: number;
  /** SQS: requests as billed (one per started 64 KiB of payload, per attempt). */
  sqsBilledRequests: number;
  /** S3: the request class of the operation. */
  s3Class?: S3RequestClass;
  /** DynamoDB: write request units (reported, else estimated). */
  writeUnits: number;
  /** DynamoDB: read request units (reported, else estimated). */
  readUnits: number;
  /** DynamoDB: calls whose units were estimated from item sizes (the service reported none). */
  estimatedUnits: number;
  /** SQS ReceiveMessage: messages returned. */
  messages: number;
  /** EventBridge PutEvents: events as billed (one per started 64 KiB of each entry, per call). */
  billedEvents: number;
}

export interface CounterSnapshot {
  /** `service:operation` → counts, e.g. `SQS:SendMessageBatch`, `DynamoDB:PutItem`. */
  operations: Record<string, OperationCount>;
}

export const SQS_CHUNK_BYTES = 64 * 1024;
const EVENT_CHUNK_BYTES = 64 * 1024;
const WRITE_UNIT_BYTES = 1024;
const READ_UNIT_BYTES = 4096;

const DYNAMODB_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);
const DYNAMODB_TRANSACT_WRITES = new Set(['TransactWriteItems']);
const DYNAMODB_READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem']);
const DYNAMODB_TRANSACT_READS = new Set(['TransactGetItems']);
const S3_PUT_CLASS =
  /^(Put|Copy|Post|List|CreateMultipartUpload|UploadPart|CompleteMultipartUpload|RestoreObject)/;
const S3_FREE = /^(Delete|AbortMultipartUpload)/;

export function s3RequestClass(operation: string): S3RequestClass {
  if (S3_FREE.test(operation)) return 'free';
  return S3_PUT_CLASS.test(operation) ? 'put' : 'get';
}

export function emptyCount(): OperationCount {
  return {
    calls: 0,
    requests: 0,
    errors: 0,
    bytesOut: 0,
    sqsBilledRequests: 0,
    writeUnits: 0,
    readUnits: 0,
    estimatedUnits: 0,
    messages: 0,
    billedEvents: 0,
  };
}

const NUMERIC_FIELDS = [
  'calls',
  'requests',
  'errors',
  'bytesOut',
  'sqsBilledRequests',
  'writeUnits',
  'readUnits',
  'estimatedUnits',
  'messages',
  'billedEvents',
] as const satisfies ReadonlyArray<keyof OperationCount>;

export class AwsCallCounter {
  readonly #operations = new Map<string, OperationCount>();

  #entry(service: string, operation: string): OperationCount {
    const key = `${service}:${operation}`;
    let entry = this.#operations.get(key);
    if (entry === undefined) {
      entry = emptyCount();
      if (service === 'S3') entry.s3Class = s3RequestClass(operation);
      this.#operations.set(key, entry);
    }
    return entry;
  }

  /** One HTTP attempt of `service:operation` with a request body of `bytes`. */
  attempt(service: string, operation: string, bytes: number): void {
    const entry = this.#entry(service, operation);
    entry.requests++;
    entry.bytesOut += bytes;
    if (service === 'SQS' && operation !== 'ReceiveMessage') {
      entry.sqsBilledRequests += Math.max(1, Math.ceil(bytes / SQS_CHUNK_BYTES));
    }
  }

  /** One logical call, after its retries; `output` when it succeeded. */
  call(service: string, operation: string, input: unknown, output: unknown, failed: boolean): void {
    const entry = this.#entry(service, operation);
    entry.calls++;
    if (failed) entry.errors++;
    if (service === 'SQS' && operation === 'ReceiveMessage') {
      const messages = receivedMessages(output);
      entry.messages += messages.count;
      entry.sqsBilledRequests += Math.max(1, Math.ceil(messages.bytes / SQS_CHUNK_BYTES));
      if (messages.count === 0 && !failed) this.#entry(service, 'ReceiveMessage(empty)').calls++;
    }
    if (service === 'DynamoDB') this.#dynamodbUnits(entry, operation, input, output);
    if (service === 'EventBridge' && operation === 'PutEvents') entry.billedEvents += billedEvents(input);
  }

  #dynamodbUnits(entry: OperationCount, operation: string, input: unknown, output: unknown): void {
    const write = DYNAMODB_WRITES.has(operation) || DYNAMODB_TRANSACT_WRITES.has(operation);
    const read = DYNAMODB_READS.has(operation) || DYNAMODB_TRANSACT_READS.has(operation);
    if (!write && !read) return;
    const reported = reportedUnits(output);
    if (reported !== undefined) {
      if (write) entry.writeUnits += reported;
      else entry.readUnits += reported;
      return;
    }
    entry.estimatedUnits++;
    if (write) {
      const factor = DYNAMODB_TRANSACT_WRITES.has(operation) ? 2 : 1;
      entry.writeUnits += factor * estimateWriteUnits(operation, input);
    } else {
      const consistent = isRecord(input) && input.ConsistentRead === true;
      const bytes = estimateReadBytes(output);
      const units = Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES));
      const factor = DYNAMODB_TRANSACT_READS.has(operation) ? 2 : consistent ? 1 : 0.5;
      entry.readUnits += factor * units;
    }
  }

  snapshot(): CounterSnapshot {
    const operations: Record<string, OperationCount> = {};
    for (const [key, value] of [...this.#operations].sort(([a], [b]) => a.localeCompare(b))) {
      operations[key] = { ...value };
    }
    return { operations };
  }

  /** Adds counts made elsewhere (a `diffSnapshots` window of another thread's counter). */
  absorb(delta: CounterSnapshot): void {
    for (const [key, counts] of Object.entries(delta.operations)) {
      const split = key.indexOf(':');
      const entry = this.#entry(key.slice(0, split), key.slice(split + 1));
      for (const field of NUMERIC_FIELDS) entry[field] += counts[field];
    }
  }

  reset(): void {
    this.#operations.clear();
  }
}

/** `after - before`, per operation; operations with no calls and no requests in the window are left out. */
export function diffSnapshots(before: CounterSnapshot, after: CounterSnapshot): CounterSnapshot {
  const operations: Record<string, OperationCount> = {};
  for (const [key, now] of Object.entries(after.operations)) {
    const then = before.operations[key];
    const delta: OperationCount = { ...now };
    if (then) for (const field of NUMERIC_FIELDS) delta[field] = now[field] - then[field];
    if (delta.calls > 0 || delta.requests > 0) operations[key] = delta;
  }
  return { operations };
}

// --- the middleware ---------------------------------------------------------------------------

/** The parts of an SDK v3 client's middleware stack this module uses (structural, so no @smithy import). */
export interface CountableClient {
  middlewareStack: {
    add(middleware: unknown, options: Record<string, unknown>): void;
  };
}

interface MiddlewareContext {
  clientName?: string;
  commandName?: string;
}

interface MiddlewareArgs {
  input: Record<string, unknown>;
  request?: { body?: unknown };
}

type Next = (args: MiddlewareArgs) => Promise<{ output: unknown }>;

const INITIALIZE_NAME = 'awsCallCounterInitialize';
const ATTEMPT_NAME = 'awsCallCounterAttempt';
const counted = new WeakSet<object>();

function names(context: MiddlewareContext): { service: string; operation: string } {
  const service = (context.clientName ?? 'Unknown').replace(/Client$/, '');
  const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
  return { service, operation };
}

export interface CountOptions {
  /**
   * Add `ReturnConsumedCapacity: TOTAL` to DynamoDB's data-plane calls, so their units are the ones
   * the service reports; without it they are estimated from item sizes and the request goes out as
   * the caller wrote it.
   */
  reportCapacity?: boolean;
}

/** Attaches the counting middleware to `client` (once; a second call is a no-op). Counts go to `counter`. */
export function countAwsCalls<T extends CountableClient>(
  client: T,
  counter: AwsCallCounter,
  options: CountOptions = {},
): T {
  if (counted.has(client)) return client;
  counted.add(client);
  const initialize =
    (next: Next, context: MiddlewareContext) =>
    async (args: MiddlewareArgs): Promise<{ output: unknown }> => {
      const { service, operation } = names(context);
      if (
        options.reportCapacity === true &&
        service === 'DynamoDB' &&
        wantsCapacity(operation) &&
        args.input.ReturnConsumedCapacity === undefined
      ) {
        args = { ...args, input: { ...args.input, ReturnConsumedCapacity: 'TOTAL' } };
      }
      try {
        const result = await next(args);
        counter.call(service, operation, args.input, result.output, false);
        return result;
      } catch (error) {
        counter.call(service, operation, args.input, undefined, true);
        throw error;
      }
    };
  const attempt =
    (next: Next, context: MiddlewareContext) =>
    (args: MiddlewareArgs): Promise<{ output: unknown }> => {
      const { service, operation } = names(context);
      counter.attempt(service, operation, bodyBytes(args.request?.body));
      return next(args);
    };
  client.middlewareStack.add(initialize, { step: 'initialize', name: INITIALIZE_NAME, override: true });
  // After retries and signing: runs once per HTTP attempt, with the final request body.
  client.middlewareStack.add(attempt, {
    step: 'finalizeRequest',
    priority: 'low',
    name: ATTEMPT_NAME,
    override: true,
  });
  return client;
}

function wantsCapacity(operation: string): boolean {
  return (
    DYNAMODB_WRITES.has(operation) ||
    DYNAMODB_READS.has(operation) ||
    DYNAMODB_TRANSACT_WRITES.has(operation) ||
    DYNAMODB_TRANSACT_READS.has(operation)
  );
}

function bodyBytes(body: unknown): number {
  if (typeof body === 'string') return Buffer.byteLength(body);
  if (body instanceof Uint8Array) return body.byteLength;
  if (body instanceof ArrayBuffer) return body.byteLength;
  return 0; // streams: not known up front (the crawler sends none)
}

// --- output and item sizes --------------------------------------------------------------------

/** PutEvents entries as EventBridge bills them: each started 64 KiB of an entry is one event. */
function billedEvents(input: unknown): number {
  const entries = isRecord(input) && Array.isArray(input.Entries) ? input.Entries : [];
  let events = 0;
  for (const entry of entries) {
    const bytes = Buffer.byteLength(JSON.stringify(entry ?? {}));
    events += Math.max(1, Math.ceil(bytes / EVENT_CHUNK_BYTES));
  }
  return events;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function receivedMessages(output: unknown): { count: number; bytes: number } {
  const messages = isRecord(output) && Array.isArray(output.Messages) ? output.Messages : [];
  let bytes = 0;
  for (const message of messages) {
    if (!isRecord(message)) continue;
    if (typeof message.Body === 'string') bytes += Buffer.byteLength(message.Body);
    if (isRecord(message.MessageAttributes))
      bytes += Buffer.byteLength(JSON.stringify(message.MessageAttributes));
  }
  return { count: messages.length, bytes };
}

function reportedUnits(output: unknown): number | undefined {
  if (!isRecord(output)) return undefined;
  const consumed = output.ConsumedCapacity;
  const list = Array.isArray(consumed) ? consumed : consumed === undefined ? [] : [consumed];
  let total: number | undefined;
  for (const item of list) {
    if (isRecord(item) && typeof item.CapacityUnits === 'number') total = (total ?? 0) + item.CapacityUnits;
  }
  return total;
}

/**
 * Estimated WRU of a write from its request: the item (PutItem), the key plus the values it sets
 * (UpdateItem: the item after the update is not known, so this is a floor), the key (DeleteItem), or
 * every request of a batch; 1 WRU per started KiB, at least 1 per item.
 */
export function estimateWriteUnits(operation: string, input: unknown): number {
  if (!isRecord(input)) return 1;
  const units = (bytes: number) => Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));
  if (operation === 'PutItem') return units(estimateItemBytes(input.Item));
  if (operation === 'UpdateItem') {
    return units(estimateItemBytes(input.Key) + estimateItemBytes(input.ExpressionAttributeValues));
  }
  if (operation === 'BatchWriteItem' && isRecord(input.RequestItems)) {
    let total = 0;
    for (const requests of Object.values(input.RequestItems)) {
      if (!Array.isArray(requests)) continue;
      for (const request of requests) {
        if (!isRecord(request)) continue;
        const put = isRecord(request.PutRequest) ? request.PutRequest.Item : undefined;
        const del = isRecord(request.DeleteRequest) ? request.DeleteRequest.Key : undefined;
        total += units(estimateItemBytes(put ?? del));
      }
    }
    return Math.max(1, total);
  }
  return units(estimateItemBytes(input.Key));
}

function estimateReadBytes(output: unknown): number {
  if (!isRecord(output)) return 0;
  if (isRecord(output.Item)) return estimateItemBytes(output.Item);
  if (Array.isArray(output.Items))
    return output.Items.reduce((sum: number, item) => sum + estimateItemBytes(item), 0);
  return 0;
}

/**
 * DynamoDB's item size rule, on the low-level attribute-value shape: each attribute name's UTF-8
 * length plus its value (S: UTF-8 length; N: about 1 byte per 2 digits + 1; B: length; BOOL/NULL: 1;
 * M/L: 3 + their contents + 1 per element; SS/NS/BS: the sum of their members).
 */
export function estimateItemBytes(item: unknown): number {
  if (!isRecord(item)) return 0;
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) bytes += Buffer.byteLength(name) + valueBytes(value);
  return bytes;
}

function valueBytes(value: unknown): number {
  if (!isRecord(value)) return 0;
  if (typeof value.S === 'string') return Buffer.byteLength(value.S);
  if (typeof value.N === 'string') return numberBytes(value.N);
  if (value.B instanceof Uint8Array) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (Array.isArray(value.SS)) return value.SS.reduce((s: number, v) => s + Buffer.byteLength(String(v)), 0);
  if (Array.isArray(value.NS)) return value.NS.reduce((s: number, v) => s + numberBytes(String(v)), 0);
  if (Array.isArray(value.BS)) {
    return value.BS.reduce((s: number, v) => s + (v instanceof Uint8Array ? v.byteLength : 0), 0);
  }
  if (Array.isArray(value.L)) return 3 + value.L.reduce((s: number, v) => s + 1 + valueBytes(v), 0);
  if (isRecord(value.M)) return 3 + estimateItemBytes(value.M) + Object.keys(value.M).length;
  return 0;
}

function numberBytes(text: string): number {
  const digits = text.replace(/[^0-9]/g, '').replace(/^0+/, '').length;
  return Math.ceil(digits / 2) + 1;
}
