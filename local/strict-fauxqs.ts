/**
 * The strict layer in front of fauxqs (SQS + S3): one fastify preHandler hook, run on the parsed
 * request before fauxqs' own handler, so no extra hop or parse. It answers as AWS does where fauxqs is
 * lenient: SQS message limits (strict-limits.ts) and S3's `If-None-Match: *` on PutObject (412).
 * And one repair of fauxqs' SQLite store (`repairSqsPersistence`), where fauxqs loses messages.
 */
import { randomUUID } from 'node:crypto';
import type { buildApp } from 'fauxqs';
import {
  type AwsError,
  checkSqsBatch,
  checkSqsMessage,
  type QueueLimits,
  type SqsMessageInput,
} from './strict-limits.ts';

type App = ReturnType<typeof buildApp>;

/** What of fauxqs' stores the layer reads. */
export interface StrictStores {
  sqs: { getQueue(url: string): QueueLike | undefined };
  s3: { buckets: Map<string, Map<string, unknown>> };
}

interface QueueLike {
  attributes: Record<string, string>;
}

interface Reply {
  status(code: number): Reply;
  header(name: string, value: string): Reply;
  send(payload: string): Reply;
}

interface HookRequest {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  params: unknown;
  query: unknown;
}

export function installStrictLimits(app: App, stores: StrictStores): void {
  // Synchronous (done-callback) hook: fauxqs' handlers are synchronous too, so a check and the write
  // it guards run without a turn of the event loop between them (If-None-Match is atomic).
  app.addHook('preHandler', (request, reply, done) => {
    const req = request as unknown as HookRequest;
    const answer = req.method === 'PUT' ? checkS3Put(req, stores) : checkSqs(req, stores);
    if (answer) {
      if (answer.queryError) (reply as unknown as Reply).header('x-amzn-query-error', answer.queryError);
      (reply as unknown as Reply)
        .status(answer.status)
        .header('content-type', answer.contentType)
        .header('x-amzn-requestid', answer.requestId)
        .header('x-amz-request-id', answer.requestId)
        .send(answer.body);
      return;
    }
    done();
  });
}

interface Answer {
  status: number;
  contentType: string;
  requestId: string;
  /** `x-amzn-query-error` of an SQS error. */
  queryError?: string;
  body: string;
}

function checkSqs(req: HookRequest, stores: StrictStores): Answer | undefined {
  const target = req.headers['x-amz-target'];
  if (target !== 'AmazonSQS.SendMessage' && target !== 'AmazonSQS.SendMessageBatch') return undefined;
  const body = req.body as { QueueUrl?: unknown; Entries?: unknown } & SqsMessageInput;
  if (typeof body !== 'object' || body === null || typeof body.QueueUrl !== 'string') return undefined;
  const queue = stores.sqs.getQueue(body.QueueUrl);
  if (!queue) return undefined; // fauxqs answers QueueDoesNotExist
  const limits: QueueLimits = { maximumMessageSize: Number(queue.attributes.MaximumMessageSize) };
  const error =
    target === 'AmazonSQS.SendMessage'
      ? checkSqsMessage(body, limits)
      : Array.isArray(body.Entries)
        ? checkSqsBatch(body.Entries as SqsMessageInput[], limits)
        : undefined;
  return error ? sqsError(error) : undefined;
}

/**
 * The SQS JSON protocol's error as SQS sends it: `__type` names the exception, and the query-compatible
 * header the code the SDKs report (`InvalidParameterValue` is a generic coral error, not an SQS one).
 */
function sqsError(error: AwsError): Answer {
  const generic = error.code === 'InvalidParameterValue';
  return {
    status: error.status,
    contentType: 'application/x-amz-json-1.0',
    requestId: randomUUID(),
    queryError: `${generic ? '' : 'AWS.SimpleQueueService.'}${error.code};Sender`,
    body: JSON.stringify({
      __type: generic
        ? 'com.amazon.coral.service#InvalidParameterValueException'
        : `com.amazonaws.sqs#${error.code}`,
      message: error.message,
    }),
  };
}

/**
 * PutObject with `If-None-Match: *` writes only when no object has the key; else 412
 * PreconditionFailed (S3 User Guide, "Conditional writes"). Copies, part uploads and renames are
 * left to fauxqs.
 */
function checkS3Put(req: HookRequest, stores: StrictStores): Answer | undefined {
  if (req.headers['if-none-match'] !== '*' || req.headers['x-amz-copy-source'] !== undefined)
    return undefined;
  const params = req.params as { bucket?: string; '*'?: string };
  const key = params['*'];
  if (!params.bucket || !key) return undefined;
  const query = (req.query ?? {}) as Record<string, unknown>;
  if ('uploadId' in query || 'renameObject' in query) return undefined;
  if (!stores.s3.buckets.get(params.bucket)?.has(key)) return undefined;
  const requestId = randomUUID().replaceAll('-', '').toUpperCase().slice(0, 16);
  return {
    status: 412,
    contentType: 'application/xml',
    requestId,
    body:
      '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed</Code>' +
      '<Message>At least one of the pre-conditions you specified did not hold</Message>' +
      `<Condition>If-None-Match</Condition><RequestId>${requestId}</RequestId><HostId>local</HostId></Error>`,
  };
}

/** What `repairSqsPersistence` needs of fauxqs' PersistenceManager. */
export interface SqsPersistenceLike {
  db: { prepare(sql: string): { run(...values: Array<string | null>): unknown } };
  updateMessageReady(messageId: string): void;
}

/**
 * Works around a fauxqs 2.4 bug: making an in-flight message visible again (ChangeMessageVisibility
 * to 0) writes NULL into `sqs_messages.approximate_receive_count`, a NOT NULL column. The write throws
 * after the message left the in-flight set and before it rejoined the queue, so it was gone from the
 * queue until a restart reloaded it (and a batch failed as a whole). The row only needs its receipt
 * handle and deadline cleared; its receive count is already stored.
 */
export function repairSqsPersistence(persistence: SqsPersistenceLike): void {
  const ready = persistence.db.prepare(
    'UPDATE sqs_messages SET receipt_handle = NULL, visibility_deadline = NULL WHERE message_id = ?',
  );
  persistence.updateMessageReady = (messageId) => {
    ready.run(messageId);
  };
}
