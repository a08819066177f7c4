import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_MAX_WAIT_MS,
  effectiveDelayMs,
  hostKey,
  reservedGapMs,
  slotPlan,
} from '../../lambdas/core/crawl/index.ts';

const config = { delayMs: 1000, maxCrawlDelayMs: 30_000 };

describe('effectiveDelayMs', () => {
  it('uses --delay when robots.txt has no Crawl-delay', () => {
    assert.deepEqual(effectiveDelayMs(config, undefined), { delayMs: 1000, capped: false });
  });

  it('uses --delay when the Crawl-delay is smaller or equal', () => {
    assert.deepEqual(effectiveDelayMs(config, 0.5), { delayMs: 1000, capped: false });
    assert.deepEqual(effectiveDelayMs(config, 1), { delayMs: 1000, capped: false });
    assert.deepEqual(effectiveDelayMs(config, 0), { delayMs: 1000, capped: false });
  });

  it('lets a larger Crawl-delay win, fractions in whole ms', () => {
    assert.deepEqual(effectiveDelayMs(config, 5), { delayMs: 5000, capped: false });
    assert.deepEqual(effectiveDelayMs(config, 1.1), { delayMs: 1100, capped: false });
    assert.deepEqual(effectiveDelayMs(config, 2.0004), { delayMs: 2001, capped: false });
  });

  it('caps the Crawl-delay at maxCrawlDelayMs and records it', () => {
    assert.deepEqual(effectiveDelayMs(config, 30), { delayMs: 30_000, capped: false });
    assert.deepEqual(effectiveDelayMs(config, 30.001), { delayMs: 30_000, capped: true });
    assert.deepEqual(effectiveDelayMs(config, 86_400), { delayMs: 30_000, capped: true });
    assert.deepEqual(effectiveDelayMs(config, 1e308), { delayMs: 30_000, capped: true });
    assert.deepEqual(effectiveDelayMs(config, Number.POSITIVE_INFINITY), { delayMs: 30_000, capped: true });
  });

  it('never lowers --delay below what the user asked, even above the cap', () => {
    const slow = { delayMs: 60_000, maxCrawlDelayMs: 30_000 };
    assert.deepEqual(effectiveDelayMs(slow, 45), { delayMs: 60_000, capped: false });
    assert.deepEqual(effectiveDelayMs(slow, 120), { delayMs: 60_000, capped: true });
  });

  it('ignores unusable values', () => {
    assert.deepEqual(effectiveDelayMs(config, Number.NaN), { delayMs: 1000, capped: false });
    assert.deepEqual(effectiveDelayMs(config, -3), { delayMs: 1000, capped: false });
    assert.deepEqual(effectiveDelayMs({ delayMs: 0, maxCrawlDelayMs: 0 }, 10), { delayMs: 0, capped: true });
  });
});

describe('slotPlan', () => {
  const now = 1_000_000;

  it('goes now for a slot that is due', () => {
    assert.deepEqual(slotPlan(now, now), { kind: 'now' });
    assert.deepEqual(slotPlan(now - 5000, now), { kind: 'now' });
  });

  it('waits in the function up to maxWaitMs (default 2 s)', () => {
    assert.equal(DEFAULT_MAX_WAIT_MS, 2000);
    assert.deepEqual(slotPlan(now + 1, now), { kind: 'wait', ms: 1 });
    assert.deepEqual(slotPlan(now + 2000, now), { kind: 'wait', ms: 2000 });
    assert.deepEqual(slotPlan(now + 4000, now, { maxWaitMs: 5000 }), { kind: 'wait', ms: 4000 });
  });

  it('defers a slot further away than maxWaitMs', () => {
    assert.deepEqual(slotPlan(now + 2001, now), { kind: 'defer' });
    assert.deepEqual(slotPlan(now + 3_600_000, now), { kind: 'defer' });
    assert.deepEqual(slotPlan(now + 500, now, { maxWaitMs: 0 }), { kind: 'defer' });
  });
});

describe('hostKey', () => {
  it('is host or host:port, lower-cased, default ports elided', () => {
    assert.equal(hostKey('http://Example.COM/a'), 'example.com');
    assert.equal(hostKey('http://example.com:80/a'), 'example.com');
    assert.equal(hostKey('https://example.com:443/'), 'example.com');
    assert.equal(hostKey('https://example.com:80/'), 'example.com:80');
    assert.equal(hostKey('http://example.com:8080/'), 'example.com:8080');
    assert.equal(hostKey(new URL('http://127.0.0.1:4000/x?y')), '127.0.0.1:4000');
    assert.equal(hostKey('http://[::1]:8080/'), '[::1]:8080');
    assert.equal(hostKey('http://bücher.example/'), 'xn--bcher-kva.example');
  });

  it('shares one key between http and https of a host, and ignores user info', () => {
    assert.equal(hostKey('http://a.example/'), hostKey('https://a.example/'));
    assert.equal(hostKey('http://user:pw@a.example/'), 'a.example');
  });

  it('throws for a string that is not an absolute URL', () => {
    assert.throws(() => hostKey('/relative'), TypeError);
  });
});

describe('reservedGapMs', () => {
  it('adds a 10 % margin, at most 100 ms, and nothing to no delay', () => {
    assert.equal(reservedGapMs(0), 0);
    assert.equal(reservedGapMs(400), 440);
    assert.equal(reservedGapMs(1000), 1100);
    assert.equal(reservedGapMs(30_000), 30_100);
  });
});
