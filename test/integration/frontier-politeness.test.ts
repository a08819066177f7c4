// The robots.txt cache in the FrontierTable (docs/frontier.md) against dynalite. (A host's pace is
// kept by its visit: lambdas/core/fetch/visit-pacer.ts, test/integration/frontier-hosts.test.ts.)
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  createFrontierStore,
  type FrontierStore,
  OVERSIZED_POLICY_JSON,
} from '../../lambdas/adapters/frontier-store.ts';
import { isAllowed, parseRobots } from '../../lambdas/core/robots/index.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';

const TABLE = FRONTIER_TABLE;
let table: FrontierTableFixture;
let store: FrontierStore;
let crawlSeq = 0;
const newCrawl = () => `crawl-${++crawlSeq}`;
const rawItem = (crawlId: string, sk: string) => table.rawItem(crawlId, sk);

before(async () => {
  table = await startFrontierTable();
  store = createFrontierStore(table.dynamodb, TABLE);
});

after(() => table.stop());

describe('robots.txt cache', () => {
  const origin = 'https://example.com';

  it('goes missing → fetching (one claimant) → unavailable → fetching → ready', async () => {
    const crawlId = newCrawl();
    const t0 = Date.now();
    assert.deepEqual(await store.robots.read(crawlId, origin), { state: 'missing' });

    const claims = await Promise.all(
      Array.from({ length: 10 }, () => store.robots.claim(crawlId, origin, 10_000, t0)),
    );
    assert.equal(claims.filter(Boolean).length, 1, 'one fetcher of robots.txt');
    assert.deepEqual(await store.robots.read(crawlId, origin), { state: 'fetching', lease: t0 + 10_000 });
    assert.equal(await store.robots.claim(crawlId, origin, 10_000, t0 + 9_999), false, 'live lease');
    assert.equal(await store.robots.claim(crawlId, origin, 10_000, t0 + 10_001), true, 'holder crashed');

    assert.equal(await store.robots.saveUnavailable(crawlId, origin, t0 + 20_000), 1);
    assert.deepEqual(await store.robots.read(crawlId, origin), {
      state: 'unavailable',
      retryAt: t0 + 20_000,
      failures: 1,
    });
    assert.equal(await store.robots.claim(crawlId, origin, 10_000, t0 + 19_999), false, 'before retryAt');
    assert.equal(await store.robots.claim(crawlId, origin, 10_000, t0 + 20_000), true, 'at retryAt');
    assert.equal(await store.robots.saveUnavailable(crawlId, origin, t0 + 40_000), 2, 'failures add up');
    assert.equal(await store.robots.claim(crawlId, origin, 10_000, t0 + 40_000), true);

    const policy = parseRobots('User-agent: *\nDisallow: /private\nCrawl-delay: 2\n');
    await store.robots.saveReady(crawlId, origin, JSON.stringify(policy), t0 + 41_000);
    assert.deepEqual(await store.robots.read(crawlId, origin), {
      state: 'ready',
      policyJson: JSON.stringify(policy),
      fetchedAt: t0 + 41_000,
    });
    const item = await rawItem(crawlId, `ROBOTS#${origin}`);
    assert.equal(item?.failures, undefined, 'a fetched policy resets the failures');
    assert.equal(item?.lease, undefined);
    assert.equal(item?.retryAt, undefined);

    assert.equal(await store.robots.claim(crawlId, origin, 10_000, t0 + 50_000), false, 'fresh policy');
    const day = 24 * 3600 * 1000;
    assert.equal(
      await store.robots.claim(crawlId, origin, 10_000, t0 + 41_000 + day),
      true,
      'older than 24 h',
    );
  });

  it('stores a policy too large for an item compressed, and one that cannot fit as disallow-all', async () => {
    const crawlId = newCrawl();
    // A robots.txt over the 512 KiB parse limit, of distinct rules: its parsed policy alone is over
    // DynamoDB's 400 KB item limit, but compresses well.
    const text = Array.from({ length: 20_000 }, (_, i) => `Disallow: /section-${i}/page-${i * 7}.html`);
    const policyJson = JSON.stringify(parseRobots(`User-agent: *\n${text.join('\n')}\n`));
    assert.ok(policyJson.length > 500_000, `${policyJson.length}`);
    await store.robots.saveReady(crawlId, origin, policyJson, 1);
    const big = await store.robots.read(crawlId, origin);
    assert.deepEqual(big, { state: 'ready', policyJson, fetchedAt: 1 });

    // Incompressible: stored as a marker and read back as disallow-all (fail closed).
    const noise = JSON.stringify({
      groups: [],
      sitemaps: [randomBytes(600_000).toString('base64')],
      truncated: false,
    });
    await store.robots.saveReady(crawlId, origin, noise, 2);
    const oversized = await store.robots.read(crawlId, origin);
    assert.deepEqual(oversized, { state: 'ready', policyJson: OVERSIZED_POLICY_JSON, fetchedAt: 2 });
    const parsed = JSON.parse(OVERSIZED_POLICY_JSON);
    assert.equal(isAllowed(parsed, 'bot', 'https://example.com/anything'), false);
    assert.equal(parsed.truncated, true);

    // A small policy after a large one replaces it entirely.
    const small = JSON.stringify(parseRobots(''));
    await store.robots.saveReady(crawlId, origin, small, 3);
    assert.deepEqual(await store.robots.read(crawlId, origin), {
      state: 'ready',
      policyJson: small,
      fetchedAt: 3,
    });
    const item = await rawItem(crawlId, `ROBOTS#${origin}`);
    assert.deepEqual(Object.keys(item ?? {}).sort(), ['expiresAt', 'fetchedAt', 'pk', 'policy', 'sk', 'st']);
  });
});
