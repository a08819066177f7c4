/**
 * The handlers' log lines go to stderr: on Lambda both streams reach CloudWatch Logs, and
 * `crawler crawl` runs the handlers in its own process, where stdout is the crawl's summary (a
 * warning of the aggregate function after a resume once landed in the middle of it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../lambdas/shared/logger.ts';

test('log lines are JSON on stderr, and nothing reaches stdout', (t) => {
  const out: string[] = [];
  const err: string[] = [];
  t.mock.method(process.stdout, 'write', (chunk: string) => out.push(chunk) > 0);
  t.mock.method(process.stderr, 'write', (chunk: string) => err.push(chunk) > 0);
  const log = createLogger('aggregate', 'info');
  log.warn('results part skipped', { key: 'results/c/1.jsonl.gz' });
  log.debug('not at this level');
  t.mock.restoreAll();
  assert.deepEqual(out, []);
  assert.equal(err.length, 1);
  const line = JSON.parse(err[0]!);
  assert.equal(line.level, 'warn');
  assert.equal(line.service, 'aggregate');
  assert.equal(line.key, 'results/c/1.jsonl.gz');
});
