/**
 * The strict layer in front of dynalite (DynamoDB): item sizes counted as DynamoDB counts them, and
 * optional throttling of a hot partition, so a local run meets what AWS does to it.
 */

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { crc32 } from 'node:zlib';
import { DYNAMODB_MAX_ITEM_BYTES, type DynamoValue, dynamoItemSize } from './strict-limits.ts';

/**
 * `<rate>` or `<rate>:<key prefix>`: throttle that fraction (0..1) of the data requests whose key
 * (a partition or sort key value of the request) starts with the prefix (default: every request).
 * E.g. `0.2:CRAWL#` throttles a fifth of the requests to the crawl items' partition.
 */
export const DYNAMODB_THROTTLE_ENV = 'CRAWLER_LOCAL_DYNAMODB_THROTTLE';

export interface ThrottleOptions {
  /** Fraction of the matching requests answered ProvisionedThroughputExceededException, 0..1; read per request. */
  rate: number;
  /** Only requests naming a key value that starts with this (the hot partition); default every request. */
  keyPrefix?: string;
  /** Source of randomness in [0, 1); default Math.random. */
  random?: () => number;
}

/** The throttle of `CRAWLER_LOCAL_DYNAMODB_THROTTLE`, or undefined when unset; throws when malformed. */
export function throttleFromEnv(env: Record<string, string | undefined>): ThrottleOptions | undefined {
  const text = env[DYNAMODB_THROTTLE_ENV]?.trim();
  if (!text) return undefined;
  const colon = text.indexOf(':');
  const rateText = colon < 0 ? text : text.slice(0, colon);
  const rate = Number(rateText);
  if (rateText === '' || !(rate >= 0 && rate <= 1)) {
    throw new Error(`${DYNAMODB_THROTTLE_ENV}=${text}: expected <rate 0..1>[:<key prefix>], e.g. 0.2:CRAWL#`);
  }
  return colon < 0 ? { rate } : { rate, keyPrefix: text.slice(colon + 1) };
}

let itemSizePatched = false;

/**
 * dynalite counts a string's size in UTF-16 code units: an item of 300,000 'é' (600,000 bytes) passes
 * its 400 KB check. Its checks (PutItem, UpdateItem after the update, BatchWriteItem) all call the db
 * module's `itemSize(item)`; that one-argument form is replaced by DynamoDB's count. The other forms
 * (capacity and page size estimates) keep dynalite's own.
 */
export function patchDynaliteItemSize(): void {
  if (itemSizePatched) return;
  const require = createRequire(import.meta.url);
  const db: unknown = require('dynalite/db/index.js');
  const original: unknown = typeof db === 'object' && db !== null ? Reflect.get(db, 'itemSize') : undefined;
  if (
    typeof original !== 'function' ||
    !(Reflect.get(db as object, 'MAX_SIZE') === DYNAMODB_MAX_ITEM_BYTES)
  ) {
    throw new Error('dynalite internals changed (db.itemSize); local/strict-dynamodb.ts needs updating');
  }
  Reflect.set(db as object, 'itemSize', (item: Record<string, DynamoValue>, ...rest: unknown[]) =>
    rest.some((arg) => arg !== undefined) ? original(item, ...rest) : dynamoItemSize(item),
  );
  itemSizePatched = true;
}

/** The actions that read or write items: the ones DynamoDB throttles on a hot partition. */
const DATA_ACTIONS = new Set([
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'Query',
  'BatchGetItem',
  'BatchWriteItem',
]);
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);

/**
 * Puts the throttle in front of the server's request listeners: a matching request is answered
 * ProvisionedThroughputExceededException (400), the exception DynamoDB returns when a partition's
 * key range exceeds its throughput, in on-demand and provisioned mode alike, before anything is
 * done. The SDKs retry it; a request that was throttled did not happen.
 */
export function throttleServer(server: Server, options: ThrottleOptions): void {
  const random = options.random ?? Math.random;
  const prefix = options.keyPrefix ?? '';
  const listeners = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  const pass = (req: IncomingMessage, res: ServerResponse) => {
    for (const listener of listeners) listener.call(server, req, res);
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const action = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
    if (!DATA_ACTIONS.has(action) || options.rate <= 0) {
      pass(req, res);
      return;
    }
    // The key is in the body: read it, decide, then hand dynalite the same body as its events.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      req.removeAllListeners('data');
      const body = Buffer.concat(chunks);
      const table = hotTable(body, prefix);
      if (table !== undefined && random() < options.rate) {
        throttled(res, table, WRITES.has(action));
        return;
      }
      pass(req, res);
      req.emit('data', body);
      req.emit('end');
    });
  });
}

/** The table a request names when one of its key values starts with `prefix`; undefined otherwise. */
function hotTable(body: Buffer, prefix: string): string | undefined {
  let request: Record<string, unknown>;
  try {
    request = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined; // dynalite answers SerializationException
  }
  const tables = new Set<string>();
  if (typeof request.TableName === 'string') tables.add(request.TableName);
  for (const name of Object.keys((request.RequestItems as object | undefined) ?? {})) tables.add(name);
  const table = [...tables][0] ?? '';
  if (prefix === '') return table;
  const values = JSON.stringify([
    request.Key,
    request.Item,
    request.ExpressionAttributeValues,
    request.RequestItems,
  ]);
  // Any string value of a key, an item or the key condition's values: `{"S":"<prefix>...`.
  return values.includes(`{"S":${JSON.stringify(prefix).slice(0, -1)}`) ? table : undefined;
}

function throttled(res: ServerResponse, table: string, write: boolean): void {
  const body = JSON.stringify({
    __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
    message:
      'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
    ThrottlingReasons: [
      {
        reason: write ? 'TableWriteKeyRangeThroughputExceeded' : 'TableReadKeyRangeThroughputExceeded',
        resource: `arn:aws:dynamodb:us-east-1:000000000000:table/${table}`,
      },
    ],
  });
  res.writeHead(400, {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': Buffer.byteLength(body),
    'x-amz-crc32': String(crc32(body)),
    'x-amzn-requestid': randomUUID(),
  });
  res.end(body);
}
