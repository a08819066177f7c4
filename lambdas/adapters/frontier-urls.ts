/**
 * URL items (`CRAWL#<id>` / `URL#<key>`): admission (dedup), fetch-once claims and finalization
 * (docs/frontier.md, "A URL's life"). Every decision is one conditional write on one item.
 */
import {
  BatchGetItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { AdmittedUrl, ClaimResult, FinalizeEntry, FinalizeOutcome, FrontierUrl } from '../core/ports.ts';
import { retryStep } from '../core/retry-step.ts';
import type { FrontierCounters } from './frontier-counters.ts';
import {
  ATTR,
  ConflictError,
  expiresAt,
  type Item,
  isConditionFailed,
  N,
  names,
  num,
  type ResolvedOptions,
  S,
  str,
  URL_SK_PREFIX,
  URL_ST,
  urlKey,
} from './frontier-schema.ts';

/** BatchGetItem reads at most 100 keys a call. */
const BATCH_GET_KEYS = 100;

/** Leases of claims this instance made, kept so `release` gives back only its own (bounded). */
const MAX_REMEMBERED_LEASES = 10_000;

export class FrontierUrls {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;
  private readonly options: ResolvedOptions;
  private readonly counters: FrontierCounters;
  private readonly leases = new Map<string, number>();

  constructor(dynamodb: DynamoDBClient, table: string, options: ResolvedOptions, counters: FrontierCounters) {
    this.dynamodb = dynamodb;
    this.table = table;
    this.options = options;
    this.counters = counters;
  }

  /**
   * One conditional PutItem per candidate (duplicate keys in one call are tried once), at most
   * `admitConcurrency` in flight. Returns, in input order, the candidates that are new to the crawl or
   * are this parent's own earlier admissions still `new` (a retried batch re-sends them). Any error
   * other than a failed condition is thrown once the puts in flight have settled.
   */
  async admit(
    crawlId: string,
    parentKey: string,
    candidates: readonly FrontierUrl[],
  ): Promise<AdmittedUrl[]> {
    const unique: FrontierUrl[] = [];
    const keys = new Set<string>();
    for (const candidate of candidates) {
      if (keys.has(candidate.key)) continue;
      keys.add(candidate.key);
      unique.push(candidate);
    }
    const admitted = new Array<'fresh' | 'again' | false>(unique.length).fill(false);
    // Most links of a page are already in the frontier (navigation, pages linked from many pages).
    // A read of those costs a sixth of a failed conditional put (half a read unit, eventually
    // consistent, against a write unit), and one call reads a hundred; only URLs the read did not
    // find are put. A read that misses a just-written item only costs that put, which then fails.
    const existing = await this.readExisting(crawlId, unique);
    const toPut: number[] = [];
    for (const [index, candidate] of unique.entries()) {
      const item = existing.get(candidate.key);
      if (item === undefined) toPut.push(index);
      else if (
        str(item, ATTR.st) === URL_ST.new &&
        str(item, ATTR.parent) === parentKey &&
        num(item, ATTR.attempts) === undefined
      )
        admitted[index] = 'again';
    }
    let next = 0;
    let failure: { error: unknown } | undefined;
    const worker = async () => {
      while (failure === undefined && next < toPut.length) {
        const index = toPut[next++]!;
        const candidate = unique[index];
        if (candidate === undefined) continue;
        try {
          // Repeating a put is safe: if the first took effect, the repeat is this parent's re-admission.
          admitted[index] = await retryStep(() => this.put(crawlId, parentKey, candidate));
        } catch (error) {
          failure ??= { error };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.admitConcurrency, toPut.length) }, worker));
    if (failure !== undefined) throw failure.error;
    return unique.flatMap((candidate, index) => {
      const state = admitted[index];
      return state ? [{ ...candidate, fresh: state === 'fresh' }] : [];
    });
  }

  /** The URL items that exist among `urls` (eventually consistent BatchGetItem, 100 keys a call). */
  private async readExisting(crawlId: string, urls: readonly FrontierUrl[]): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    for (let start = 0; start < urls.length; start += BATCH_GET_KEYS) {
      let keys: Item[] | undefined = urls
        .slice(start, start + BATCH_GET_KEYS)
        .map((url) => urlKey(crawlId, url.key));
      // Keys DynamoDB leaves unprocessed (throttling) are read once more, then simply put.
      for (let round = 0; round < 2 && keys && keys.length > 0; round++) {
        const request: Item[] = keys;
        const out = await retryStep(() =>
          this.dynamodb.send(
            new BatchGetItemCommand({
              RequestItems: {
                [this.table]: {
                  Keys: request,
                  ProjectionExpression: [ATTR.sk, ATTR.st, ATTR.parent, ATTR.attempts]
                    .map((a) => `#${a}`)
                    .join(', '),
                  ExpressionAttributeNames: names(ATTR.sk, ATTR.st, ATTR.parent, ATTR.attempts),
                },
              },
            }),
          ),
        );
        for (const item of out.Responses?.[this.table] ?? []) {
          const sk = str(item, ATTR.sk);
          if (sk !== undefined) found.set(sk.slice(URL_SK_PREFIX.length), item);
        }
        keys = out.UnprocessedKeys?.[this.table]?.Keys;
      }
    }
    return found;
  }

  /** 'fresh' when the item did not exist (count it as queued), 'again' for this parent's own re-admission. */
  private async put(
    crawlId: string,
    parentKey: string,
    candidate: FrontierUrl,
  ): Promise<'fresh' | 'again' | false> {
    try {
      const previous = await this.dynamodb.send(
        new PutItemCommand({
          TableName: this.table,
          Item: {
            ...urlKey(crawlId, candidate.key),
            [ATTR.url]: S(candidate.url),
            [ATTR.depth]: N(candidate.depth),
            [ATTR.st]: S(URL_ST.new),
            [ATTR.parent]: S(parentKey),
            [ATTR.expiresAt]: expiresAt(this.options),
          },
          // A re-admission never replaces an item that has had a fetch attempt (its attempts count).
          ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR (#${ATTR.st} = :new AND #${ATTR.parent} = :me AND attribute_not_exists(#${ATTR.attempts}))`,
          ExpressionAttributeNames: names(ATTR.pk, ATTR.st, ATTR.parent, ATTR.attempts),
          ExpressionAttributeValues: { ':new': S(URL_ST.new), ':me': S(parentKey) },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return previous.Attributes === undefined ? 'fresh' : 'again';
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /**
   * Fetch-once: `st = fetching` with a lease, if the URL is unknown (the item is created, and
   * counted as queued) or not done and without a live lease (new, released, its holder's lease run
   * out, or a postponed retry whose time has come). Otherwise says why not: `done`, or `held` until
   * the live lease (or retry time) runs out. `attempts`: fetch attempts made before this claim.
   */
  async claim(crawlId: string, url: FrontierUrl, leaseMs: number, now: number): Promise<ClaimResult> {
    const lease = now + leaseMs;
    for (let attempt = 0; attempt < this.options.maxConflictAttempts; attempt++) {
      let current: Item | undefined;
      try {
        const out = await this.dynamodb.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: urlKey(crawlId, url.key),
            UpdateExpression: [
              `SET #${ATTR.st} = :fetching, #${ATTR.lease} = :lease`,
              `#${ATTR.url} = if_not_exists(#${ATTR.url}, :url)`,
              `#${ATTR.depth} = if_not_exists(#${ATTR.depth}, :depth)`,
              `#${ATTR.expiresAt} = :expiresAt`,
            ].join(', '),
            ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR (#${ATTR.st} <> :done AND (attribute_not_exists(#${ATTR.lease}) OR #${ATTR.lease} < :now))`,
            ExpressionAttributeNames: names(
              ATTR.pk,
              ATTR.st,
              ATTR.lease,
              ATTR.url,
              ATTR.depth,
              ATTR.expiresAt,
            ),
            ExpressionAttributeValues: {
              ':fetching': S(URL_ST.fetching),
              ':done': S(URL_ST.done),
              ':lease': N(lease),
              ':now': N(now),
              ':url': S(url.url),
              ':depth': N(url.depth),
              ':expiresAt': expiresAt(this.options),
            },
            ReturnValues: 'ALL_OLD',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        this.remember(crawlId, url.key, lease);
        // A bare URL sent to the queue was never admitted, so nobody counted it. If this ADD is lost
        // (crash), queued runs low, which only makes the completion check run early; it is then exact.
        if (out.Attributes === undefined) await this.counters.addQueued(crawlId, 1);
        const before = out.Attributes;
        return {
          status: 'claimed',
          attempts: num(before, ATTR.attempts) ?? 0,
          // Taken over from a holder whose lease ran out, or given back by a failed batch.
          relink: str(before, ATTR.st) === URL_ST.fetching || before?.[ATTR.relink] !== undefined,
        };
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        // AWS returns the item that failed the condition; emulators may not, then read it.
        current = err.Item ?? (await this.readUrl(crawlId, url.key));
      }
      const st = str(current, ATTR.st);
      if (st === URL_ST.done) return { status: 'done' };
      const held = num(current, ATTR.lease);
      if (held !== undefined && held >= now) return { status: 'held', leaseUntil: held };
      // Released, expired or gone between the write and the read: try again.
    }
    throw new ConflictError(`claim(${crawlId}, ${url.key})`, this.options.maxConflictAttempts);
  }

  private async readUrl(crawlId: string, key: string): Promise<Item | undefined> {
    const out = await this.dynamodb.send(
      new GetItemCommand({
        TableName: this.table,
        Key: urlKey(crawlId, key),
        ConsistentRead: true,
        ProjectionExpression: `#${ATTR.st}, #${ATTR.lease}, #${ATTR.attempts}`,
        ExpressionAttributeNames: names(ATTR.st, ATTR.lease, ATTR.attempts),
      }),
    );
    return out.Item;
  }

  private remember(crawlId: string, key: string, lease: number): void {
    const id = `${crawlId}\n${key}`;
    this.leases.delete(id);
    this.leases.set(id, lease);
    if (this.leases.size > MAX_REMEMBERED_LEASES) {
      const oldest = this.leases.keys().next().value;
      if (oldest !== undefined) this.leases.delete(oldest);
    }
  }

  /**
   * Gives this instance's claim back (`st = new`, no lease) so the task can be claimed again at
   * once (a politeness deferral, a failed batch). Only while its own lease is the one on the item:
   * after a lease ran out and another fetcher took over, that one keeps it.
   */
  async release(crawlId: string, key: string, unsentLinks = false): Promise<void> {
    const id = `${crawlId}\n${key}`;
    const lease = this.leases.get(id);
    if (lease === undefined) return;
    this.leases.delete(id);
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, key),
          UpdateExpression: unsentLinks
            ? `SET #${ATTR.st} = :new, #${ATTR.relink} = :true REMOVE #${ATTR.lease}`
            : `SET #${ATTR.st} = :new REMOVE #${ATTR.lease}`,
          ConditionExpression: `#${ATTR.st} = :fetching AND #${ATTR.lease} = :lease`,
          ExpressionAttributeNames: names(ATTR.st, ATTR.lease, ...(unsentLinks ? [ATTR.relink] : [])),
          ExpressionAttributeValues: {
            ':new': S(URL_ST.new),
            ':fetching': S(URL_ST.fetching),
            ':lease': N(lease),
            ...(unsentLinks ? { ':true': { BOOL: true } } : {}),
          },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * A fetch that will be retried: the claim is given back with the attempts made so far and a lease
   * until `retryAt`, so no other copy of the task (a duplicate delivery) starts an attempt of its
   * own during the backoff, and whoever fetches next counts on from `attempts`. Only this
   * instance's own live claim is postponed.
   */
  async postpone(crawlId: string, key: string, attempts: number, retryAt: number): Promise<void> {
    const id = `${crawlId}\n${key}`;
    const lease = this.leases.get(id);
    if (lease === undefined) return;
    this.leases.delete(id);
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, key),
          UpdateExpression: `SET #${ATTR.st} = :new, #${ATTR.lease} = :retryAt, #${ATTR.attempts} = :attempts`,
          ConditionExpression: `#${ATTR.st} = :fetching AND #${ATTR.lease} = :lease`,
          ExpressionAttributeNames: names(ATTR.st, ATTR.lease, ATTR.attempts),
          ExpressionAttributeValues: {
            ':new': S(URL_ST.new),
            ':fetching': S(URL_ST.fetching),
            ':lease': N(lease),
            ':retryAt': N(retryAt),
            ':attempts': N(attempts),
          },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * `st = done` with the outcome, unless the URL already is done by another result. The item keeps
   * the winning result's id (`rid`), the index part its line goes to (`part`), and its bytes and
   * request count, so completion can tally everything from the URL items alone.
   *
   * `won`: this result is the one that counts. `repeat`: it had already won (the same result again:
   * an SDK retry whose first attempt took effect, or a redelivery after a crash or a failed step); the
   * item keeps the part its first win named (`part`), where its line may or may not have been written.
   * `created`: no URL item existed (it was never counted as queued).
   */
  async finalize(crawlId: string, entry: FinalizeEntry): Promise<FinalizeOutcome> {
    try {
      const out = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, entry.key),
          UpdateExpression: [
            `SET #${ATTR.st} = :done, #${ATTR.outcome} = :outcome, #${ATTR.rid} = :rid`,
            `#${ATTR.part} = if_not_exists(#${ATTR.part}, :part)`,
            `#${ATTR.bytes} = :bytes, #${ATTR.requests} = :requests`,
            `#${ATTR.url} = if_not_exists(#${ATTR.url}, :url)`,
            `#${ATTR.expiresAt} = :expiresAt`,
          ]
            .join(', ')
            .concat(` REMOVE #${ATTR.lease}`),
          ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR #${ATTR.st} <> :done OR #${ATTR.rid} = :rid`,
          ExpressionAttributeNames: names(
            ATTR.pk,
            ATTR.st,
            ATTR.outcome,
            ATTR.rid,
            ATTR.part,
            ATTR.bytes,
            ATTR.requests,
            ATTR.url,
            ATTR.expiresAt,
            ATTR.lease,
          ),
          ExpressionAttributeValues: {
            ':done': S(URL_ST.done),
            ':outcome': S(entry.outcome),
            ':rid': S(entry.rid),
            ':part': S(entry.part),
            ':bytes': N(entry.bytes),
            ':requests': N(entry.requests),
            ':url': S(entry.url),
            ':expiresAt': expiresAt(this.options),
          },
          ReturnValues: 'ALL_OLD',
        }),
      );
      const before = out.Attributes;
      const repeat = str(before, ATTR.st) === URL_ST.done;
      return {
        won: true,
        created: before === undefined,
        repeat,
        part: (repeat ? str(before, ATTR.part) : undefined) ?? entry.part,
      };
    } catch (err) {
      if (isConditionFailed(err)) return { won: false, created: false, repeat: false };
      throw err;
    }
  }

  async repoint(crawlId: string, key: string, rid: string, part: string): Promise<void> {
    await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: urlKey(crawlId, key),
        UpdateExpression: `SET #${ATTR.part} = :part`,
        ConditionExpression: `#${ATTR.rid} = :rid`,
        ExpressionAttributeNames: names(ATTR.part, ATTR.rid),
        ExpressionAttributeValues: { ':part': S(part), ':rid': S(rid) },
      }),
    );
  }
}
