/**
 * Crawl events (issue 26): each detail is built by one function, valid against the JSON Schema
 * published in schemas/events/ (checked with ajv, independently of zod), and those files are what
 * the zod schemas generate.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  type CrawlEvent,
  cancelledEvent,
  endEvent,
  eventOf,
  eventSchemaFiles,
  startedEvent,
} from '../../lambdas/core/batches/index.ts';
import type { CrawlCounters } from '../../lambdas/core/crawl/index.ts';
import { assertValidEvent, SCHEMAS_DIR, schemaValidator } from '../fixtures/event-schemas.ts';

const COUNTERS: CrawlCounters = {
  queued: 12,
  done: 12,
  admitted: 0,
  bytes: 34_000,
  requests: 11,
  byOutcome: { fetched: 10, failed: 2 },
  state: 'complete',
  startedAt: '2026-12-04T10:00:00.000Z',
  endedAt: '2026-12-04T10:01:00.000Z',
};
const KEYS = { summaryKey: 'crawls/c-1/summary.json', resultsPrefix: 'results/c-1/' };

describe('crawl event details', () => {
  it('the schema files in schemas/events/ are what the zod schemas generate (npm run schemas)', () => {
    for (const { name, text } of eventSchemaFiles())
      assert.equal(
        readFileSync(new URL(name, SCHEMAS_DIR), 'utf8'),
        text,
        `${name} is stale: run npm run schemas`,
      );
  });

  it('a crawl that fetched pages ends Completed, with its counts and where its results are', () => {
    const event = endEvent('c-1', COUNTERS, KEYS, new Date(COUNTERS.endedAt!));
    assert.equal(event.kind, 'completed');
    assert.equal(event.detail.eventId, 'c-1:completed');
    assertValidEvent(event);
  });

  it('a crawl that fetched nothing ends Failed, saying what became of its URLs', () => {
    const event = endEvent(
      'c-1',
      { ...COUNTERS, byOutcome: { failed: 3, blocked: 1 }, done: 4 },
      KEYS,
      new Date(),
    );
    assert.equal(event.kind, 'failed');
    assert.match((event as CrawlEvent<'failed'>).detail.reason, /no page was fetched: 3 failed, 1 blocked/);
    assertValidEvent(event);
  });

  it('a re-crawl whose URLs were all not due (skipped) fetched nothing and still ends Completed', () => {
    const event = endEvent('c-1', { ...COUNTERS, byOutcome: { skipped: 12 } }, KEYS, new Date());
    assert.equal(event.kind, 'completed');
  });

  it('Started and Cancelled carry stable ids for consumers to drop repeats by', () => {
    const started = startedEvent('c-1', new Date(), 3, 'c-0');
    const cancelled = cancelledEvent('c-1', '2026-12-04T10:00:30.000Z', 'crawler cancel');
    assert.deepEqual([started.detail.eventId, cancelled.detail.eventId], ['c-1:started', 'c-1:cancelled']);
    assertValidEvent(started);
    assertValidEvent(cancelled);
  });

  it('a detail that breaks its schema is refused where it is built', () => {
    assert.throws(() =>
      eventOf('pageChanged', {
        v: 1,
        eventId: 'x',
        crawlId: 'c',
        at: 'now',
        url: 'http://a/',
        key: 'k',
        change: 'same' as 'new',
        since: 'c-0',
      }),
    );
  });

  it('the JSON Schemas refuse what the zod schemas refuse (a missing field, a wrong change)', () => {
    const validate = schemaValidator('pageChanged');
    assert.equal(
      validate({ v: 1, eventId: 'x', crawlId: 'c', at: 't', url: 'u', key: 'k', change: 'same', since: 's' }),
      false,
    );
    assert.equal(
      validate({ v: 1, eventId: 'x', crawlId: 'c', at: 't', url: 'u', change: 'new', since: 's' }),
      false,
    );
  });
});
