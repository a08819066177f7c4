/**
 * Render holds on host items (docs/design/rendering-on-aws.md): a visit holding its host puts one
 * on before it sends a page to the render function, and the render function ends it, sending the
 * host's expected visit message again. Apart from frontier-hosts.ts because the render function, not
 * the visit's lifecycle, is what ends a hold; FrontierHosts inherits these methods.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { RenderHold } from '../core/crawl/index.ts';
import { HostItemAdapter, holdOf, NO_LIVE_LEASE, Update } from './frontier-host-item.ts';
import { ATTR, hostItemKey, isConditionFailed, N, names, S, str } from './frontier-schema.ts';

export class FrontierRenderHolds extends HostItemAdapter {
  async holdForRender(crawlId: string, host: string, holder: string, hold: RenderHold): Promise<boolean> {
    const update = new Update()
      .setAttr(ATTR.renderHold, S(hold.token))
      .setAttr(ATTR.renderHoldUntil, N(hold.until));
    try {
      await this.updateHeld(crawlId, host, holder, update);
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  async renderHold(crawlId: string, host: string): Promise<RenderHold | undefined> {
    return holdOf(await this.read(hostItemKey(crawlId, host), [ATTR.renderHold, ATTR.renderHoldUntil]));
  }

  /**
   * One conditional write, with `next` moved on to `nextAt` if that is later (else a second write
   * without it: DynamoDB has no max, and the condition says which holds).
   */
  async endRender(
    crawlId: string,
    host: string,
    token: string,
    nextAt: number,
    now: number,
  ): Promise<string | undefined> {
    const attempt = async (moveNext: boolean): Promise<string | undefined> => {
      const out = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: hostItemKey(crawlId, host),
          UpdateExpression: `${moveNext ? `SET #${ATTR.next} = :nextAt ` : ''}REMOVE #${ATTR.renderHold}, #${ATTR.renderHoldUntil}, #${ATTR.awaiting}`,
          ConditionExpression: `#${ATTR.renderHold} = :token AND attribute_exists(#${ATTR.visitBy}) AND ${NO_LIVE_LEASE}${moveNext ? ` AND (attribute_not_exists(#${ATTR.next}) OR #${ATTR.next} < :nextAt)` : ''}`,
          ExpressionAttributeNames: names(
            ATTR.renderHold,
            ATTR.renderHoldUntil,
            ATTR.awaiting,
            ATTR.visitBy,
            ATTR.lease,
            ...(moveNext ? [ATTR.next] : []),
          ),
          ExpressionAttributeValues: {
            ':token': S(token),
            ':now': N(now),
            ...(moveNext ? { ':nextAt': N(nextAt) } : {}),
          },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return str(out.Attributes, ATTR.visitBy);
    };
    for (const moveNext of [true, false]) {
      try {
        return await attempt(moveNext);
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
      }
    }
    return undefined;
  }
}
