/**
 * The FrontierTable's item layout (docs/frontier.md) in one place: keys, attribute names, the values
 * of `st` and `state`, and the small helpers every frontier adapter shares. Expressions always refer
 * to attributes through `#name` placeholders (`url`, `state`, `next`... are DynamoDB reserved words).
 */
import { createHash } from 'node:crypto';
import {
  type AttributeValue,
  BatchGetItemCommand,
  type DynamoDBClient,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import {
  backoffPause,
  FRONTIER_LIMITS,
  FRONTIER_SHARDS,
  OUTCOMES,
  type Outcome,
  RETRY_BACKOFF,
  ROBOTS_LIMITS,
  retryStep,
} from '../core/base/index.ts';
import type { CrawlCounters } from '../core/crawl/index.ts';

export type Item = Record<string, AttributeValue>;

/** Every attribute name the frontier adapters read or write. */
export const ATTR = {
  pk: 'pk',
  sk: 'sk',
  expiresAt: 'expiresAt',
  // URL items
  url: 'url',
  depth: 'depth',
  st: 'st',
  parent: 'parent',
  // redirect hops that led to the URL (absent: none)
  redirects: 'redirects',
  // leases of robots and host items
  lease: 'lease',
  // fetch attempts made so far, and when the next may start (set when a fetch is postponed for a
  // retry; retryAt is also the robots item's retry time)
  attempts: 'att',
  retryAt: 'retryAt',
  outcome: 'outcome',
  // the winning result's id and the index part its line is in (set by finalize)
  rid: 'rid',
  part: 'part',
  // carried links (docs/frontier.md, "Skipped links"): true on a skipped link created done, its line
  // carried by its page's result; on a done page, how many links its winning result carried
  carried: 'carried',
  kids: 'kids',
  // a re-crawl's URL: its capture in the crawl it follows, as JSON (core/crawl/recrawl.ts)
  prior: 'prior',
  // crawl counters (bytes and requests also on done URL items: the winning result's)
  queued: 'queued',
  done: 'done',
  admitted: 'admitted',
  bytes: 'bytes',
  requests: 'requests',
  // Micro-dollars of counted AWS calls, charged by the fetch function against the crawl's budget (core/crawl/budget.ts)
  charged: 'charged',
  state: 'state',
  startedAt: 'startedAt',
  endedAt: 'endedAt',
  // a host's pace (host items and DONE items)
  next: 'next',
  pausedUntil: 'pausedUntil',
  // robots
  policy: 'policy',
  policyGz: 'policyGz',
  policyOversized: 'policyOversized',
  fetchedAt: 'fetchedAt',
  failures: 'failures',
  // a part of a crawl's stored scope: its seeds' scope keys, one a line, gzip (crawl-scope-store.ts)
  scopeGz: 'scopeGz',
  // host items of visits (docs/design/host-visits.md): admissions so far, the visit holding the
  // lease, when the last visit message sent is due and who claimed sending it, URLs awaiting results
  wake: 'wake',
  holder: 'holder',
  visitAt: 'visitAt',
  visitBy: 'visitBy',
  sent: 'sent',
  inflight: 'inflight',
  // handed back only to await results in flight (HostVisits.hurry)
  awaiting: 'aw',
  // the ticket of the message the live lease was taken with (a copy of it: HostBusy's `copy`)
  took: 'took',
  // where the last visit stopped in the host's URL partition (a URL key; absent: at its start)
  cursor: 'cursor',
  // a page of the host being rendered: the hold's token and end (HostVisits.endRender)
  renderHold: 'rnd',
  renderHoldUntil: 'rndUntil',
  // DONE items of drained hosts (also `o_<outcome>`, bytes, requests, next, pausedUntil)
  total: 'total',
  parts: 'parts',
  // schedule items (adapters/schedule-store.ts): the definition, the run started last and when it
  // was claimed, the last completed run, runs started and skipped
  schedule: 'schedule',
  running: 'running',
  claimedAt: 'claimedAt',
  last: 'last',
  runs: 'runs',
  skipped: 'skipped',
  skippedAt: 'skippedAt',
} as const;

export type AttrName = (typeof ATTR)[keyof typeof ATTR];

/** `o_<outcome>`: the per-outcome counters on the counters item. */
export const outcomeAttr = (outcome: Outcome): string => `o_${outcome}`;

/** `st` of URL items: to fetch, admitted as skipped (its result on its way), finalized. */
export const URL_ST = { new: 'new', held: 'held', done: 'done' } as const;
/** `st` of robots items. */
export const ROBOTS_ST = { fetching: 'fetching', ready: 'ready', unavailable: 'unavailable' } as const;
/** `state` of the counters item. */
export const CRAWL_STATE = { running: 'running', complete: 'complete', cancelled: 'cancelled' } as const;

/** The partition of a crawl's own items (config, counters, scope): `CRAWL#<crawlId>`. */
export const CRAWL_PK_PREFIX = 'CRAWL#';
export const crawlPk = (crawlId: string): string => `${CRAWL_PK_PREFIX}${crawlId}`;
/**
 * The crawl's host, `DONE#` and robots items are spread over FRONTIER_SHARDS partitions,
 * `CRAWL#<crawlId>#NN` (NN = 00..31), by a stable hash of the host (robots: the origin): one key
 * takes at most 1,000 write units/s, which every visit's writes on one key filled at ~450 pages/s.
 * A host's `HOST#` and `DONE#` items share its shard. Listing them reads every shard (`crawlShardPks`).
 */
export const crawlShardPk = (crawlId: string, shard: number): string =>
  `${crawlPk(crawlId)}#${String(shard).padStart(2, '0')}`;
/** The shard of a host or origin: the first 4 bytes of its SHA-256, modulo FRONTIER_SHARDS. */
export const shardOf = (name: string): number =>
  createHash('sha256').update(name, 'utf8').digest().readUInt32BE(0) % FRONTIER_SHARDS;
/** Tries of each read of a shard (after the SDK's own): frontier-schema.ts `queryShards`. */
export const SHARD_READ_ATTEMPTS = 3;
/** Every shard partition of a crawl, in shard order. */
export const crawlShardPks = (crawlId: string): string[] =>
  Array.from({ length: FRONTIER_SHARDS }, (_, shard) => crawlShardPk(crawlId, shard));
/**
 * The crawl registry (`crawler list`): one item per submitted crawl in this partition, sort key the
 * crawl id, no other attribute (adapters/frontier-crawls.ts).
 */
export const CRAWLS_PK = 'CRAWLS';
export const crawlRegistryKey = (crawlId: string): Item => ({ pk: { S: CRAWLS_PK }, sk: { S: crawlId } });
/** Schedules (`crawler schedule add`): one item per schedule in this partition, sort key its name. */
export const SCHEDULES_PK = 'SCHEDULES';
export const scheduleKey = (name: string): Item => ({ pk: { S: SCHEDULES_PK }, sk: { S: name } });
/** Sort keys of the crawl's config and counters items. */
export const CONFIG_SK = 'CONFIG';
export const COUNTERS_SK = 'COUNTERS';

/**
 * The partition of a host's URL items: `URLS#<crawlId>#<host>` (host: core/crawl/politeness.ts
 * `frontierHost`). Crawl ids have no `#`, so `URLS#<crawlId>#` prefixes exactly the crawl's partitions.
 */
export const urlsPk = (crawlId: string, host: string): string => `URLS#${crawlId}#${host}`;

const key = (crawlId: string, sk: string): Item => ({ pk: { S: crawlPk(crawlId) }, sk: { S: sk } });
/** A URL item: in its host's partition, sort key the URL's dedup key (64 hex). */
export const urlKey = (crawlId: string, host: string, urlKeyHex: string): Item => ({
  pk: { S: urlsPk(crawlId, host) },
  sk: { S: urlKeyHex },
});
export const countersKey = (crawlId: string): Item => key(crawlId, COUNTERS_SK);
export const configKey = (crawlId: string): Item => key(crawlId, CONFIG_SK);
/** Sort key prefixes of a crawl's per-host and per-origin items (a Query by prefix lists them). */
export const HOST_SK_PREFIX = 'HOST#';
export const DONE_SK_PREFIX = 'DONE#';
export const ROBOTS_SK_PREFIX = 'ROBOTS#';
const shardKey = (crawlId: string, name: string, sk: string): Item => ({
  pk: { S: crawlShardPk(crawlId, shardOf(name)) },
  sk: { S: sk },
});
/** The DynamoDB key of a host's item (not politeness.ts `hostKey`, the URL's host it is named by). */
export const hostItemKey = (crawlId: string, host: string): Item =>
  shardKey(crawlId, host, `${HOST_SK_PREFIX}${host}`);
export const robotsKey = (crawlId: string, origin: string): Item =>
  shardKey(crawlId, origin, `${ROBOTS_SK_PREFIX}${origin}`);
/** The parts of a crawl's stored scope (crawls of seeds from a file): `SCOPE#0000`, `SCOPE#0001`, ... */
export const SCOPE_SK_PREFIX = 'SCOPE#';
export const scopePartKey = (crawlId: string, part: number): Item =>
  key(crawlId, `${SCOPE_SK_PREFIX}${String(part).padStart(4, '0')}`);

/** `{ '#a': 'a', ... }` for the attributes an expression mentions as `#a`. */
export function names(...attrs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const attr of attrs) out[`#${attr}`] = attr;
  return out;
}

export const S = (value: string): AttributeValue => ({ S: value });
export const N = (value: number): AttributeValue => {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  return { N: String(value) };
};

export function num(item: Item | undefined, attr: string): number | undefined {
  const raw = item?.[attr]?.N;
  return raw === undefined ? undefined : Number(raw);
}

export function str(item: Item | undefined, attr: string): string | undefined {
  return item?.[attr]?.S;
}

/** Sets each `[field, attribute]` of `fields` that `item` has as a number on `target`; absent ones are left out. */
export function copyPresentNumbers<K extends string>(
  target: Partial<Record<K, number>>,
  item: Item | undefined,
  fields: ReadonlyArray<readonly [K, string]>,
): void {
  for (const [field, attr] of fields) {
    const value = num(item, attr);
    if (value !== undefined) target[field] = value;
  }
}

export function isConditionFailed(err: unknown): err is Error & { Item?: Item } {
  return err instanceof Error && err.name === 'ConditionalCheckFailedException';
}

export interface FrontierStoreOptions {
  /**
   * A client that makes one attempt per call (maxAttempts 1), for the counter ADDs: an ADD retried
   * by the SDK after its first attempt took effect (the answer was lost) counts twice, and a
   * `queued` counted twice keeps the crawl from ever completing. Throttled calls, which never take
   * effect, are still retried (`retryThrottled`). Default: the store's own client.
   */
  singleAttemptClient?: DynamoDBClient;
  /**
   * How long a frontier item lives after its last write, via the table's TTL attribute `expiresAt`
   * (epoch seconds). Default 30 days: a crawl that sits idle longer loses its frontier.
   */
  ttlSeconds?: number;
  /** Conditional puts in flight at once per `admit` call. Default 16. */
  admitConcurrency?: number;
  /** Attempts of an optimistic update (the page budget) before giving up with an error. Default 100. */
  maxConflictAttempts?: number;
  /** A `ready` robots entry older than this may be claimed again (RFC 9309: cache at most 24 h). Default 24 h. */
  robotsMaxAgeMs?: number;
  /** Clock for `expiresAt`, `startedAt` and `endedAt` (epoch ms). Default Date.now. */
  clock?: () => number;
}

export interface ResolvedOptions {
  singleAttemptClient: DynamoDBClient | undefined;
  ttlSeconds: number;
  admitConcurrency: number;
  maxConflictAttempts: number;
  robotsMaxAgeMs: number;
  clock: () => number;
}

export const DEFAULT_TTL_SECONDS = 30 * 24 * 3600;

export function resolveOptions(options: FrontierStoreOptions = {}): ResolvedOptions {
  return {
    singleAttemptClient: options.singleAttemptClient,
    ttlSeconds: options.ttlSeconds ?? DEFAULT_TTL_SECONDS,
    admitConcurrency: Math.max(1, Math.floor(options.admitConcurrency ?? 16)),
    maxConflictAttempts: Math.max(1, Math.floor(options.maxConflictAttempts ?? 100)),
    robotsMaxAgeMs: options.robotsMaxAgeMs ?? ROBOTS_LIMITS.ttlMs,
    clock: options.clock ?? Date.now,
  };
}

/** BatchGetItem reads at most 100 keys a call. */
const BATCH_GET_KEYS = 100;
/** Rounds of a BatchGetItem whose keys DynamoDB keeps leaving unprocessed before an `exact` read gives up. */
const UNPROCESSED_ROUNDS = 5;

/**
 * How FrontierTableAdapter.batchGet reads. `hint`: eventually consistent; keys DynamoDB leaves
 * unprocessed (throttling) are read once more, then left out, for a caller that treats a missing item
 * as one to look at another way. `exact`: consistent; unprocessed keys are asked again after a pause,
 * up to UNPROCESSED_ROUNDS times, then the read fails.
 */
export type BatchRead = 'hint' | 'exact';

/** What every FrontierTable adapter holds: the client, the table and the resolved options. */
export abstract class FrontierTableAdapter {
  protected readonly dynamodb: DynamoDBClient;
  protected readonly table: string;
  protected readonly options: ResolvedOptions;

  constructor(dynamodb: DynamoDBClient, table: string, options: ResolvedOptions) {
    this.dynamodb = dynamodb;
    this.table = table;
    this.options = options;
  }

  /** The items of `keys` that exist (`attrs` projected): BatchGetItem calls of 100 keys, each tried as a step. */
  protected async batchGet(
    keys: readonly Item[],
    attrs: readonly string[],
    read: BatchRead,
  ): Promise<Item[]> {
    const found: Item[] = [];
    const rounds = read === 'exact' ? UNPROCESSED_ROUNDS : 2;
    for (let start = 0; start < keys.length; start += BATCH_GET_KEYS) {
      let unread: Item[] = keys.slice(start, start + BATCH_GET_KEYS);
      for (let round = 0; unread.length > 0; round++) {
        if (round >= rounds) {
          if (read === 'hint') break;
          throw new Error(`BatchGetItem left ${unread.length} keys unprocessed`);
        }
        if (round > 0 && read === 'exact') await backoffPause(round, RETRY_BACKOFF.awsStep);
        const request = unread;
        const out = await retryStep(() =>
          this.dynamodb.send(
            new BatchGetItemCommand({
              RequestItems: {
                [this.table]: {
                  Keys: request,
                  ...(read === 'exact' ? { ConsistentRead: true } : {}),
                  ProjectionExpression: attrs.map((attr) => `#${attr}`).join(', '),
                  ExpressionAttributeNames: names(...attrs),
                },
              },
            }),
          ),
        );
        found.push(...(out.Responses?.[this.table] ?? []));
        unread = out.UnprocessedKeys?.[this.table]?.Keys ?? [];
      }
    }
    return found;
  }

  /**
   * Every item a Query of the table matches, page after page, each page a consistent read, tried up
   * to `pageAttempts` times (a read is safe to repeat).
   */
  protected async *queryAll(
    input: Omit<QueryCommandInput, 'TableName' | 'ConsistentRead' | 'ExclusiveStartKey'>,
    pageAttempts = 1,
  ): AsyncGenerator<Item> {
    let startKey: Item | undefined;
    do {
      const command = new QueryCommand({
        ...input,
        TableName: this.table,
        ConsistentRead: true,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      });
      const page = await retryStep(() => this.dynamodb.send(command), pageAttempts);
      yield* page.Items ?? [];
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
  }

  /**
   * Every item of the crawl's shards whose sort key begins with `prefix` (`attrs` projected), shard
   * by shard in order, `shardReadsAtOnce` shards read ahead (each read whole before it is yielded).
   * Each page is tried SHARD_READ_ATTEMPTS times: a listing of 32 shards or more must not fail for
   * one failed read where the one Query of a single key did not.
   */
  protected async *queryShards(
    crawlId: string,
    prefix: string,
    attrs: readonly string[],
  ): AsyncGenerator<Item> {
    const pks = crawlShardPks(crawlId);
    const read = async (pk: string): Promise<Item[]> => {
      const items: Item[] = [];
      const pages = this.queryAll(
        {
          KeyConditionExpression: `#${ATTR.pk} = :pk AND begins_with(#${ATTR.sk}, :prefix)`,
          ProjectionExpression: attrs.map((attr) => `#${attr}`).join(', '),
          ExpressionAttributeNames: names(ATTR.pk, ATTR.sk, ...attrs),
          ExpressionAttributeValues: { ':pk': S(pk), ':prefix': S(prefix) },
        },
        SHARD_READ_ATTEMPTS,
      );
      for await (const item of pages) items.push(item);
      return items;
    };
    // Settled, so a read that fails while an earlier shard is awaited is no unhandled rejection.
    const ahead: Array<Promise<PromiseSettledResult<Item[]>>> = [];
    let next = 0;
    const readAhead = () => {
      while (next < pks.length && ahead.length < FRONTIER_LIMITS.shardReadsAtOnce) {
        const pk = pks[next++] as string;
        ahead.push(
          read(pk).then(
            (value) => ({ status: 'fulfilled', value }),
            (reason: unknown) => ({ status: 'rejected', reason }),
          ),
        );
      }
    };
    readAhead();
    while (ahead.length > 0) {
      const shard = await (ahead.shift() as Promise<PromiseSettledResult<Item[]>>);
      if (shard.status === 'rejected') throw shard.reason;
      readAhead();
      yield* shard.value;
    }
  }
}

/** `expiresAt` (epoch seconds) for an item written now. */
export const expiresAt = (options: ResolvedOptions): AttributeValue =>
  N(Math.floor(options.clock() / 1000) + options.ttlSeconds);

/** The pause after the `attempt`-th (from 0) optimistic update lost to a concurrent writer. */
export function conflictPause(attempt: number): Promise<void> {
  return backoffPause(attempt + 1, RETRY_BACKOFF.writeConflict);
}

const THROTTLING = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'Throttling',
]);

/** AWS rejects a throttled call before doing anything, so it is the one error safe to repeat blindly. */
export function isThrottling(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const retryable = (err as { $retryable?: { throttling?: boolean } }).$retryable;
  return THROTTLING.has(err.name) || retryable?.throttling === true;
}

/** Runs `call` again (with jittered backoff) while it is throttled, at most `attempts` times in all. */
export function retryThrottled<T>(call: () => Promise<T>, attempts = 5): Promise<T> {
  return retryStep(call, attempts, isThrottling);
}

export class ConflictError extends Error {
  constructor(what: string, attempts: number) {
    super(`${what}: still conflicting after ${attempts} attempts`);
    this.name = 'ConflictError';
  }
}

/** The counters item as `CrawlCounters` (absent numbers are 0, absent state is `running`). */
export function parseCounters(item: Item): CrawlCounters {
  const byOutcome: Partial<Record<Outcome, number>> = {};
  for (const outcome of OUTCOMES) {
    const count = num(item, outcomeAttr(outcome));
    if (count !== undefined && count !== 0) byOutcome[outcome] = count;
  }
  const state = str(item, ATTR.state);
  const counters: CrawlCounters = {
    queued: num(item, ATTR.queued) ?? 0,
    done: num(item, ATTR.done) ?? 0,
    admitted: num(item, ATTR.admitted) ?? 0,
    bytes: num(item, ATTR.bytes) ?? 0,
    requests: num(item, ATTR.requests) ?? 0,
    byOutcome,
    state: state === CRAWL_STATE.complete || state === CRAWL_STATE.cancelled ? state : CRAWL_STATE.running,
  };
  const startedAt = str(item, ATTR.startedAt);
  if (startedAt !== undefined) counters.startedAt = startedAt;
  const endedAt = str(item, ATTR.endedAt);
  if (endedAt !== undefined) counters.endedAt = endedAt;
  return counters;
}

/** The exact tally of a drained host (and its pace, for when it is woken again). */
export const doneKey = (crawlId: string, host: string): Item =>
  shardKey(crawlId, host, `${DONE_SK_PREFIX}${host}`);
