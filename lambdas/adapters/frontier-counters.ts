/**
 * The crawl counters item (`CRAWL#<id>` / `COUNTERS`): page budget, queued/done/outcome counts and
 * completion (docs/frontier.md, "Counters and completion").
 */
import {
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  type QueryCommandOutput,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { OUTCOMES, type Outcome } from '../core/outcome.ts';
import type { CounterDeltas, CrawlCounters } from '../core/ports.ts';
import {
  ATTR,
  ConflictError,
  CRAWL_STATE,
  conflictPause,
  countersKey,
  crawlPk,
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
  str,
  URL_SK_PREFIX,
  URL_ST,
} from './frontier-schema.ts';

/** What one consistent Query over a crawl's URL items found. */
export interface UrlTally {
  /** URL items. */
  total: number;
  /** URL items not yet `done`. */
  pending: number;
  /** `done` URL items by outcome (every outcome present, 0 when none). */
  byOutcome: Record<Outcome, number>;
  /** Sums of the done URL items' `bytes` and `requests` (their winning results'). */
  bytes: number;
  requests: number;
  /** The index parts the done URL items' lines are in. */
  parts: Set<string>;
}

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

  constructor(dynamodb: DynamoDBClient, table: string, options: ResolvedOptions) {
    this.dynamodb = dynamodb;
    this.adder = options.singleAttemptClient ?? dynamodb;
    this.table = table;
    this.options = options;
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

  /** One consistent, paginated Query over the crawl's URL items (projecting `st` and `outcome`). */
  async tally(crawlId: string): Promise<UrlTally> {
    const byOutcome = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0])) as Record<Outcome, number>;
    const tally: UrlTally = { total: 0, pending: 0, byOutcome, bytes: 0, requests: 0, parts: new Set() };
    let startKey: Item | undefined;
    do {
      const page: QueryCommandOutput = await this.dynamodb.send(
        new QueryCommand({
          TableName: this.table,
          ConsistentRead: true,
          KeyConditionExpression: `#${ATTR.pk} = :pk AND begins_with(#${ATTR.sk}, :prefix)`,
          ProjectionExpression: [ATTR.st, ATTR.outcome, ATTR.bytes, ATTR.requests, ATTR.part]
            .map((attr) => `#${attr}`)
            .join(', '),
          ExpressionAttributeNames: names(
            ATTR.pk,
            ATTR.sk,
            ATTR.st,
            ATTR.outcome,
            ATTR.bytes,
            ATTR.requests,
            ATTR.part,
          ),
          ExpressionAttributeValues: { ':pk': S(crawlPk(crawlId)), ':prefix': S(URL_SK_PREFIX) },
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        tally.total++;
        if (str(item, ATTR.st) !== URL_ST.done) {
          tally.pending++;
          continue;
        }
        const outcome = str(item, ATTR.outcome);
        if (outcome !== undefined && outcome in byOutcome) byOutcome[outcome as Outcome]++;
        tally.bytes += num(item, ATTR.bytes) ?? 0;
        tally.requests += num(item, ATTR.requests) ?? 0;
        const part = str(item, ATTR.part);
        if (part !== undefined) tally.parts.add(part);
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return tally;
  }

  /**
   * Completion, confirmed by a consistent Query (never guessed from the counters).
   *
   * Nothing pending (at least one URL item) and every index part the done items point at written
   * (`partsWritten`: a URL can be done while its aggregate invocation has not yet written its line):
   * the counters are rewritten from the Query (queued = done = URL items, `o_*` per outcome, bytes
   * and requests summed) in the same conditional update that flips `state` running → complete, so
   * exactly one caller gets `completedNow: true`. The counters' own ADDs may drift under retries and
   * crashes; the completed crawl's numbers never do.
   *
   * Something pending: other functions are still writing, so absolute values from the Query would race
   * with their ADDs (an item the Query saw whose ADD lands after our write would be counted twice,
   * and `queued > done` at the end means completion is never checked again). The counters are
   * corrected only by amounts the Query proves, in the direction that cannot stall completion:
   * `queued` is lowered by what exceeds the URL items (read before the Query, so every ADD it
   * holds belongs to an item the Query sees), and each `o_*` (and `done` with it) is raised to the
   * Query's count of done items with that outcome.
   */
  async confirmCompletion(
    crawlId: string,
    now: Date,
    partsWritten: (parts: ReadonlySet<string>) => Promise<boolean>,
  ): Promise<{ completedNow: boolean; counters: CrawlCounters }> {
    const before = await this.readItem(crawlId, [ATTR.queued]);
    const tally = await this.tally(crawlId);

    if (tally.total > 0 && tally.pending === 0 && (await partsWritten(tally.parts))) {
      const outcomeNames = OUTCOMES.map(outcomeAttr);
      const outcomeValues: Item = {};
      for (const outcome of OUTCOMES) outcomeValues[`:${outcomeAttr(outcome)}`] = N(tally.byOutcome[outcome]);
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
              ':total': N(tally.total),
              ':bytes': N(tally.bytes),
              ':requests': N(tally.requests),
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
        const counters = await this.readCounters(crawlId);
        return { completedNow: false, counters: counters ?? parseCounters({}) };
      }
    }

    const after = await this.readItem(crawlId);
    const state = str(after, ATTR.state);
    // A finished (complete or cancelled) crawl's counters are final.
    if (state !== undefined && state !== CRAWL_STATE.running) {
      return { completedNow: false, counters: parseCounters(after ?? {}) };
    }
    const adds: Array<[string, number]> = [];
    const queuedBefore = num(before, ATTR.queued) ?? 0;
    if (queuedBefore > tally.total) adds.push([ATTR.queued, tally.total - queuedBefore]);
    let doneRaise = 0;
    for (const outcome of OUTCOMES) {
      const attr = outcomeAttr(outcome);
      const raise = tally.byOutcome[outcome] - (num(after, attr) ?? 0);
      if (raise > 0) {
        adds.push([attr, raise]);
        doneRaise += raise;
      }
    }
    if (doneRaise > 0) adds.push([ATTR.done, doneRaise]);
    if (adds.length === 0) return { completedNow: false, counters: parseCounters(after ?? {}) };
    return { completedNow: false, counters: await this.update(crawlId, `SET ${START}`, adds) };
  }
}
