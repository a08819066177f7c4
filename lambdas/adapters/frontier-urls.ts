/**
 * URL items, in their hosts' partitions (`URLS#<crawlId>#<host>` / `<key>`): admission (dedup), a
 * host's URLs as a visit reads them, postponed retries, and finalization (docs/frontier.md, "A URL's
 * life"; docs/design/host-visits.md). Every decision is one conditional write on one item.
 */
import { QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { OUTCOMES, type Outcome, retryStep } from '../core/base/index.ts';
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
  type PriorCapture,
  PriorCaptureSchema,
} from '../core/crawl/index.ts';
import {
  ATTR,
  expiresAt,
  FrontierTableAdapter,
  type Item,
  isConditionFailed,
  N,
  names,
  num,
  S,
  str,
  URL_ST,
  urlKey,
  urlsPk,
} from './frontier-schema.ts';

/**
 * URL item attributes of carried links (docs/frontier.md, "Skipped links"), kept here while
 * frontier-schema.ts's ATTR is being changed by another branch: `carried` (true: a skipped link
 * created done, its line carried by its page's result) and `kids` (on a done page: the links its
 * winning result carried).
 */
const CARRY_ATTR = { carried: 'carried', kids: 'kids' } as const;

/** A re-crawl's URL item: its capture in the crawl it follows, as JSON (core/crawl/recrawl.ts). */
const PRIOR_ATTR = 'prior';

/** What `page` and `get` read of a URL item (everything but its keys' pk, `rid` and `expiresAt`). */
const HOST_URL_ATTRS = [
  ATTR.sk,
  ATTR.url,
  ATTR.depth,
  ATTR.st,
  ATTR.parent,
  ATTR.redirects,
  ATTR.attempts,
  ATTR.retryAt,
  ATTR.outcome,
  ATTR.bytes,
  ATTR.requests,
  ATTR.part,
  CARRY_ATTR.carried,
  CARRY_ATTR.kids,
  PRIOR_ATTR,
];

const OUTCOME_SET: ReadonlySet<string> = new Set(OUTCOMES);

const stOf = (candidate: FrontierUrl): string =>
  candidate.carried ? URL_ST.done : candidate.held ? URL_ST.held : URL_ST.new;

const isCarried = (item: Item | undefined): boolean => item?.[CARRY_ATTR.carried]?.BOOL === true;

/** A URL item as a visit reads it (absent attributes are left out). */
function hostUrl(item: Item): HostUrl {
  const st = str(item, ATTR.st);
  const url: HostUrl = {
    key: str(item, ATTR.sk) ?? '',
    url: str(item, ATTR.url) ?? '',
    depth: num(item, ATTR.depth) ?? 0,
    st: st === URL_ST.done || st === URL_ST.held ? st : URL_ST.new,
  };
  const parent = str(item, ATTR.parent);
  if (parent !== undefined) url.parent = parent;
  const redirects = num(item, ATTR.redirects);
  if (redirects !== undefined) url.redirects = redirects;
  const attempts = num(item, ATTR.attempts);
  if (attempts !== undefined) url.attempts = attempts;
  const retryAt = num(item, ATTR.retryAt);
  if (retryAt !== undefined) url.retryAt = retryAt;
  const outcome = str(item, ATTR.outcome);
  if (outcome !== undefined && OUTCOME_SET.has(outcome)) url.outcome = outcome as Outcome;
  const bytes = num(item, ATTR.bytes);
  if (bytes !== undefined) url.bytes = bytes;
  const requests = num(item, ATTR.requests);
  if (requests !== undefined) url.requests = requests;
  const part = str(item, ATTR.part);
  if (part !== undefined) url.part = part;
  if (isCarried(item)) url.carried = true;
  const kids = num(item, CARRY_ATTR.kids);
  if (kids !== undefined) url.kids = kids;
  // Only a URL still to fetch asks with its capture: a visit's passes read done items again and again.
  const prior = url.st === URL_ST.new ? priorCapture(str(item, PRIOR_ATTR)) : undefined;
  if (prior !== undefined) url.prior = prior;
  return url;
}

/** The stored capture, or undefined if absent or unreadable (then the URL is fetched as a new one). */
function priorCapture(json: string | undefined): PriorCapture | undefined {
  if (json === undefined) return undefined;
  try {
    const parsed = PriorCaptureSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** What one admission put found: created, this parent's own again (held or new, or carried), or another's. */
type Put = 'fresh' | 'again' | 'carried' | false;

export class FrontierUrls extends FrontierTableAdapter implements HostUrlStore {
  /**
   * One conditional write per candidate (duplicate keys in one call are tried once), each in its
   * host's partition, at most `admitConcurrency` in flight. A `carried` candidate is created done
   * (`st = done`, `carried = true`), a `held` one (admitted as skipped, or awaiting the page budget)
   * with `st = held`, any other with `st = new`. Returns, in input order, the candidates that are new
   * to the crawl (`fresh`) or are this parent's own earlier admissions not yet attempted (`st` new or
   * held, no attempts: a retried batch wakes their hosts again) or carried (its result carries them
   * again); the item is left as it is, and `carried` says what it is. Any error other than a failed
   * condition is thrown once the writes in flight have settled.
   */
  async admit(
    crawlId: string,
    parentKey: string,
    candidates: readonly FrontierUrl[],
    options: AdmitOptions = {},
  ): Promise<Admission> {
    const unique: FrontierUrl[] = [];
    const keys = new Set<string>();
    for (const candidate of candidates) {
      if (keys.has(candidate.key)) continue;
      keys.add(candidate.key);
      unique.push(candidate);
    }
    const admitted = new Array<Put>(unique.length).fill(false);
    // Most links of a page are already in the frontier (navigation, pages linked from many pages).
    // Reading one costs a tenth of a failed conditional put: half a read unit (an eventually
    // consistent read of an item under 4 KB) against a write unit, at $0.125 against $0.625 a million
    // units; and one call reads a hundred. Only URLs the read did not find are put. A read that misses
    // a just-written item only costs that put, which then fails.
    const existing =
      options.probe === false ? new Map<string, Item>() : await this.readExisting(crawlId, unique);
    const toPut: number[] = [];
    const settled: string[] = [];
    for (const [index, candidate] of unique.entries()) {
      const item = existing.get(candidate.key);
      if (item === undefined) {
        toPut.push(index);
        continue;
      }
      // This parent's own earlier admission, not attempted yet: admitted again, unchanged (a `new`
      // item, promoted by the page budget, stays `new` even when the candidate comes `held` again),
      // or carried by it (its result, sent again, carries it again).
      const st = str(item, ATTR.st);
      const own = str(item, ATTR.parent) === parentKey;
      if ((st === URL_ST.new || st === URL_ST.held) && own && num(item, ATTR.attempts) === undefined)
        admitted[index] = 'again';
      else if (st === URL_ST.done && own && isCarried(item)) admitted[index] = 'carried';
      // Another page's carried link is not settled: its line goes out with that page's result.
      else if (st === URL_ST.new || (st === URL_ST.done && !isCarried(item))) settled.push(candidate.key);
    }
    await this.inParallel(toPut, async (index) => {
      const candidate = unique[index];
      if (candidate === undefined) return;
      // Repeating a write is safe: if the first took effect, the repeat is this parent's re-admission.
      admitted[index] = await retryStep(() => this.put(crawlId, parentKey, candidate));
    });
    return {
      admitted: unique.flatMap((candidate, index) => {
        const state = admitted[index];
        if (!state) return [];
        const { carried: _carried, ...url } = candidate;
        if (state === 'carried') return [{ ...url, carried: true, fresh: false }];
        return [{ ...(state === 'fresh' ? candidate : url), fresh: state === 'fresh' }];
      }),
      settled,
    };
  }

  /**
   * The URL items that exist among `urls`, by key (FrontierTableAdapter.batchGet: a key left unread
   * after throttling is simply put).
   */
  private async readExisting(crawlId: string, urls: readonly FrontierUrl[]): Promise<Map<string, Item>> {
    const items = await this.batchGet(
      urls.map((url) => urlKey(crawlId, frontierHost(url.url), url.key)),
      [ATTR.sk, ATTR.st, ATTR.parent, ATTR.attempts, CARRY_ATTR.carried],
      'hint',
    );
    const found = new Map<string, Item>();
    // A key names one URL, and a URL one host: the sort key alone identifies the item.
    for (const item of items) {
      const sk = str(item, ATTR.sk);
      if (sk !== undefined) found.set(sk, item);
    }
    return found;
  }

  /**
   * 'fresh' when the item did not exist (count it as queued), 'again' for this parent's own
   * re-admission, which changes nothing: an update rather than a put, so `st` is set only on creation.
   * A carried candidate is created done, and is admitted again only by the parent that carried it
   * ('carried'): a held or new item its put meets (an earlier fetch of the page admitted it otherwise,
   * the read having missed it) is left to that path's read (false).
   */
  private async put(crawlId: string, parentKey: string, candidate: FrontierUrl): Promise<Put> {
    if (candidate.carried) return this.putCarried(crawlId, parentKey, candidate);
    const { attrs, values } = this.admittedAttrs(parentKey, candidate);
    try {
      const previous = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, frontierHost(candidate.url), candidate.key),
          UpdateExpression: `SET ${attrs.map((attr) => `#${attr} = :${attr}`).join(', ')}, #${ATTR.st} = if_not_exists(#${ATTR.st}, :st)`,
          // A re-admission never touches an item that has had a fetch attempt (its attempts count).
          ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR ((#${ATTR.st} = :new OR #${ATTR.st} = :held) AND #${ATTR.parent} = :parent AND attribute_not_exists(#${ATTR.attempts}))`,
          ExpressionAttributeNames: names(ATTR.pk, ATTR.st, ATTR.attempts, ...attrs),
          ExpressionAttributeValues: {
            ...values,
            ':st': S(stOf(candidate)),
            ':new': S(URL_ST.new),
            ':held': S(URL_ST.held),
          },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return previous.Attributes === undefined ? 'fresh' : 'again';
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /** What every admission writes on a URL item: `SET #a = :a` for each attribute, with its value. */
  private admittedAttrs(parentKey: string, candidate: FrontierUrl): { attrs: string[]; values: Item } {
    const attrs: string[] = [ATTR.url, ATTR.depth, ATTR.parent, ATTR.expiresAt];
    const values: Item = {
      ':url': S(candidate.url),
      ':depth': N(candidate.depth),
      ':parent': S(parentKey),
      ':expiresAt': expiresAt(this.options),
    };
    if (candidate.redirects !== undefined) {
      attrs.push(ATTR.redirects);
      values[':redirects'] = N(candidate.redirects);
    }
    if (candidate.prior !== undefined) {
      attrs.push(PRIOR_ATTR);
      values[`:${PRIOR_ATTR}`] = S(JSON.stringify(candidate.prior));
    }
    return { attrs, values };
  }

  private async putCarried(crawlId: string, parentKey: string, candidate: FrontierUrl): Promise<Put> {
    const { attrs, values } = this.admittedAttrs(parentKey, candidate);
    attrs.push(ATTR.st, CARRY_ATTR.carried);
    values[':st'] = S(URL_ST.done);
    values[':carried'] = { BOOL: true };
    try {
      const previous = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, frontierHost(candidate.url), candidate.key),
          UpdateExpression: `SET ${attrs.map((attr) => `#${attr} = :${attr}`).join(', ')}`,
          // Written again only as it was: done, carried, by this parent (an SDK repeat, a refetch).
          ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR (#${ATTR.st} = :st AND #${CARRY_ATTR.carried} = :carried AND #${ATTR.parent} = :parent)`,
          ExpressionAttributeNames: names(ATTR.pk, ...attrs),
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_OLD',
        }),
      );
      return previous.Attributes === undefined ? 'fresh' : 'carried';
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /**
   * Makes `held` URLs fetchable (`st = new`): the ones a page budget granted. One conditional update
   * each, at most `admitConcurrency` in flight; an item that is not `held` (promoted already, done, or
   * gone) is left as it is.
   */
  async promote(crawlId: string, urls: readonly FrontierUrl[]): Promise<void> {
    const unique = [...new Map(urls.map((url) => [url.key, url])).values()];
    await this.inParallel(
      unique.map((_, index) => index),
      async (index) => {
        const url = unique[index];
        if (url === undefined) return;
        await retryStep(() => this.promoteOne(crawlId, url));
      },
    );
  }

  private async promoteOne(crawlId: string, url: FrontierUrl): Promise<void> {
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, frontierHost(url.url), url.key),
          UpdateExpression: `SET #${ATTR.st} = :new`,
          ConditionExpression: `#${ATTR.st} = :held`,
          ExpressionAttributeNames: names(ATTR.st),
          ExpressionAttributeValues: { ':new': S(URL_ST.new), ':held': S(URL_ST.held) },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * Runs `step` for each of `indexes`, at most `admitConcurrency` at once. The first error stops new
   * steps and is thrown once the steps in flight have settled.
   */
  private async inParallel(
    indexes: readonly number[],
    step: (index: number) => Promise<void>,
  ): Promise<void> {
    let next = 0;
    let failure: { error: unknown } | undefined;
    const worker = async () => {
      while (failure === undefined && next < indexes.length) {
        const index = indexes[next++]!;
        try {
          await step(index);
        } catch (error) {
          failure ??= { error };
        }
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(this.options.admitConcurrency, indexes.length) }, worker),
    );
    if (failure !== undefined) throw failure.error;
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
            ...(kids > 0 ? [`#${CARRY_ATTR.kids} = :kids`] : []),
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
            ...(kids > 0 ? [CARRY_ATTR.kids] : []),
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
