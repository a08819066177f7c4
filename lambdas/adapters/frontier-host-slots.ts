/**
 * Per-(crawl, host) request slots (`CRAWL#<id>` / `HOST#<host:port>`): one conditional update
 * reserves the host's next free slot, shared by every concurrent fetcher (docs/frontier.md,
 * "Politeness"). The item holds `next` (epoch ms of the next free slot) and the last `delayMs`.
 */
import { type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { HostSlots } from '../core/ports.ts';
import {
  ATTR,
  ConflictError,
  expiresAt,
  hostKey,
  isConditionFailed,
  N,
  names,
  num,
  type ResolvedOptions,
} from './frontier-schema.ts';

/** Hosts whose last seen `next` this instance keeps, to pick the write that will succeed first. */
const MAX_REMEMBERED_HOSTS = 10_000;
/**
 * With no delay the slot item is only read, for a Retry-After pause; the answer is reused this long,
 * so an unpaced crawl costs one read per host per second per container, not one per request. Another
 * container's pause is therefore seen up to this late (this container's own at once).
 */
const UNPACED_READ_TTL_MS = 1000;

export class FrontierHostSlots implements HostSlots {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;
  private readonly options: ResolvedOptions;
  private readonly lastNext = new Map<string, number>();
  /** Unpaced hosts: the last read of `next` (shared by concurrent reserves while in flight). */
  private readonly unpaced = new Map<string, { next: Promise<number>; readAt: number }>();

  constructor(dynamodb: DynamoDBClient, table: string, options: ResolvedOptions) {
    this.dynamodb = dynamodb;
    this.table = table;
    this.options = options;
  }

  private async readNext(crawlId: string, host: string): Promise<number | undefined> {
    const out = await this.dynamodb.send(
      new GetItemCommand({
        TableName: this.table,
        Key: hostKey(crawlId, host),
        ConsistentRead: true,
        ProjectionExpression: `#${ATTR.next}`,
        ExpressionAttributeNames: names(ATTR.next),
      }),
    );
    return num(out.Item, ATTR.next);
  }

  /**
   * Reserves `slot = max(now, next)` and moves `next` to `slot + delayMs`, atomically, without a read
   * and without conflicts between concurrent reservers. Two complementary conditional writes:
   * - busy host (`next > now`): `ADD next :delay`; the slot is the new `next` minus the delay;
   * - idle or unknown host (`next <= now` or absent): `SET next = now + delay`; the slot is `now`.
   * `next` never decreases, so when one condition fails the other holds on the next try: at most
   * three writes, one in steady state, because the branch to try first comes from the `next` this
   * container saw last for the host.
   *
   * With no delay nothing is written: the slot is `now`, or a pushed-back `next` (Retry-After), read
   * at most once a second per host (UNPACED_READ_TTL_MS), one read shared by concurrent reserves.
   */
  async reserve(crawlId: string, host: string, delayMs: number, now: number): Promise<number> {
    const id = `${crawlId}\n${host}`;
    if (!(delayMs > 0)) return Math.max(now, await this.unpacedNext(id, crawlId, host, now));
    let busy = (this.lastNext.get(id) ?? 0) > now;
    for (let attempt = 0; attempt < this.options.maxConflictAttempts; attempt++) {
      try {
        const next = busy
          ? await this.addDelay(crawlId, host, delayMs, now)
          : await this.start(crawlId, host, delayMs, now);
        this.remember(id, next);
        return next - delayMs;
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        busy = !busy;
      }
    }
    throw new ConflictError(`reserve(${crawlId}, ${host})`, this.options.maxConflictAttempts);
  }

  /** Busy host: `next += delay` if `next > now`; returns the new `next`. */
  private async addDelay(crawlId: string, host: string, delayMs: number, now: number): Promise<number> {
    const out = await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: hostKey(crawlId, host),
        UpdateExpression: `SET #${ATTR.delayMs} = :delay, #${ATTR.expiresAt} = :expiresAt ADD #${ATTR.next} :delay`,
        ConditionExpression: `#${ATTR.next} > :now`,
        ExpressionAttributeNames: names(ATTR.next, ATTR.delayMs, ATTR.expiresAt),
        ExpressionAttributeValues: {
          ':delay': N(delayMs),
          ':now': N(now),
          ':expiresAt': expiresAt(this.options),
        },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    const next = num(out.Attributes, ATTR.next);
    if (next === undefined) throw new Error(`reserve(${crawlId}, ${host}): UpdateItem returned no next`);
    return next;
  }

  /** Idle or unknown host: `next = now + delay` if `next <= now` or absent; returns it. */
  private async start(crawlId: string, host: string, delayMs: number, now: number): Promise<number> {
    await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: hostKey(crawlId, host),
        UpdateExpression: `SET #${ATTR.next} = :next, #${ATTR.delayMs} = :delay, #${ATTR.expiresAt} = :expiresAt`,
        ConditionExpression: `attribute_not_exists(#${ATTR.next}) OR #${ATTR.next} <= :now`,
        ExpressionAttributeNames: names(ATTR.next, ATTR.delayMs, ATTR.expiresAt),
        ExpressionAttributeValues: {
          ':next': N(now + delayMs),
          ':delay': N(delayMs),
          ':now': N(now),
          ':expiresAt': expiresAt(this.options),
        },
      }),
    );
    return now + delayMs;
  }

  private remember(id: string, next: number): void {
    this.lastNext.delete(id);
    this.lastNext.set(id, next);
    if (this.lastNext.size > MAX_REMEMBERED_HOSTS) {
      const oldest = this.lastNext.keys().next().value;
      if (oldest !== undefined) this.lastNext.delete(oldest);
    }
  }

  private unpacedNext(id: string, crawlId: string, host: string, now: number): Promise<number> {
    const cached = this.unpaced.get(id);
    if (cached && now - cached.readAt < UNPACED_READ_TTL_MS) return cached.next;
    const entry = { next: this.readNext(crawlId, host).then((next) => next ?? 0), readAt: now };
    // A failed read is not kept: the next reserve reads again.
    entry.next.catch(() => {
      if (this.unpaced.get(id) === entry) this.unpaced.delete(id);
    });
    this.unpaced.delete(id);
    this.unpaced.set(id, entry);
    if (this.unpaced.size > MAX_REMEMBERED_HOSTS) {
      const oldest = this.unpaced.keys().next().value;
      if (oldest !== undefined) this.unpaced.delete(oldest);
    }
    return entry.next;
  }

  /**
   * Moves the host's next free slot to `notBefore` unless it already is at or beyond it, and records
   * the pause, so fetchers holding earlier-reserved slots see it (`pausedUntil`) and re-reserve.
   */
  async pushBack(crawlId: string, host: string, notBefore: number): Promise<void> {
    const cached = this.unpaced.get(`${crawlId}\n${host}`);
    if (cached) cached.next = cached.next.then((next) => Math.max(next, notBefore));
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: hostKey(crawlId, host),
          UpdateExpression: `SET #${ATTR.pausedUntil} = :notBefore, #${ATTR.expiresAt} = :expiresAt`,
          ConditionExpression: `attribute_not_exists(#${ATTR.pausedUntil}) OR #${ATTR.pausedUntil} < :notBefore`,
          ExpressionAttributeNames: names(ATTR.pausedUntil, ATTR.expiresAt),
          ExpressionAttributeValues: { ':notBefore': N(notBefore), ':expiresAt': expiresAt(this.options) },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: hostKey(crawlId, host),
          UpdateExpression: `SET #${ATTR.next} = :notBefore, #${ATTR.expiresAt} = :expiresAt`,
          ConditionExpression: `attribute_not_exists(#${ATTR.next}) OR #${ATTR.next} < :notBefore`,
          ExpressionAttributeNames: names(ATTR.next, ATTR.expiresAt),
          ExpressionAttributeValues: { ':notBefore': N(notBefore), ':expiresAt': expiresAt(this.options) },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  async pausedUntil(crawlId: string, host: string): Promise<number | undefined> {
    const out = await this.dynamodb.send(
      new GetItemCommand({
        TableName: this.table,
        Key: hostKey(crawlId, host),
        ConsistentRead: true,
        ProjectionExpression: `#${ATTR.pausedUntil}`,
        ExpressionAttributeNames: names(ATTR.pausedUntil),
      }),
    );
    return num(out.Item, ATTR.pausedUntil);
  }
}
