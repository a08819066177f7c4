/**
 * The crawl counters item (`CRAWL#<id>` / `COUNTERS`): page budget, queued/done/outcome counts and
 * completion (docs/frontier.md, "Counters and completion"; completion by drained hosts:
 * docs/design/host-visits.md).
 */
import { type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { OUTCOMES } from '../core/base/index.ts';
import { settledTotals } from '../core/batches/index.ts';
import type { CounterDeltas, CrawlCounters, HostVisits } from '../core/crawl/index.ts';
import {
  ATTR,
  ConflictError,
  CRAWL_STATE,
  conflictPause,
  countersKey,
  expiresAt,
  type Item,
  isConditionFailed,
  N,
  names,
  num,
  outcomeAttr,
  parseCounters,
  type ResolvedOptions,
  retryThrottled,
  S,
} from './frontier-schema.ts';

// Every write that may create the counters item marks the crawl running (unless it already has a
// state) and keeps the item alive for the TTL after its last write.
const START = `#${ATTR.state} = if_not_exists(#${ATTR.state}, :running), #${ATTR.startedAt} = if_not_exists(#${ATTR.startedAt}, :startedAt), #${ATTR.expiresAt} = :expiresAt`;
const START_NAMES = [ATTR.state, ATTR.startedAt, ATTR.expiresAt];

export class FrontierCounters {
  private readonly dynamodb: DynamoDBClient;
  /** For ADDs: one attempt per call, throttling aside (FrontierStoreOptions.singleAttemptClient). */
  private readonly adder: DynamoDBClient;
  private readonly table: string;
  private readonly options: ResolvedOptions;
  /** The crawl's host items and drained-host tallies, for completion. */
  private readonly hosts: Pick<HostVisits, 'anyActive' | 'doneTotals'>;

  constructor(
    dynamodb: DynamoDBClient,
    table: string,
    options: ResolvedOptions,
    hosts: Pick<HostVisits, 'anyActive' | 'doneTotals'>,
  ) {
    this.dynamodb = dynamodb;
    this.adder = options.singleAttemptClient ?? dynamodb;
    this.table = table;
    this.options = options;
    this.hosts = hosts;
  }

  private startValues() {
    return {
      ':running': S(CRAWL_STATE.running),
      ':startedAt': S(new Date(this.options.clock()).toISOString()),
      ':expiresAt': expiresAt(this.options),
    };
  }

  private async readItem(crawlId: string, projection?: string[]): Promise<Item | undefined> {
    const out = await this.dynamodb.send(
      new GetItemCommand({
        TableName: this.table,
        Key: countersKey(crawlId),
        ConsistentRead: true,
        ...(projection
          ? {
              ProjectionExpression: projection.map((attr) => `#${attr}`).join(', '),
              ExpressionAttributeNames: names(...projection),
            }
          : {}),
      }),
    );
    return out.Item;
  }

  async readCounters(crawlId: string): Promise<CrawlCounters | undefined> {
    const item = await this.readItem(crawlId);
    return item ? parseCounters(item) : undefined;
  }

  /**
   * Grants up to `wanted` of the crawl's remaining page budget; the sum of all grants never exceeds
   * `maxPages`, whatever the concurrency. While the whole of `wanted` is left, one atomic ADD of
   * `admitted`, conditional on there being room, grants it (no read, no conflicts between concurrent
   * reservers). Near the end of the budget the remainder is granted by an optimistic update of
   * `admitted` (read consistently, written only if unchanged, retried on conflict).
   */
  async reservePages(crawlId: string, wanted: number, maxPages: number): Promise<number> {
    const want = Math.floor(wanted);
    const max = Math.floor(maxPages);
    if (!(want > 0) || !(max > 0)) return 0;
    const unlimited = !Number.isFinite(max);
    let seen: number | undefined;
    if (unlimited || want <= max) {
      try {
        const add = new UpdateItemCommand({
          TableName: this.table,
          Key: countersKey(crawlId),
          UpdateExpression: `SET ${START} ADD #${ATTR.admitted} :want`,
          ...(unlimited
            ? {}
            : {
                ConditionExpression: `attribute_not_exists(#${ATTR.admitted}) OR #${ATTR.admitted} <= :room`,
              }),
          ExpressionAttributeNames: names(ATTR.admitted, ...START_NAMES),
          ExpressionAttributeValues: {
            ':want': N(want),
            ...(unlimited ? {} : { ':room': N(max - want) }),
            ...this.startValues(),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        });
        await retryThrottled(() => this.adder.send(add));
        return want;
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        // AWS returns the item that failed the condition; emulators may not, then read it.
        seen = num(err.Item ?? (await this.readItem(crawlId, [ATTR.admitted])), ATTR.admitted);
      }
    } else {
      seen = num(await this.readItem(crawlId, [ATTR.admitted]), ATTR.admitted);
    }
    for (let attempt = 0; attempt < this.options.maxConflictAttempts; attempt++) {
      const grant = Math.min(want, max - (seen ?? 0));
      if (!(grant > 0)) return 0;
      try {
        await this.dynamodb.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: countersKey(crawlId),
            UpdateExpression: `SET #${ATTR.admitted} = :admitted, ${START}`,
            ConditionExpression:
              seen === undefined ? `attribute_not_exists(#${ATTR.admitted})` : `#${ATTR.admitted} = :seen`,
            ExpressionAttributeNames: names(ATTR.admitted, ...START_NAMES),
            ExpressionAttributeValues: {
              ':admitted': N((seen ?? 0) + grant),
              ...(seen === undefined ? {} : { ':seen': N(seen) }),
              ...this.startValues(),
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return grant;
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        seen = num(err.Item ?? (await this.readItem(crawlId, [ATTR.admitted])), ATTR.admitted);
        await conflictPause(attempt);
      }
    }
    throw new ConflictError(`reservePages(${crawlId})`, this.options.maxConflictAttempts);
  }

  /** Counts newly queued URLs: one ADD; nothing is written for 0. */
  async addQueued(crawlId: string, count: number): Promise<void> {
    if (count === 0) return;
    const add = new UpdateItemCommand({
      TableName: this.table,
      Key: countersKey(crawlId),
      UpdateExpression: `SET ${START} ADD #${ATTR.queued} :n`,
      ExpressionAttributeNames: names(ATTR.queued, ...START_NAMES),
      ExpressionAttributeValues: { ':n': N(count), ...this.startValues() },
    });
    await retryThrottled(() => this.adder.send(add));
  }

  /** Adds all deltas of a batch in one UpdateItem; returns the counters after it. */
  async addCounters(crawlId: string, deltas: CounterDeltas): Promise<CrawlCounters> {
    const adds: Array<[string, number]> = [
      [ATTR.queued, deltas.queued ?? 0],
      [ATTR.done, deltas.done ?? 0],
      [ATTR.bytes, deltas.bytes ?? 0],
      [ATTR.requests, deltas.requests ?? 0],
    ];
    for (const outcome of OUTCOMES) adds.push([outcomeAttr(outcome), deltas.byOutcome?.[outcome] ?? 0]);
    const nonZero = adds.filter(([, value]) => value !== 0);
    return this.update(crawlId, `SET ${START}`, nonZero);
  }

  private async update(crawlId: string, set: string, adds: Array<[string, number]>): Promise<CrawlCounters> {
    const addValues: Item = {};
    for (const [attr, value] of adds) addValues[`:${attr}`] = N(value);
    const add = adds.length > 0 ? ` ADD ${adds.map(([attr]) => `#${attr} :${attr}`).join(', ')}` : '';
    const command = new UpdateItemCommand({
      TableName: this.table,
      Key: countersKey(crawlId),
      UpdateExpression: `${set}${add}`,
      ExpressionAttributeNames: names(...START_NAMES, ...adds.map(([attr]) => attr)),
      ExpressionAttributeValues: { ...addValues, ...this.startValues() },
      ReturnValues: 'ALL_NEW',
    });
    const out = await retryThrottled(() => this.adder.send(command));
    return parseCounters(out.Attributes ?? {});
  }

  /**
   * Completion, confirmed rather than guessed from the counters (docs/design/host-visits.md): the crawl
   * is complete when no host of it is active (every `HOST#` item deleted by the visit that drained
   * it; settled over the shards by completion-check.ts) and every index part the drained hosts' done
   * URLs name is written (`partsWritten`: a URL can be done while its aggregate invocation has not
   * yet written its line). The counters are then
   * rewritten from the summed `DONE#` tallies (queued = done = total, `o_*` per outcome, bytes and
   * requests) in the same conditional update that flips `state` running → complete, so exactly one
   * caller gets `completedNow: true`. The counters' own ADDs may drift under retries and crashes; the
   * completed crawl's numbers never do. Otherwise nothing is written: the counters are returned as
   * they are.
   */
  async confirmCompletion(
    crawlId: string,
    now: Date,
    partsWritten: (parts: ReadonlySet<string>) => Promise<boolean>,
  ): Promise<{ completedNow: boolean; counters: CrawlCounters }> {
    const notYet = async () => ({
      completedNow: false,
      counters: (await this.readCounters(crawlId)) ?? parseCounters({}),
    });
    const totals = await settledTotals(this.hosts, crawlId);
    if (totals === undefined || !(await partsWritten(new Set(totals.parts)))) return notYet();

    const outcomeNames = OUTCOMES.map(outcomeAttr);
    const outcomeValues: Item = {};
    for (const outcome of OUTCOMES)
      outcomeValues[`:${outcomeAttr(outcome)}`] = N(totals.byOutcome[outcome] ?? 0);
    try {
      const out = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: countersKey(crawlId),
          UpdateExpression: [
            `SET #${ATTR.queued} = :total, #${ATTR.done} = :total`,
            `#${ATTR.bytes} = :bytes, #${ATTR.requests} = :requests`,
            ...outcomeNames.map((attr) => `#${attr} = :${attr}`),
            `#${ATTR.state} = :complete, #${ATTR.endedAt} = :endedAt`,
            `#${ATTR.startedAt} = if_not_exists(#${ATTR.startedAt}, :endedAt)`,
            `#${ATTR.expiresAt} = :expiresAt`,
          ].join(', '),
          ConditionExpression: `attribute_not_exists(#${ATTR.state}) OR #${ATTR.state} = :running`,
          ExpressionAttributeNames: names(
            ATTR.queued,
            ATTR.done,
            ATTR.bytes,
            ATTR.requests,
            ATTR.state,
            ATTR.endedAt,
            ATTR.startedAt,
            ATTR.expiresAt,
            ...outcomeNames,
          ),
          ExpressionAttributeValues: {
            ':total': N(totals.total),
            ':bytes': N(totals.bytes),
            ':requests': N(totals.requests),
            ':complete': S(CRAWL_STATE.complete),
            ':running': S(CRAWL_STATE.running),
            ':endedAt': S(now.toISOString()),
            ':expiresAt': expiresAt(this.options),
            ...outcomeValues,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { completedNow: true, counters: parseCounters(out.Attributes ?? {}) };
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      // Someone else completed it first (or the crawl was cancelled).
      return notYet();
    }
  }
}
