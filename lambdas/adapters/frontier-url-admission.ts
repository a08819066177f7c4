/**
 * Admission of URLs to the frontier (docs/frontier.md, "A URL's life"): a page's links, the seeds and
 * a re-crawl's URLs become URL items in their hosts' partitions, one conditional write each, and the
 * URLs a page budget grants are made fetchable. Apart from frontier-urls.ts because it writes many
 * items a call (`admitConcurrency` in flight), for the pages that found them, where a visit's reads
 * and a result's finalization touch one partition or one item of the host at hand.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { retryStep } from '../core/base/index.ts';
import { type Admission, type AdmitOptions, type FrontierUrl, frontierHost } from '../core/crawl/index.ts';
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
} from './frontier-schema.ts';
import { isCarried } from './frontier-url-item.ts';

const stOf = (candidate: FrontierUrl): string =>
  candidate.carried ? URL_ST.done : candidate.held ? URL_ST.held : URL_ST.new;

/** What one admission put found: created, this parent's own again (held or new, or carried), or another's. */
type Put = 'fresh' | 'again' | 'carried' | false;

export class FrontierUrlAdmission extends FrontierTableAdapter {
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
      [ATTR.sk, ATTR.st, ATTR.parent, ATTR.attempts, ATTR.carried],
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
      attrs.push(ATTR.prior);
      values[`:${ATTR.prior}`] = S(JSON.stringify(candidate.prior));
    }
    return { attrs, values };
  }

  private async putCarried(crawlId: string, parentKey: string, candidate: FrontierUrl): Promise<Put> {
    const { attrs, values } = this.admittedAttrs(parentKey, candidate);
    attrs.push(ATTR.st, ATTR.carried);
    values[':st'] = S(URL_ST.done);
    values[':carried'] = { BOOL: true };
    try {
      const previous = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: urlKey(crawlId, frontierHost(candidate.url), candidate.key),
          UpdateExpression: `SET ${attrs.map((attr) => `#${attr} = :${attr}`).join(', ')}`,
          // Written again only as it was: done, carried, by this parent (an SDK repeat, a refetch).
          ConditionExpression: `attribute_not_exists(#${ATTR.pk}) OR (#${ATTR.st} = :st AND #${ATTR.carried} = :carried AND #${ATTR.parent} = :parent)`,
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
}
