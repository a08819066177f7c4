/**
 * docs/frontier.md describes the FrontierTable item by item: every attribute the adapters write must
 * be named there (in backticks), so that adding one without documenting it fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ATTR, CRAWL_STATE, ROBOTS_ST, URL_ST } from '../../lambdas/adapters/frontier-schema.ts';

const doc = readFileSync(new URL('../../docs/frontier.md', import.meta.url), 'utf8');

test('every FrontierTable attribute is named in docs/frontier.md', () => {
  const missing = Object.values(ATTR).filter((name) => !doc.includes(`\`${name}\``));
  assert.deepEqual(missing, []);
});

test('so are the o_<outcome> counters and the values of st and state', () => {
  assert.ok(doc.includes('`o_<outcome>`'), 'the o_<outcome> counters');
  const values = [...Object.values(URL_ST), ...Object.values(ROBOTS_ST), ...Object.values(CRAWL_STATE)];
  const missing = values.filter((value) => !doc.includes(`\`${value}\``));
  assert.deepEqual(missing, []);
});
