/**
 * URL items (`CRAWL#<id>` / `URL#<key>`): admission (dedup), fetch-once claims and finalization
 * (docs/frontier.md, "A URL's life"). Every decision is one conditional write on one item.
 */
import {
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { Outcome } from '../core/outcome.ts';
import type { AdmittedUrl, ClaimResult, FrontierUrl } from '../core/ports.ts';
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
  URL_ST,
  urlKey,
} from './frontier-schema.ts';

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
    let next = 0;
    let failure: { error: unknown } | undefined;
    const worker = async () => {
      while (failure === undefined && next < unique.length) {
        const index = next++;
        const candidate = unique[index];
        if (candidate === undefined) continue;
        try {
          admitted[index] = await this.put(crawlId, parentKey, candidate);
        } catch (error) {
          failure ??= { error };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.admitConcurrency, unique.length) }, worker));
    if (failure !== undefined) throw failure.error;
    return unique.flatMap((candidate, index) => {
      const state = admitted[index];
      return state ? [{ ...candidate, fresh: state === 'fresh' }] : [];
    });
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
          ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR (#${ATTR.st} = :new AND #${ATTR.parent} = :me)`,
          ExpressionAttributeNames: names(ATTR.pk, ATTR.st, ATTR.parent),
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
   * Fetch-once: `st = fetching` with a lease, if the URL is new, unknown (the item is created, and
   * counted as queued) or its holder's lease has run out. Otherwise says why not: `done`, or `held`
   * until the live lease runs out.
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
            ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR #${ATTR.st} = :new OR (#${ATTR.st} = :fetching AND #${ATTR.lease} < :now)`,
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
              ':new': S(URL_ST.new),
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
        return { status: 'claimed' };
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        // AWS returns the item that failed the condition; emulators may not, then read it.
        current = err.Item ?? (await this.readUrl(crawlId, url.key));
      }
      const st = str(current, ATTR.st);
      if (st === URL_ST.done) return { status: 'done' };
      const held = num(current, ATTR.lease);
      if (st === URL_ST.fetching && held !== undefined && held >= now)
        return { status: 'held', leaseUntil: held };
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
        ProjectionExpression: `#${ATTR.st}, #${ATTR.lease}`,
        ExpressionAttributeNames: names(ATTR.st, ATTR.lease),
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
   * Gives a claim back (`st = new`, no lease) so a retry can claim it again at once. Only a claim
   * still `fetching` is released; when this instance made the claim, only while its own lease is the
   * one on the item (after a lease ran out and another fetcher took over, that one keeps it).
   */
  async release(crawlId: string, key: string): Promise<void> {
    const id = `${crawlId}\n${key}`;
    const lease = this.leases.get(id);
    this.leases.delete(id);
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, key),
          UpdateExpression: `SET #${ATTR.st} = :new REMOVE #${ATTR.lease}`,
          ConditionExpression:
            lease === undefined
              ? `#${ATTR.st} = :fetching`
              : `#${ATTR.st} = :fetching AND #${ATTR.lease} = :lease`,
          ExpressionAttributeNames: names(ATTR.st, ATTR.lease),
          ExpressionAttributeValues: {
            ':new': S(URL_ST.new),
            ':fetching': S(URL_ST.fetching),
            ...(lease === undefined ? {} : { ':lease': N(lease) }),
          },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * `st = done` with the outcome, unless the URL already is done. `won`: this result is the one that
   * counts; `created`: no URL item existed (it was never counted as queued).
   */
  async finalize(
    crawlId: string,
    key: string,
    url: string,
    outcome: Outcome,
  ): Promise<{ won: boolean; created: boolean }> {
    try {
      const out = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, key),
          UpdateExpression: [
            `SET #${ATTR.st} = :done, #${ATTR.outcome} = :outcome`,
            `#${ATTR.url} = if_not_exists(#${ATTR.url}, :url)`,
            `#${ATTR.expiresAt} = :expiresAt`,
          ]
            .join(', ')
            .concat(` REMOVE #${ATTR.lease}`),
          ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR #${ATTR.st} <> :done`,
          ExpressionAttributeNames: names(
            ATTR.pk,
            ATTR.st,
            ATTR.outcome,
            ATTR.url,
            ATTR.expiresAt,
            ATTR.lease,
          ),
          ExpressionAttributeValues: {
            ':done': S(URL_ST.done),
            ':outcome': S(outcome),
            ':url': S(url),
            ':expiresAt': expiresAt(this.options),
          },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return { won: true, created: out.Attributes === undefined };
    } catch (err) {
      if (isConditionFailed(err)) return { won: false, created: false };
      throw err;
    }
  }
}
