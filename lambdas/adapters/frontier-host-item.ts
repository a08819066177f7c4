/**
 * The host item (`CRAWL#<id>#<shard>` / `HOST#<host>`) as its adapters read and write it: its pace
 * and render hold decoded, the update expression a visit's writes are built with, and the two calls
 * they share (a consistent read of one item, a write by the visit holding the host). Apart from
 * frontier-hosts.ts because the visits' writes and the render holds (frontier-render-holds.ts) both
 * use it.
 */
import { type AttributeValue, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { HostPace, RenderHold } from '../core/crawl/index.ts';
import {
  ATTR,
  FrontierTableAdapter,
  hostItemKey,
  type Item,
  N,
  names,
  num,
  S,
  str,
} from './frontier-schema.ts';

/** No visit holds the host at `:now` (its lease is absent or ended). */
export const NO_LIVE_LEASE = `(attribute_not_exists(#${ATTR.lease}) OR #${ATTR.lease} < :now)`;

export function holdOf(item: Item | undefined): RenderHold | undefined {
  const token = str(item, ATTR.renderHold);
  const until = num(item, ATTR.renderHoldUntil);
  return token === undefined || until === undefined ? undefined : { token, until };
}

export function paceOf(item: Item | undefined): HostPace {
  const pace: HostPace = { nextAt: num(item, ATTR.next) ?? 0 };
  const pausedUntil = num(item, ATTR.pausedUntil);
  if (pausedUntil !== undefined) pace.pausedUntil = pausedUntil;
  return pace;
}

/** An update expression built clause by clause, with only the names and values it uses. */
export class Update {
  readonly set: string[] = [];
  readonly remove: string[] = [];
  readonly attrs = new Set<string>();
  readonly values: Item = {};

  setAttr(attr: string, value: AttributeValue): this {
    this.attrs.add(attr);
    this.set.push(`#${attr} = :${attr}`);
    this.values[`:${attr}`] = value;
    return this;
  }

  removeAttr(attr: string): this {
    this.attrs.add(attr);
    this.remove.push(`#${attr}`);
    return this;
  }

  /** The pace and inflight a visit saves. Absent ones are removed: DynamoDB has no empty sets. */
  state(state: HostPace & { inflight: readonly string[] }): this {
    this.setAttr(ATTR.next, N(state.nextAt));
    if (state.pausedUntil === undefined) this.removeAttr(ATTR.pausedUntil);
    else this.setAttr(ATTR.pausedUntil, N(state.pausedUntil));
    const inflight = [...new Set(state.inflight)];
    if (inflight.length === 0) this.removeAttr(ATTR.inflight);
    else this.setAttr(ATTR.inflight, { SS: inflight });
    return this;
  }

  get expression(): string {
    const set = this.set.length > 0 ? `SET ${this.set.join(', ')}` : '';
    const remove = this.remove.length > 0 ? ` REMOVE ${this.remove.join(', ')}` : '';
    return `${set}${remove}`.trim();
  }
}

/** What the adapters of host items share: one item's consistent read, and the holder's update. */
export abstract class HostItemAdapter extends FrontierTableAdapter {
  /** An update of the host item by the visit holding it (fails its condition otherwise). */
  protected async updateHeld(crawlId: string, host: string, holder: string, update: Update): Promise<void> {
    await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: hostItemKey(crawlId, host),
        UpdateExpression: update.expression,
        ConditionExpression: `#${ATTR.holder} = :holder`,
        ExpressionAttributeNames: names(ATTR.holder, ...update.attrs),
        ExpressionAttributeValues: { ...update.values, ':holder': S(holder) },
      }),
    );
  }

  protected async read(key: Item, attrs: string[]): Promise<Item | undefined> {
    const out = await this.dynamodb.send(
      new GetItemCommand({
        TableName: this.table,
        Key: key,
        ConsistentRead: true,
        ProjectionExpression: attrs.map((attr) => `#${attr}`).join(', '),
        ExpressionAttributeNames: names(...attrs),
      }),
    );
    return out.Item;
  }
}
