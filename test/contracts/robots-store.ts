/**
 * What the robots gate (lambdas/core/robots/robots-gate.ts) relies on from a RobotsStore, run against the
 * in-memory fake (test/fakes/robots-store.ts) and FrontierRobots on dynalite
 * (test/integration/port-contracts.test.ts), so the fake cannot drift from the adapter.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { INLINE_POLICY_MAX_BYTES } from '../../lambdas/adapters/frontier-robots.ts';
import type { RobotsStore } from '../../lambdas/core/crawl/index.ts';
import { DISALLOW_ALL } from '../../lambdas/core/robots/index.ts';

const T0 = Date.UTC(2025, 0, 1);
const ORIGIN = 'https://site.example';
const LEASE_MS = 10_000;

/** `maxAgeMs`: how old a ready policy is before it may be fetched again (the store's setting). */
export function robotsStoreContract(
  name: string,
  make: () => RobotsStore,
  options: { maxAgeMs: number },
): void {
  const crawl = () => `robots-${randomUUID().slice(0, 8)}`;

  describe(`RobotsStore contract: ${name}`, () => {
    it('an origin nobody has fetched reads missing', async () => {
      assert.deepEqual(await make().read(crawl(), ORIGIN), { state: 'missing' });
    });

    it('a claim is exclusive until its lease ends: one of many concurrent claimers wins, nobody else before the lease is over', async () => {
      const store = make();
      const crawlId = crawl();
      const claims = await Promise.all(
        Array.from({ length: 8 }, () => store.claim(crawlId, ORIGIN, LEASE_MS, T0)),
      );
      assert.equal(claims.filter(Boolean).length, 1, `granted: ${claims.join()}`);
      assert.deepEqual(await store.read(crawlId, ORIGIN), { state: 'fetching', lease: T0 + LEASE_MS });
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0 + LEASE_MS), false, 'at the lease end');
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0 + LEASE_MS + 1), true, 'after it');
      assert.deepEqual(await store.read(crawlId, ORIGIN), {
        state: 'fetching',
        lease: T0 + 2 * LEASE_MS + 1,
      });
    });

    it('entries are per crawl and per origin: a claim holds nothing else', async () => {
      const store = make();
      const crawlId = crawl();
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0), true);
      assert.equal(await store.claim(crawl(), ORIGIN, LEASE_MS, T0), true, 'another crawl');
      assert.equal(await store.claim(crawlId, 'https://other.example', LEASE_MS, T0), true, 'another origin');
      assert.deepEqual(await store.read(crawlId, 'http://site.example'), { state: 'missing' });
    });

    it('a saved policy reads back with its time, and is claimed again only once it is maxAge old', async () => {
      const store = make();
      const crawlId = crawl();
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0), true);
      const policy = JSON.stringify({ groups: [{ agents: ['*'], rules: [['disallow', '/x']] }] });
      await store.saveReady(crawlId, ORIGIN, policy, T0 + 5);
      assert.deepEqual(await store.read(crawlId, ORIGIN), {
        state: 'ready',
        policyJson: policy,
        fetchedAt: T0 + 5,
      });
      const stale = T0 + 5 + options.maxAgeMs;
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, stale - 1), false, 'still fresh');
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, stale), true, 'old enough to refetch');
      assert.deepEqual(await store.read(crawlId, ORIGIN), { state: 'fetching', lease: stale + LEASE_MS });
    });

    it('an unavailable robots.txt counts its failures and is not claimed before its retry time; a policy saved starts the count over', async () => {
      const store = make();
      const crawlId = crawl();
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0), true);
      assert.equal(await store.saveUnavailable(crawlId, ORIGIN, T0 + 20_000), 1);
      assert.deepEqual(await store.read(crawlId, ORIGIN), {
        state: 'unavailable',
        retryAt: T0 + 20_000,
        failures: 1,
      });
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0 + 19_999), false, 'before retryAt');
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0 + 20_000), true, 'at retryAt');
      assert.equal(await store.saveUnavailable(crawlId, ORIGIN, T0 + 60_000), 2, 'counted across claims');
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0 + 60_000), true);
      await store.saveReady(crawlId, ORIGIN, '{}', T0 + 61_000);
      assert.equal(await store.saveUnavailable(crawlId, ORIGIN, T0 + 90_000), 1, 'started over');
    });

    it('a failure saved with no entry yet creates it with one failure', async () => {
      const store = make();
      const crawlId = crawl();
      assert.equal(await store.saveUnavailable(crawlId, ORIGIN, T0 + 1000), 1);
      assert.deepEqual(await store.read(crawlId, ORIGIN), {
        state: 'unavailable',
        retryAt: T0 + 1000,
        failures: 1,
      });
    });

    it('a save needs no claim: it replaces the entry, a live claim of another included', async () => {
      const store = make();
      const crawlId = crawl();
      assert.equal(await store.claim(crawlId, ORIGIN, LEASE_MS, T0), true);
      await store.saveReady(crawlId, ORIGIN, '{"a":1}', T0 + 1);
      assert.deepEqual(await store.read(crawlId, ORIGIN), {
        state: 'ready',
        policyJson: '{"a":1}',
        fetchedAt: T0 + 1,
      });
    });

    it('a large policy reads back whole; one too large for an item even gzipped reads back as disallow-all, marked truncated', async () => {
      const store = make();
      const crawlId = crawl();
      // More JSON than an item holds as text, that compresses well (distinct but similar rules).
      const large = JSON.stringify({
        rules: Array.from({ length: 40_000 }, (_, i) => `/p/${i}`),
      });
      assert.ok(Buffer.byteLength(large) > INLINE_POLICY_MAX_BYTES);
      await store.saveReady(crawlId, ORIGIN, large, T0);
      const read = await store.read(crawlId, ORIGIN);
      assert.equal(read.state === 'ready' ? read.policyJson : undefined, large);
      // Random text does not compress: no item can hold it.
      const huge = JSON.stringify({ noise: randomBytes(420_000).toString('base64') });
      await store.saveReady(crawlId, 'https://huge.example', huge, T0);
      const cut = await store.read(crawlId, 'https://huge.example');
      assert.equal(cut.state, 'ready');
      assert.deepEqual(
        JSON.parse(cut.state === 'ready' ? cut.policyJson : '{}'),
        JSON.parse(JSON.stringify({ ...DISALLOW_ALL, truncated: true })),
      );
    });
  });
}
