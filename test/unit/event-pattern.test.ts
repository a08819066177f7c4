/**
 * EventBridge event patterns as the local event bus applies a template's rules: the documented
 * matching rules, one clear line for a pattern it cannot apply, and cost linear in the pattern.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileEventPattern, EventPatternError } from '../../local/event-pattern.ts';
import { assertLinear } from '../fixtures/linear-time.ts';

const EVENT = {
  version: '0',
  source: 'serverless-crawler',
  'detail-type': 'Crawl Completed',
  resources: ['arn:aws:s3:::bucket'],
  detail: { crawlId: 'c-1', summary: { urls: 12, byOutcome: { fetched: 10 } }, tags: ['a', 'b'] },
};

const matches = (pattern: unknown, event: unknown = EVENT) => compileEventPattern(pattern).matches(event);

describe('event patterns', () => {
  it('every field must match, and a field matches any value of its list', () => {
    assert.equal(
      matches({ source: ['serverless-crawler'], 'detail-type': ['Crawl Started', 'Crawl Completed'] }),
      true,
    );
    assert.equal(matches({ source: ['serverless-crawler'], 'detail-type': ['Crawl Started'] }), false);
    assert.equal(matches({ source: ['other'] }), false);
  });

  it('nested objects match nested fields; an array field matches when any element does', () => {
    assert.equal(matches({ detail: { summary: { urls: [12] } } }), true);
    assert.equal(matches({ detail: { tags: ['b'] } }), true);
    assert.equal(matches({ detail: { tags: ['c'] } }), false);
    assert.equal(matches({ detail: { missing: { deeper: ['x'] } } }), false);
  });

  it('content filters: prefix, suffix, equals-ignore-case, anything-but, exists, numeric', () => {
    assert.equal(matches({ 'detail-type': [{ prefix: 'Crawl ' }] }), true);
    assert.equal(matches({ 'detail-type': [{ suffix: 'Completed' }] }), true);
    assert.equal(matches({ 'detail-type': [{ 'equals-ignore-case': 'crawl completed' }] }), true);
    assert.equal(matches({ 'detail-type': [{ 'anything-but': ['Crawl Completed'] }] }), false);
    assert.equal(matches({ 'detail-type': [{ 'anything-but': 'Page Changed' }] }), true);
    assert.equal(matches({ 'detail-type': [{ 'anything-but': { prefix: 'Page' } }] }), true);
    assert.equal(matches({ detail: { crawlId: [{ exists: true }] } }), true);
    assert.equal(matches({ detail: { since: [{ exists: false }] } }), true);
    assert.equal(matches({ detail: { since: [{ exists: true }] } }), false);
    assert.equal(matches({ detail: { summary: { urls: [{ numeric: ['>', 10, '<=', 12] }] } } }), true);
    assert.equal(matches({ detail: { summary: { urls: [{ numeric: ['<', 5] }] } } }), false);
  });

  it('a value of another type never matches (a number is not its string)', () => {
    assert.equal(matches({ detail: { summary: { urls: ['12'] } } }), false);
    assert.equal(matches({ detail: { crawlId: [{ prefix: 'c' }] } }, { detail: { crawlId: 7 } }), false);
  });

  it('a pattern it cannot apply is refused at load with one line naming the field and what is wrong', () => {
    const refused = (pattern: unknown, message: RegExp) =>
      assert.throws(
        () => compileEventPattern(pattern),
        (error: unknown) =>
          error instanceof EventPatternError && message.test(error.message) && !error.message.includes('\n'),
      );
    refused('{not json', /not JSON/);
    refused(['a'], /must be a JSON object/);
    refused({ source: 'serverless-crawler' }, /field source: expected an array of values or an object/);
    refused({ source: [{ wildcard: 'x*' }] }, /filter "wildcard" is not supported locally/);
    refused({ source: [{ prefix: 1 }] }, /prefix takes a string/);
    refused({ n: [{ numeric: ['>', 'x'] }] }, /numeric takes/);
    refused({ n: [{ prefix: 'a', suffix: 'b' }] }, /exactly one key/);
    let deep: Record<string, unknown> = { leaf: ['x'] };
    for (let i = 0; i < 40; i++) deep = { nested: deep };
    refused(deep, /nested deeper than 32/);
  });

  it('a JSON text pattern (as a template may hold it) works as its object', () => {
    assert.equal(matches(JSON.stringify({ source: ['serverless-crawler'] })), true);
  });

  it('costs time linear in the pattern: 4x the values is about 4x the time, not 16x', () => {
    assertLinear({
      what: 'values of a pattern field',
      n: 20_000,
      time: (n) => {
        const pattern = { 'detail-type': Array.from({ length: n }, (_, i) => `type ${i}`) };
        const compiled = compileEventPattern(pattern);
        const started = performance.now();
        for (let i = 0; i < 20; i++) compiled.matches(EVENT);
        return performance.now() - started;
      },
    });
  });
});
