/**
 * Host items of visits (`CRAWL#<id>#<shard>` / `HOST#<host>`) and the tallies of drained hosts
 * (`CRAWL#<id>#<shard>` / `DONE#<host>`), docs/design/host-visits.md. A host item exists exactly
 * while its host has work: an admission wakes it (creating it), a visit leases it, and the visit that
 * finds it drained deletes it after recording its exact counts. So the crawl is complete when no `HOST#` item
 * is left, and its totals are the sum of the `DONE#` items: O(hosts), never O(URLs).
 *
 * Every step is one conditional write on one item (no transactions: dynalite has none).
 *
 * This module has the visits' own steps on host items (wake, lease, hand-back, drain, the takeover's
 * sweep); the crawl-wide reads are frontier-host-scans.ts, the render holds frontier-render-holds.ts,
 * the host item's codec frontier-host-item.ts. FrontierHosts is the whole HostVisits port over them.
 */
import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { OUTCOMES, retryStep } from '../core/base/index.ts';
import type {
  HostBusy,
  HostLease,
  HostPace,
  HostRelease,
  HostTally,
  HostVisits,
} from '../core/crawl/index.ts';
import { holdOf, NO_LIVE_LEASE, paceOf, Update } from './frontier-host-item.ts';
import { FrontierHostScans } from './frontier-host-scans.ts';
import { FrontierRenderHolds } from './frontier-render-holds.ts';
import {
  ATTR,
  doneKey,
  expiresAt,
  HOST_SK_PREFIX,
  hostItemKey,
  type Item,
  isConditionFailed,
  N,
  names,
  num,
  outcomeAttr,
  S,
  str,
} from './frontier-schema.ts';

/**
 * A claimed visit send not confirmed sent (`sent`) within this is presumed lost (its sender crashed
 * between the claim and the send), and the next wake sends again. A send known to have happened
 * (confirmed, or a hand-back's, which sends before it releases) is never sent again by a wake,
 * however long its message waits in the queue: a backlog of 10,000 hosts keeps messages queued for
 * 20 minutes, and re-sending them would only make stale copies and send the host to the back of the
 * queue. It must stay below the task queue's redelivery delay (visibility timeout: 6 × 60 s + 1 s),
 * so the redelivered parent of a crashed send finds it stale and re-sends.
 */
export const VISIT_GRACE_MS = 120_000;

const NO_RECENT_VISIT = `(attribute_not_exists(#${ATTR.visitAt}) OR #${ATTR.visitAt} < :stale)`;
/** No visit claimed, or one claimed before `:stale` whose send was never confirmed. */
const NO_VISIT_ON_ITS_WAY = `(attribute_not_exists(#${ATTR.visitAt}) OR (attribute_not_exists(#${ATTR.sent}) AND #${ATTR.visitAt} < :stale))`;

/** The host item's state as `wake` reads it: true when no visit is live or on its way. */
function needsVisit(item: Item | undefined, now: number): boolean {
  const lease = num(item, ATTR.lease);
  const visitAt = num(item, ATTR.visitAt);
  const sent = item?.[ATTR.sent] !== undefined;
  return (
    (lease === undefined || lease < now) &&
    (visitAt === undefined || (!sent && visitAt < now - VISIT_GRACE_MS))
  );
}

/** holdForRender, renderHold and endRender are inherited from frontier-render-holds.ts. */
export class FrontierHosts extends FrontierRenderHolds implements HostVisits {
  /** anyActive, doneTotals and awaiting: frontier-host-scans.ts (its shard memory is this object's). */
  private readonly scans = new FrontierHostScans(this.dynamodb, this.table, this.options);

  /**
   * `ADD wake 1` always: a visit that leased the host before this admission can then no longer drain
   * it (drain is conditional on the wake it saw), so the admitted URL is never stranded. An active
   * host costs that one write. Only when no visit is live or on its way is the send claimed, with a
   * second write under the same condition that sets `visitAt`, so of concurrent wakers one sends.
   *
   * The SDK may repeat a write whose answer was lost. A repeated ADD only moves `wake` on (any change
   * stops a stale drain; it is never counted). A repeated claim would fail its own condition and
   * leave the host claimed with nobody sending, so it carries a token that lets its repeat succeed.
   */
  async wake(crawlId: string, host: string, now: number): Promise<string | undefined> {
    const out = await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: hostItemKey(crawlId, host),
        UpdateExpression: `SET #${ATTR.expiresAt} = :expiresAt ADD #${ATTR.wake} :one`,
        ExpressionAttributeNames: names(ATTR.wake, ATTR.expiresAt),
        ExpressionAttributeValues: { ':one': N(1), ':expiresAt': expiresAt(this.options) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    if (!needsVisit(out.Attributes, now)) return undefined;
    return this.claimSend(crawlId, host, now, now - VISIT_GRACE_MS, NO_VISIT_ON_ITS_WAY);
  }

  /**
   * Claims the sending of the host's visit (`visitAt = now`, `visitBy = <ticket>`) when no lease is
   * live and no visit was claimed at or after `staleBefore` (`due`: a wake also needs the claim
   * unconfirmed): the ticket, or undefined when another claim or a visit is there (or the host is
   * gone: a host drained since is not re-created). The claim is unconfirmed until `confirmSent`.
   */
  private async claimSend(
    crawlId: string,
    host: string,
    now: number,
    staleBefore: number,
    due: string,
  ): Promise<string | undefined> {
    const ticket = randomUUID();
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: hostItemKey(crawlId, host),
          UpdateExpression: `SET #${ATTR.visitAt} = :now, #${ATTR.visitBy} = :token, #${ATTR.expiresAt} = :expiresAt REMOVE #${ATTR.sent}`,
          ConditionExpression: `attribute_exists(#${ATTR.pk}) AND (#${ATTR.visitBy} = :token OR (${NO_LIVE_LEASE} AND ${due}))`,
          ExpressionAttributeNames: names(
            ATTR.pk,
            ATTR.lease,
            ATTR.visitAt,
            ATTR.visitBy,
            ATTR.expiresAt,
            ATTR.sent,
          ),
          ExpressionAttributeValues: {
            ':now': N(now),
            ':stale': N(staleBefore),
            ':token': S(ticket),
            ':expiresAt': expiresAt(this.options),
          },
        }),
      );
      return ticket;
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      // The claim may have been written and only its answer lost. The caller never learns this
      // ticket, so nobody would send its visit: given back (tried as hard as the caller's retries),
      // or the host would wait for a wake after VISIT_GRACE_MS, which may never come.
      await retryStep(() => this.unwake(crawlId, host, ticket)).catch(() => {});
      throw err;
    }
  }

  async unwake(crawlId: string, host: string, ticket: string): Promise<void> {
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: hostItemKey(crawlId, host),
          UpdateExpression: `REMOVE #${ATTR.visitAt}, #${ATTR.visitBy}, #${ATTR.sent}`,
          ConditionExpression: `#${ATTR.visitBy} = :ticket`,
          ExpressionAttributeNames: names(ATTR.visitAt, ATTR.visitBy, ATTR.sent),
          ExpressionAttributeValues: { ':ticket': S(ticket) },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * Records that the visit message carrying `ticket` was sent (if the host still expects it): from
   * then on no wake sends another, however long it waits in the queue. Sets nothing else, not even
   * `expiresAt`: the claim it follows set it.
   */
  async confirmSent(crawlId: string, host: string, ticket: string): Promise<void> {
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: hostItemKey(crawlId, host),
          UpdateExpression: `SET #${ATTR.sent} = :sent`,
          ConditionExpression: `#${ATTR.visitBy} = :ticket`,
          ExpressionAttributeNames: names(ATTR.sent, ATTR.visitBy),
          ExpressionAttributeValues: { ':ticket': S(ticket), ':sent': { BOOL: true } },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * One conditional write takes the lease (and clears `visitAt`: the visit message has arrived, so
   * the next wake after this visit ends may send again). A fresh host item (no `next`: woken after a
   * drain, or new) gets its pace from the `DONE#` item, so a host drained and woken again moments
   * later is still paced from its last request.
   */
  async acquire(
    crawlId: string,
    host: string,
    holder: string,
    leaseUntil: number,
    now: number,
    ticket?: string,
  ): Promise<HostLease | HostBusy> {
    let item: Item;
    try {
      const out = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: hostItemKey(crawlId, host),
          UpdateExpression: `SET #${ATTR.lease} = :until, #${ATTR.holder} = :holder, #${ATTR.took} = :ticket, #${ATTR.expiresAt} = :expiresAt REMOVE #${ATTR.visitAt}, #${ATTR.visitBy}, #${ATTR.sent}, #${ATTR.awaiting}`,
          // Or held by this holder already: an SDK repeat of this call whose first answer was lost.
          // The message must be the one the host expects (its ticket), or the host expects none.
          ConditionExpression: `attribute_exists(#${ATTR.pk}) AND (${NO_LIVE_LEASE} OR #${ATTR.holder} = :holder) AND (attribute_not_exists(#${ATTR.visitBy}) OR #${ATTR.visitBy} = :ticket)`,
          ExpressionAttributeNames: names(
            ATTR.pk,
            ATTR.lease,
            ATTR.holder,
            ATTR.visitAt,
            ATTR.visitBy,
            ATTR.sent,
            ATTR.awaiting,
            ATTR.took,
            ATTR.expiresAt,
          ),
          ExpressionAttributeValues: {
            ':until': N(leaseUntil),
            ':holder': S(holder),
            ':now': N(now),
            ':ticket': S(ticket ?? '-'),
            ':expiresAt': expiresAt(this.options),
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      item = out.Attributes ?? {};
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      // AWS returns the item that failed the condition (none: there is no item); emulators may not.
      const current =
        err.Item ??
        (await this.read(hostItemKey(crawlId, host), [ATTR.pk, ATTR.lease, ATTR.visitBy, ATTR.took]));
      if (current === undefined) return { busy: 'idle' };
      const visitBy = str(current, ATTR.visitBy);
      if (visitBy !== undefined && visitBy !== ticket) return { busy: 'stale' };
      const until = num(current, ATTR.lease) ?? now;
      // A copy of the message the live visit came with (HostBusy's `copy`).
      if (ticket !== undefined && str(current, ATTR.took) === ticket)
        return { busy: 'held', until, copy: true };
      return { busy: 'held', until };
    }
    const pace =
      num(item, ATTR.next) === undefined
        ? paceOf(await this.read(doneKey(crawlId, host), [ATTR.next, ATTR.pausedUntil]))
        : paceOf(item);
    const cursor = str(item, ATTR.cursor);
    const rendering = holdOf(item);
    return {
      holder,
      leaseUntil,
      wake: num(item, ATTR.wake) ?? 0,
      ...pace,
      inflight: item[ATTR.inflight]?.SS ?? [],
      ...(cursor === undefined ? {} : { cursor }),
      ...(rendering === undefined ? {} : { rendering }),
    };
  }

  /**
   * Saves the visit's pace, inflight and cursor and the time its next visit message is due, and gives
   * up the lease. A visit that lost its lease has nothing to hand back: the visit that took the host
   * saves. `sent`: that message is already on its way (a hand-back sends it first), so no wake sends
   * again.
   */
  async release(crawlId: string, host: string, holder: string, state: HostRelease): Promise<void> {
    const update = new Update()
      .state(state)
      .setAttr(ATTR.visitAt, N(state.visitAt))
      .setAttr(ATTR.visitBy, S(state.ticket))
      .setAttr(ATTR.expiresAt, expiresAt(this.options))
      .removeAttr(ATTR.lease)
      .removeAttr(ATTR.holder);
    if (state.cursor === undefined) update.removeAttr(ATTR.cursor);
    else update.setAttr(ATTR.cursor, S(state.cursor));
    if (state.sent) update.setAttr(ATTR.sent, { BOOL: true });
    else update.removeAttr(ATTR.sent);
    if (state.awaiting) update.setAttr(ATTR.awaiting, { BOOL: true });
    else update.removeAttr(ATTR.awaiting);
    if (state.rendering === undefined) update.removeAttr(ATTR.renderHold).removeAttr(ATTR.renderHoldUntil);
    else
      update
        .setAttr(ATTR.renderHold, S(state.rendering.token))
        .setAttr(ATTR.renderHoldUntil, N(state.rendering.until));
    try {
      await this.updateHeld(crawlId, host, holder, update);
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * The `DONE#` item first, then the host item goes: deleted first, a crash would leave the host
   * uncounted with nothing left to visit it. A drain that loses (woken meanwhile) leaves its `DONE#`
   * item to be overwritten by the host's next drain, with exact numbers. A host only gains done URLs,
   * so the put keeps the largest total: a visit whose lease ran out cannot overwrite the tally of
   * the visit that took over with an older one (no host item is left then to correct it).
   */
  async drain(
    crawlId: string,
    host: string,
    holder: string,
    wakeSeen: number,
    tally: HostTally,
    pace: HostPace,
  ): Promise<boolean> {
    const item: Item = {
      ...doneKey(crawlId, host),
      [ATTR.total]: N(tally.total),
      [ATTR.bytes]: N(tally.bytes),
      [ATTR.requests]: N(tally.requests),
      [ATTR.next]: N(pace.nextAt),
      [ATTR.expiresAt]: expiresAt(this.options),
    };
    for (const outcome of OUTCOMES) {
      const count = tally.byOutcome[outcome];
      if (count !== undefined && count !== 0) item[outcomeAttr(outcome)] = N(count);
    }
    if (pace.pausedUntil !== undefined) item[ATTR.pausedUntil] = N(pace.pausedUntil);
    const parts = [...new Set(tally.parts)];
    if (parts.length > 0) item[ATTR.parts] = { SS: parts };
    try {
      await this.dynamodb.send(
        new PutItemCommand({
          TableName: this.table,
          Item: item,
          ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR #${ATTR.total} <= :total`,
          ExpressionAttributeNames: names(ATTR.pk, ATTR.total),
          ExpressionAttributeValues: { ':total': N(tally.total) },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      return false;
    }
    try {
      await this.dynamodb.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: hostItemKey(crawlId, host),
          ConditionExpression: `#${ATTR.holder} = :holder AND #${ATTR.wake} = :wake`,
          ExpressionAttributeNames: names(ATTR.holder, ATTR.wake),
          ExpressionAttributeValues: { ':holder': S(holder), ':wake': N(wakeSeen) },
        }),
      );
      return true;
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      // No host item left: deleted by this call's own first attempt (an SDK repeat after a lost
      // answer) or by the visit that took over; either way the host is drained and the caller must
      // go on to the completion check.
      return (await this.read(hostItemKey(crawlId, host), [ATTR.pk])) === undefined;
    }
  }

  /**
   * The hosts of a crawl that have work and nobody coming: no live lease, and no visit message due
   * at or after `dueBefore` (`visitAt` absent, or before it). Each is claimed again with a new
   * ticket (under the same condition, so a visit or wake that got there first wins), and the tickets
   * are returned: the caller sends their visits, and any older message of the host is stale.
   *
   * For whoever takes over a crawl whose last process died (docs/frontier.md, "Taking over a crawl"):
   * a wake's claim made just before a kill, its message never sent, would otherwise hold the host
   * until a later wake, which a crawl whose last URLs are all on that host never gets. One paged
   * Query of the `HOST#` items per shard (O(active hosts)) and one write per host claimed.
   */
  async sweep(
    crawlId: string,
    now: number,
    dueBefore: number,
  ): Promise<Array<{ host: string; ticket: string }>> {
    const items = this.queryShards(crawlId, HOST_SK_PREFIX, [ATTR.sk, ATTR.lease, ATTR.visitAt]);
    const claimed: Array<{ host: string; ticket: string }> = [];
    for await (const item of items) {
      const lease = num(item, ATTR.lease);
      const visitAt = num(item, ATTR.visitAt);
      if ((lease !== undefined && lease >= now) || (visitAt !== undefined && visitAt >= dueBefore)) continue;
      const host = (str(item, ATTR.sk) ?? '').slice(HOST_SK_PREFIX.length);
      // Sent or not: the process that sent it is gone, and its queue may not have kept it.
      const ticket = await this.claimSend(crawlId, host, now, dueBefore, NO_RECENT_VISIT);
      if (ticket !== undefined) claimed.push({ host, ticket });
    }
    return claimed;
  }

  anyActive(crawlId: string): Promise<boolean> {
    return this.scans.anyActive(crawlId);
  }

  doneTotals(crawlId: string): Promise<HostTally & { hosts: number }> {
    return this.scans.doneTotals(crawlId);
  }

  awaiting(crawlId: string): Promise<string[]> {
    return this.scans.awaiting(crawlId);
  }

  /** One conditional write: `awaiting` goes, and the expected ticket comes back. */
  async hurry(crawlId: string, host: string, now: number): Promise<string | undefined> {
    try {
      const out = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: hostItemKey(crawlId, host),
          UpdateExpression: `REMOVE #${ATTR.awaiting}`,
          ConditionExpression: `attribute_exists(#${ATTR.pk}) AND #${ATTR.awaiting} = :true AND attribute_exists(#${ATTR.visitBy}) AND ${NO_LIVE_LEASE}`,
          ExpressionAttributeNames: names(ATTR.pk, ATTR.awaiting, ATTR.visitBy, ATTR.lease),
          ExpressionAttributeValues: { ':true': { BOOL: true }, ':now': N(now) },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return str(out.Attributes, ATTR.visitBy);
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }
}
