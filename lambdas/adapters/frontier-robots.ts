/**
 * The shared robots.txt cache (`CRAWL#<id>#<shard>` / `ROBOTS#<origin>`): who fetches it (a leased
 * claim), the parsed policy once fetched, and the retry schedule while it is unavailable
 * (docs/frontier.md, "robots.txt").
 *
 * Policies are stored as JSON text; one larger than INLINE_POLICY_MAX_BYTES is stored gzipped (a
 * 512 KiB robots.txt of distinct rules still compresses far below DynamoDB's 400 KB item limit).
 * One that does not fit even then is stored as a marker and read back as disallow-all (fail closed,
 * as RFC 9309 does for an unreachable robots.txt), with `truncated: true`.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { RobotsState, RobotsStore } from '../core/crawl/index.ts';
import { DISALLOW_ALL } from '../core/robots/index.ts';
import {
  ATTR,
  expiresAt,
  FrontierTableAdapter,
  type Item,
  isConditionFailed,
  N,
  names,
  num,
  ROBOTS_ST,
  robotsKey,
  S,
  str,
} from './frontier-schema.ts';

/** Largest policy stored as plain text, and largest gzipped one (the item limit is 400 KB). */
export const INLINE_POLICY_MAX_BYTES = 350_000;

/** What `read` returns for a policy too large to store. */
export const OVERSIZED_POLICY_JSON = JSON.stringify({ ...DISALLOW_ALL, truncated: true });

export class FrontierRobots extends FrontierTableAdapter implements RobotsStore {
  async read(crawlId: string, origin: string): Promise<RobotsState> {
    const { Item: item } = await this.dynamodb.send(
      new GetItemCommand({ TableName: this.table, Key: robotsKey(crawlId, origin), ConsistentRead: true }),
    );
    switch (str(item, ATTR.st)) {
      case ROBOTS_ST.ready: {
        const inline = str(item, ATTR.policy);
        const gz = item?.[ATTR.policyGz]?.B;
        const policyJson =
          inline ?? (gz !== undefined ? gunzipSync(gz).toString('utf8') : OVERSIZED_POLICY_JSON);
        return { state: 'ready', policyJson, fetchedAt: num(item, ATTR.fetchedAt) ?? 0 };
      }
      case ROBOTS_ST.fetching:
        return { state: 'fetching', lease: num(item, ATTR.lease) ?? 0 };
      case ROBOTS_ST.unavailable:
        return {
          state: 'unavailable',
          retryAt: num(item, ATTR.retryAt) ?? 0,
          failures: num(item, ATTR.failures) ?? 0,
        };
      default:
        return { state: 'missing' };
    }
  }

  /**
   * The right to fetch the origin's robots.txt: granted if nobody has an entry, the holder's lease ran
   * out, the retry time of an unavailable one has come, or a ready policy is older than robotsMaxAgeMs.
   */
  async claim(crawlId: string, origin: string, leaseMs: number, now: number): Promise<boolean> {
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: robotsKey(crawlId, origin),
          UpdateExpression: `SET #${ATTR.st} = :fetching, #${ATTR.lease} = :lease, #${ATTR.expiresAt} = :expiresAt`,
          ConditionExpression: [
            `attribute_not_exists(#${ATTR.pk})`,
            `(#${ATTR.st} = :fetching AND #${ATTR.lease} < :now)`,
            `(#${ATTR.st} = :unavailable AND #${ATTR.retryAt} <= :now)`,
            `(#${ATTR.st} = :ready AND #${ATTR.fetchedAt} <= :stale)`,
          ].join(' OR '),
          ExpressionAttributeNames: names(
            ATTR.pk,
            ATTR.st,
            ATTR.lease,
            ATTR.retryAt,
            ATTR.fetchedAt,
            ATTR.expiresAt,
          ),
          ExpressionAttributeValues: {
            ':fetching': S(ROBOTS_ST.fetching),
            ':unavailable': S(ROBOTS_ST.unavailable),
            ':ready': S(ROBOTS_ST.ready),
            ':lease': N(now + leaseMs),
            ':now': N(now),
            ':stale': N(now - this.options.robotsMaxAgeMs),
            ':expiresAt': expiresAt(this.options),
          },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  async saveReady(crawlId: string, origin: string, policyJson: string, fetchedAt: number): Promise<void> {
    const set = [
      `#${ATTR.st} = :ready`,
      `#${ATTR.fetchedAt} = :fetchedAt`,
      `#${ATTR.expiresAt} = :expiresAt`,
    ];
    const values: Item = {
      ':ready': S(ROBOTS_ST.ready),
      ':fetchedAt': N(fetchedAt),
      ':expiresAt': expiresAt(this.options),
    };
    // Exactly one of the three policy attributes is set; the other two (and the claim) are removed.
    let stored: string;
    const bytes = Buffer.byteLength(policyJson, 'utf8');
    const gz = bytes > INLINE_POLICY_MAX_BYTES ? gzipSync(policyJson) : undefined;
    if (gz === undefined) {
      stored = ATTR.policy;
      values[':policy'] = S(policyJson);
    } else if (gz.byteLength <= INLINE_POLICY_MAX_BYTES) {
      stored = ATTR.policyGz;
      values[':policyGz'] = { B: gz };
    } else {
      stored = ATTR.policyOversized;
      values[':policyOversized'] = { BOOL: true };
    }
    set.push(`#${stored} = :${stored}`);
    const policyAttrs: string[] = [ATTR.policy, ATTR.policyGz, ATTR.policyOversized];
    const remove = [
      ATTR.lease,
      ATTR.retryAt,
      ATTR.failures,
      ...policyAttrs.filter((attr) => attr !== stored),
    ];
    await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: robotsKey(crawlId, origin),
        UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.map((attr) => `#${attr}`).join(', ')}`,
        ExpressionAttributeNames: names(ATTR.st, ATTR.fetchedAt, ATTR.expiresAt, stored, ...remove),
        ExpressionAttributeValues: values,
      }),
    );
  }

  /** Marks the origin's robots.txt unavailable until `retryAt`; returns the failures so far, this one included. */
  async saveUnavailable(crawlId: string, origin: string, retryAt: number): Promise<number> {
    const out = await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: robotsKey(crawlId, origin),
        UpdateExpression: `SET #${ATTR.st} = :unavailable, #${ATTR.retryAt} = :retryAt, #${ATTR.expiresAt} = :expiresAt REMOVE #${ATTR.lease} ADD #${ATTR.failures} :one`,
        ExpressionAttributeNames: names(ATTR.st, ATTR.retryAt, ATTR.expiresAt, ATTR.lease, ATTR.failures),
        ExpressionAttributeValues: {
          ':unavailable': S(ROBOTS_ST.unavailable),
          ':retryAt': N(retryAt),
          ':expiresAt': expiresAt(this.options),
          ':one': N(1),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return num(out.Attributes, ATTR.failures) ?? 1;
  }
}
