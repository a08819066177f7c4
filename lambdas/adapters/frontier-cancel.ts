/**
 * Cancelling a crawl (docs/frontier.md, "Counters"): the counters item's `state` goes running →
 * cancelled with one conditional update, and the fetch function checks it per URL a visit decides (and
 * per task message it admits) through a small per-container cache, so a cancelled crawl's remaining
 * URLs end as `cancelled` results without touching robots.txt, the host's pace or the network. Its
 * hosts still drain, so every URL keeps exactly one result.
 *
 * A cancelled crawl stays cancelled: every counter write keeps an existing `state`
 * (`if_not_exists`), and completion only flips a running crawl.
 */
import { type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { CrawlStateCheck, CrawlStateName } from '../core/crawl/index.ts';
import {
  ATTR,
  CRAWL_STATE,
  configKey,
  countersKey,
  expiresAt,
  type Item,
  isConditionFailed,
  names,
  resolveOptions,
  S,
  str,
} from './frontier-schema.ts';

export type CancelOutcome =
  /** This call flipped the crawl from running to cancelled. */
  | { status: 'cancelled'; endedAt: string }
  /** It was cancelled before (by another call). */
  | { status: 'already-cancelled'; endedAt?: string }
  /** It had finished: nothing to cancel. */
  | { status: 'complete'; endedAt?: string }
  /** No such crawl: neither counters nor a stored config. */
  | { status: 'unknown' };

/**
 * Marks the crawl cancelled (state, endedAt), exactly once: one conditional UpdateItem on the counters
 * item. A crawl that has a stored config but no counters yet (nothing admitted so far) gets a
 * counters item born cancelled, so its URLs visited or sent later are cancelled too.
 */
export async function cancelCrawl(
  dynamodb: DynamoDBClient,
  table: string,
  crawlId: string,
  now: Date = new Date(),
): Promise<CancelOutcome> {
  const endedAt = now.toISOString();
  // Kept as long as the crawl's other items (the frontier TTL after its last write).
  const ttl = expiresAt(resolveOptions({ clock: () => now.getTime() }));
  try {
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: table,
        Key: countersKey(crawlId),
        UpdateExpression: `SET #${ATTR.state} = :cancelled, #${ATTR.endedAt} = :endedAt, #${ATTR.expiresAt} = :expiresAt`,
        ConditionExpression: `attribute_exists(#${ATTR.pk}) AND (attribute_not_exists(#${ATTR.state}) OR #${ATTR.state} = :running)`,
        ExpressionAttributeNames: names(ATTR.pk, ATTR.state, ATTR.endedAt, ATTR.expiresAt),
        ExpressionAttributeValues: {
          ':cancelled': S(CRAWL_STATE.cancelled),
          ':running': S(CRAWL_STATE.running),
          ':endedAt': S(endedAt),
          ':expiresAt': ttl,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { status: 'cancelled', endedAt };
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    // AWS returns the item that failed the condition; emulators may not, then read it.
    const item = err.Item ?? (await readCounters(dynamodb, table, crawlId, true));
    if (item !== undefined) return finished(item);
  }
  // No counters item: a crawl only exists if its config was stored.
  const config = await dynamodb.send(
    new GetItemCommand({
      TableName: table,
      Key: configKey(crawlId),
      ConsistentRead: true,
      ProjectionExpression: '#pk',
      ExpressionAttributeNames: { '#pk': 'pk' },
    }),
  );
  if (config.Item === undefined) return { status: 'unknown' };
  try {
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: table,
        Key: countersKey(crawlId),
        UpdateExpression: `SET #${ATTR.state} = :cancelled, #${ATTR.endedAt} = :endedAt, #${ATTR.startedAt} = :endedAt, #${ATTR.expiresAt} = :expiresAt`,
        ConditionExpression: `attribute_not_exists(#${ATTR.pk})`,
        ExpressionAttributeNames: names(ATTR.pk, ATTR.state, ATTR.endedAt, ATTR.startedAt, ATTR.expiresAt),
        ExpressionAttributeValues: {
          ':cancelled': S(CRAWL_STATE.cancelled),
          ':endedAt': S(endedAt),
          ':expiresAt': ttl,
        },
      }),
    );
    return { status: 'cancelled', endedAt };
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    // The crawl's first counter write landed in between: cancel that one.
    return cancelCrawl(dynamodb, table, crawlId, now);
  }
}

function finished(item: Item): CancelOutcome {
  const state = str(item, ATTR.state);
  const endedAt = str(item, ATTR.endedAt);
  const when = endedAt === undefined ? {} : { endedAt };
  if (state === CRAWL_STATE.complete) return { status: 'complete', ...when };
  return { status: 'already-cancelled', ...when };
}

async function readCounters(
  dynamodb: DynamoDBClient,
  table: string,
  crawlId: string,
  consistent: boolean,
): Promise<Item | undefined> {
  const out = await dynamodb.send(
    new GetItemCommand({
      TableName: table,
      Key: countersKey(crawlId),
      ConsistentRead: consistent,
      ProjectionExpression: `#${ATTR.state}, #${ATTR.endedAt}`,
      ExpressionAttributeNames: names(ATTR.state, ATTR.endedAt),
    }),
  );
  return out.Item;
}

export interface CancelCacheOptions {
  /** How long one answer is trusted per container. Default 5 s: a cancel takes effect within it. */
  ttlMs?: number;
  /** Crawls remembered per container (oldest dropped first). Default 1000. */
  maxEntries?: number;
  /** Epoch ms. Default Date.now. */
  clock?: () => number;
  /** Told about a failed read (which then counts as "not cancelled"); e.g. a warning log line. */
  onError?: (crawlId: string, error: unknown) => void;
}

/**
 * A crawl's state with a per-container cache: one eventually consistent GetItem (0.5 read unit) per
 * crawl per `ttlMs`, shared by every visit and task message of the crawl in the container (concurrent
 * misses share one read).
 * A cancelled or complete crawl stays so, and that answer is cached for good.
 *
 * It fails open: a read that fails (after the SDK's retries) counts as `running` for one TTL, so a
 * DynamoDB hiccup never holds up or fails a running crawl's visits; at worst a cancel takes effect
 * one TTL later. The failure is counted in `readErrors` and passed to `onError`.
 */
export class CrawlCancellation implements CrawlStateCheck {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;
  private readonly onError: ((crawlId: string, error: unknown) => void) | undefined;
  private readonly cache = new Map<string, { at: number; answer: Promise<CrawlStateName> }>();
  /** GetItem calls made (for tests and metrics). */
  reads = 0;
  /** Reads that failed and were taken as `running`. */
  readErrors = 0;

  constructor(dynamodb: DynamoDBClient, table: string, options: CancelCacheOptions = {}) {
    this.dynamodb = dynamodb;
    this.table = table;
    this.ttlMs = options.ttlMs ?? 5_000;
    this.maxEntries = Math.max(1, options.maxEntries ?? 1_000);
    this.clock = options.clock ?? Date.now;
    this.onError = options.onError;
  }

  stateOf(crawlId: string): Promise<CrawlStateName> {
    const now = this.clock();
    const hit = this.cache.get(crawlId);
    if (hit && now - hit.at < this.ttlMs) return hit.answer;
    const answer = this.read(crawlId);
    const entry = { at: now, answer };
    this.cache.delete(crawlId);
    this.cache.set(crawlId, entry);
    void answer.then((state) => {
      // Cancelled and complete are final: keep them however old they get.
      if (state !== CRAWL_STATE.running && this.cache.get(crawlId) === entry)
        entry.at = Number.POSITIVE_INFINITY;
    });
    if (this.cache.size > this.maxEntries) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return answer;
  }

  private async read(crawlId: string): Promise<CrawlStateName> {
    this.reads++;
    try {
      const state = str(await readCounters(this.dynamodb, this.table, crawlId, false), ATTR.state);
      return state === CRAWL_STATE.cancelled || state === CRAWL_STATE.complete ? state : CRAWL_STATE.running;
    } catch (error) {
      this.readErrors++;
      this.onError?.(crawlId, error);
      return CRAWL_STATE.running;
    }
  }
}
