/**
 * URL items, in their hosts' partitions (`URLS#<crawlId>#<host>` / `<key>`): admission (dedup), a
 * host's URLs as a visit reads them, postponed retries, and finalization (docs/frontier.md, "A URL's
 * life"; docs/design/host-visits.md). Every decision is one conditional write on one item.
 *
 * Admission (`admit`, `promote`) is frontier-url-admission.ts, the item's codec frontier-url-item.ts;
 * FrontierUrls is the whole HostUrlStore (and the URL side of admission and finalization) over them.
 */
import { QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  type Admission,
  type AdmitOptions,
  type FinalizeEntry,
  type FinalizeOutcome,
  type FrontierUrl,
  frontierHost,
  type HostUrl,
  type HostUrlPage,
  type HostUrlStore,
} from '../core/crawl/index.ts';
import {
  ATTR,
  expiresAt,
  FrontierTableAdapter,
  isConditionFailed,
  N,
  names,
  S,
  str,
  URL_ST,
  urlKey,
  urlsPk,
} from './frontier-schema.ts';
import { FrontierUrlAdmission } from './frontier-url-admission.ts';
import { HOST_URL_ATTRS, hostUrl } from './frontier-url-item.ts';

export class FrontierUrls extends FrontierTableAdapter implements HostUrlStore {
  private readonly admission = new FrontierUrlAdmission(this.dynamodb, this.table, this.options);

  /** frontier-url-admission.ts FrontierUrlAdmission.admit. */
  admit(
    crawlId: string,
    parentKey: string,
    candidates: readonly FrontierUrl[],
    options?: AdmitOptions,
  ): Promise<Admission> {
    return this.admission.admit(crawlId, parentKey, candidates, options);
  }

  /** frontier-url-admission.ts FrontierUrlAdmission.promote. */
  promote(crawlId: string, urls: readonly FrontierUrl[]): Promise<void> {
    return this.admission.promote(crawlId, urls);
  }

  /**
   * Up to `limit` URL items of the host after key `after`: one consistent Query (`Limit`, and the
   * partition's own 1 MB a call). Done items come too (a fraction of a read unit each): they clear a
   * visit's `inflight` and make the host's tally.
   */
  async page(crawlId: string, host: string, after: string | undefined, limit: number): Promise<HostUrlPage> {
    const pk = S(urlsPk(crawlId, host));
    const out = await this.dynamodb.send(
      new QueryCommand({
        TableName: this.table,
        ConsistentRead: true,
        KeyConditionExpression: `#${ATTR.pk} = :pk`,
        ProjectionExpression: HOST_URL_ATTRS.map((attr) => `#${attr}`).join(', '),
        ExpressionAttributeNames: names(ATTR.pk, ...HOST_URL_ATTRS),
        ExpressionAttributeValues: { ':pk': pk },
        Limit: limit,
        ...(after === undefined ? {} : { ExclusiveStartKey: { pk, sk: S(after) } }),
      }),
    );
    const page: HostUrlPage = { urls: (out.Items ?? []).map(hostUrl) };
    const next = str(out.LastEvaluatedKey, ATTR.sk);
    if (next !== undefined) page.next = next;
    return page;
  }

  /** The URL items of `keys` that exist: an `exact` read (FrontierTableAdapter.batchGet). */
  async get(crawlId: string, host: string, keys: readonly string[]): Promise<HostUrl[]> {
    const items = await this.batchGet(
      keys.map((key) => urlKey(crawlId, host, key)),
      HOST_URL_ATTRS,
      'exact',
    );
    return items.map(hostUrl);
  }

  /**
   * A fetch that will be retried: the attempts made so far and when the next may start. Only on an
   * existing item that is not done; otherwise (finalized meanwhile, or never admitted) nothing.
   */
  async postpone(
    crawlId: string,
    host: string,
    key: string,
    attempts: number,
    retryAt: number,
  ): Promise<void> {
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, host, key),
          UpdateExpression: `SET #${ATTR.attempts} = :attempts, #${ATTR.retryAt} = :retryAt, #${ATTR.expiresAt} = :expiresAt`,
          ConditionExpression: `attribute_exists(#${ATTR.pk}) AND #${ATTR.st} <> :done`,
          ExpressionAttributeNames: names(ATTR.pk, ATTR.st, ATTR.attempts, ATTR.retryAt, ATTR.expiresAt),
          ExpressionAttributeValues: {
            ':done': S(URL_ST.done),
            ':attempts': N(attempts),
            ':retryAt': N(retryAt),
            ':expiresAt': expiresAt(this.options),
          },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * `st = done` with the outcome, unless the URL already is done by another result. The item keeps
   * the winning result's id (`rid`), the index part its line goes to (`part`), its bytes and request
   * count, and the skipped links it carries (`kids`, when any), so the host's tally comes from its URL
   * items alone.
   *
   * `won`: this result is the one that counts. `repeat`: it had already won (the same result again:
   * an SDK retry whose first attempt took effect, or a redelivery after a crash or a failed step); the
   * item keeps the part its first win named (`part`), where its line may or may not have been written.
   * `created`: no URL item existed (it was never counted as queued, and its host may have no visit);
   * the item is created at depth 0 in the partition of `frontierHost(entry.url)`.
   */
  async finalize(crawlId: string, entry: FinalizeEntry): Promise<FinalizeOutcome> {
    const kids = entry.kids ?? 0;
    try {
      const out = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, frontierHost(entry.url), entry.key),
          UpdateExpression: [
            `SET #${ATTR.st} = :done, #${ATTR.outcome} = :outcome, #${ATTR.rid} = :rid`,
            `#${ATTR.part} = if_not_exists(#${ATTR.part}, :part)`,
            `#${ATTR.bytes} = :bytes, #${ATTR.requests} = :requests`,
            `#${ATTR.url} = if_not_exists(#${ATTR.url}, :url)`,
            `#${ATTR.depth} = if_not_exists(#${ATTR.depth}, :zero)`,
            `#${ATTR.expiresAt} = :expiresAt`,
            ...(kids > 0 ? [`#${ATTR.kids} = :kids`] : []),
          ]
            .join(', ')
            .concat(` REMOVE #${ATTR.retryAt}`),
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
            ATTR.depth,
            ATTR.expiresAt,
            ATTR.retryAt,
            ...(kids > 0 ? [ATTR.kids] : []),
          ),
          ExpressionAttributeValues: {
            ...(kids > 0 ? { ':kids': N(kids) } : {}),
            ':done': S(URL_ST.done),
            ':outcome': S(entry.outcome),
            ':rid': S(entry.rid),
            ':part': S(entry.part),
            ':bytes': N(entry.bytes),
            ':requests': N(entry.requests),
            ':url': S(entry.url),
            ':zero': N(0),
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

  /** Points the done URL at `part`, if result `rid` won it (throws ConditionalCheckFailed otherwise). */
  async repoint(crawlId: string, url: string, key: string, rid: string, part: string): Promise<void> {
    await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: urlKey(crawlId, frontierHost(url), key),
        UpdateExpression: `SET #${ATTR.part} = :part`,
        ConditionExpression: `#${ATTR.rid} = :rid`,
        ExpressionAttributeNames: names(ATTR.part, ATTR.rid),
        ExpressionAttributeValues: { ':part': S(part), ':rid': S(rid) },
      }),
    );
  }
}
