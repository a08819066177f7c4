// Host slots and the robots.txt cache in the FrontierTable (docs/frontier.md) against dynalite.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  createFrontierStore,
  type FrontierStore,
  OVERSIZED_POLICY_JSON,
} from '../../lambdas/adapters/frontier-store.ts';
import { isAllowed, parseRobots } from '../../lambdas/core/robots.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';

const TABLE = FRONTIER_TABLE;
let table: FrontierTableFixture;
let dynamodb: DynamoDBClient;
let store: FrontierStore;
let crawlSeq = 0;
const newCrawl = () => `crawl-${++crawlSeq}`;
const rawItem = (crawlId: string, sk: string) => table.rawItem(crawlId, sk);

before(async () => {
  table = await startFrontierTable();
  dynamodb = table.dynamodb;
  store = createFrontierStore(dynamodb, TABLE);
});

after(() => table.stop());

describe('host slots', () => {
  it('gives 50 concurrent fetchers of one host 50 distinct slots, one delay apart', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const slots = await Promise.all(
      Array.from({ length: 50 }, () => store.reserve(crawlId, 'example.com:443', 100, now)),
    );
    assert.deepEqual(
      slots.toSorted((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => now + 100 * i),
    );
    const item = await rawItem(crawlId, 'HOST#example.com:443');
    assert.equal(item?.next?.N, String(now + 5000));
    assert.equal(item?.delayMs?.N, '100');
    assert.ok(item?.expiresAt?.N);

    // Other hosts are independent; an idle host's slot is "now", not a past one.
    assert.equal(await store.reserve(crawlId, 'other.example:443', 100, now), now);
    assert.equal(await store.reserve(crawlId, 'example.com:443', 100, now + 60_000), now + 60_000);
  });

  it('costs one write per slot once a container knows the host is busy', async () => {
    const crawlId = newCrawl();
    const client = table.newClient();
    const calls: string[] = [];
    client.middlewareStack.add(
      (next, context) => (args) => {
        calls.push(String(context.commandName));
        return next(args);
      },
      { step: 'initialize' },
    );
    const warm = createFrontierStore(client, TABLE);
    const now = Date.now();
    assert.equal(await warm.reserve(crawlId, 'busy:443', 1_000, now), now);
    calls.length = 0;
    for (let i = 1; i <= 5; i++)
      assert.equal(await warm.reserve(crawlId, 'busy:443', 1_000, now + i), now + 1_000 * i);
    assert.deepEqual(calls, Array(5).fill('UpdateItemCommand'));
    client.destroy();
  });

  it('with no delay answers now at once and writes nothing', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    const slots = await Promise.all(Array.from({ length: 5 }, () => store.reserve(crawlId, 'h:80', 0, now)));
    assert.deepEqual(slots, [now, now, now, now, now]);
    assert.equal(await rawItem(crawlId, 'HOST#h:80'), undefined);
  });

  it('pushBack moves the next slot later (Retry-After), never earlier', async () => {
    const crawlId = newCrawl();
    const now = Date.now();
    assert.equal(await store.reserve(crawlId, 'h:443', 1_000, now), now);
    await store.pushBack(crawlId, 'h:443', now + 30_000);
    assert.equal(await store.reserve(crawlId, 'h:443', 1_000, now), now + 30_000);
    await store.pushBack(crawlId, 'h:443', now + 5_000); // earlier than next: ignored
    assert.equal(await store.reserve(crawlId, 'h:443', 1_000, now), now + 31_000);

    // Also on a host nobody reserved yet, and honoured by a crawl with no delay.
    await store.pushBack(crawlId, 'fresh:443', now + 7_000);
    assert.equal(await store.reserve(crawlId, 'fresh:443', 0, now), now + 7_000);
  });

  it('with no delay, concurrent reserves of one host share one read of its slot item', async () => {
    let reads = 0;
    const counting = Object.create(dynamodb) as DynamoDBClient;
    counting.send = ((command: Parameters<DynamoDBClient['send']>[0]) => {
      if (command instanceof GetItemCommand) reads++;
      return dynamodb.send(command as GetItemCommand);
    }) as DynamoDBClient['send'];
    const container = createFrontierStore(counting, TABLE);
    const crawlId = newCrawl();
    const now = Date.now();
    await Promise.all(Array.from({ length: 25 }, () => container.reserve(crawlId, 'busy:80', 0, now)));
    assert.equal(reads, 1);
    await container.reserve(crawlId, 'busy:80', 0, now + 1_000);
    assert.equal(reads, 2, 'read again once the answer is a second old');
  });

  it("with no delay sees its own pause at once and another container's within a second", async () => {
    const crawlId = newCrawl();
    const other = createFrontierStore(dynamodb, TABLE);
    const now = Date.now();
    assert.equal(await store.reserve(crawlId, 'u:80', 0, now), now);
    await other.pushBack(crawlId, 'u:80', now + 9_000);
    // Read at `now`: reused for a second, so the other container's pause is not seen yet...
    assert.equal(await store.reserve(crawlId, 'u:80', 0, now + 500), now + 500);
    // ...and is after it.
    assert.equal(await store.reserve(crawlId, 'u:80', 0, now + 1_000), now + 9_000);
    await store.pushBack(crawlId, 'u:80', now + 20_000);
    assert.equal(await store.reserve(crawlId, 'u:80', 0, now + 1_100), now + 20_000);
  });
});

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
