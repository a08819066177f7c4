/**
 * A host whose visit has stopped is handed back at once, not when the batch's last visit ends
 * (lambdas/core/batches/fetch-batch.ts): two hosts visited by one invocation, one with a single page and one
 * with a dozen at the default 1 s delay. The small host's item must be released (or drained) while
 * the big host's visit, in the same invocation, still fetches. Real handlers on the emulators, a
 * synthetic network (test/fixtures/synthetic-web.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { hostItemKey } from '../../lambdas/adapters/frontier-schema.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import type { LocalAws } from '../../local/local-aws.ts';
import { startSyntheticAws } from '../fixtures/synthetic-aws.ts';
import { SyntheticWeb } from '../fixtures/synthetic-web.ts';

const BIG_HOST_PAGES = 12;

describe('host visits: a visit that stops hands its host back while the batch goes on', () => {
  const web = new SyntheticWeb({
    hosts: 2,
    pagesPerHost: BIG_HOST_PAGES,
    pagesOf: (host) => (host === 0 ? 1 : BIG_HOST_PAGES),
    latencyMs: 20,
  });
  let local: LocalAws;
  let stop: () => Promise<void>;

  before(async () => {
    // One fetch container: both hosts' first visits arrive in one batch.
    ({ local, stop } = await startSyntheticAws(web, { concurrencyOverride: { FetchFunction: 1 } }));
  });
  after(() => stop());

  it('the one-page host is released while the other host, in the same invocation, is still crawled', async () => {
    const config = parseCrawlConfig({ crawlId: `handback-${Date.now().toString(36)}`, seeds: web.seeds() });
    const [small, big] = web.seeds().map((seed) => new URL(seed).host) as [string, string];
    const table = local.outputs.FrontierTableName!;
    const holderOf = async (host: string) => {
      const out = await local.clients.dynamodb.send(
        new GetItemCommand({
          TableName: table,
          Key: hostItemKey(config.crawlId, host),
          ConsistentRead: true,
        }),
      );
      return out.Item === undefined ? { exists: false } : { exists: true, holder: out.Item.holder?.S };
    };

    await submitCrawl(local, config);
    await local.start();
    // Watch the small host: held by a visit, then released or drained. Note who held the big host then.
    let heldBy: string | undefined;
    let released: { at: number; bigHolder: string | undefined } | undefined;
    const watchUntil = Date.now() + 60_000;
    while (released === undefined && Date.now() < watchUntil) {
      const now = await holderOf(small);
      if (heldBy === undefined && now.holder !== undefined) heldBy = now.holder;
      else if (heldBy !== undefined && now.holder !== heldBy)
        released = { at: Date.now(), bigHolder: (await holderOf(big)).holder };
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await local.waitForIdle({ timeoutMs: 120_000 });

    assert.ok(heldBy !== undefined, 'a visit held the small host');
    assert.ok(released !== undefined, 'the small host was released');
    assert.equal(released.bigHolder, heldBy, 'the same invocation still held the big host then');
    const bigRequests = web.requests.filter((request) => request.host === big);
    assert.equal(bigRequests.length, BIG_HOST_PAGES + 1, 'robots.txt and every page of the big host');
    const later = bigRequests.filter((request) => request.at > released!.at).length;
    assert.ok(
      later >= BIG_HOST_PAGES / 2,
      `the big host's visit went on after the release (${later} of its requests came after)`,
    );
  });
});
