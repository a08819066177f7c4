/**
 * The README's limits table states the defaults users rely on: each row is checked against the one
 * place the number lives (lambdas/core/base/limits.ts at run time, cdk/limits.ts at deploy time), so a
 * changed limit with a stale README fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { FETCH_EVENT_SOURCE, QUEUE } from '../../cdk/limits.ts';
import { CONTENT_LIMITS, CRAWL_LIMITS, FETCH_LIMITS, STORAGE_LIMITS } from '../../lambdas/core/base/index.ts';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The rows of the table under `### Limits (defaults)`: first cell → second cell. */
function limitsTable(): Map<string, string> {
  const section = readme.slice(readme.indexOf('### Limits (defaults)'));
  const rows = new Map<string, string>();
  for (const line of section.split('\n').slice(1)) {
    if (line.startsWith('#')) break;
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 4 || cells[1] === 'limit' || /^-+$/.test(cells[1] ?? '')) continue;
    rows.set(cells[1]!, cells[2]!);
  }
  return rows;
}

const MiB = 1024 * 1024;
const seconds = (ms: number) => `${ms / 1000} s`;

test('the README limits table states the limits the code and the stack use', () => {
  const expected: Array<[string, string]> = [
    ['connect timeout', seconds(FETCH_LIMITS.connectTimeoutMs)],
    ['response headers timeout', seconds(FETCH_LIMITS.headersTimeoutMs)],
    ['total deadline per request', seconds(FETCH_LIMITS.totalTimeoutMs)],
    ['body bytes stored per response', `${FETCH_LIMITS.maxBodyBytes / MiB} MiB`],
    ['redirect hops', String(FETCH_LIMITS.maxRedirects)],
    ['URL length', String(FETCH_LIMITS.maxUrlLength)],
    [
      'attempts for retryable failures',
      `${CRAWL_LIMITS.maxAttempts} (the queues' maxReceiveCount is ${QUEUE.maxReceiveCount})`,
    ],
    ['response body bytes held at once per fetch container', `${STORAGE_LIMITS.bufferedBodyBytes / MiB} MiB`],
    ['WARC file size before the next file starts', `${STORAGE_LIMITS.warcFileBytes / MiB} MiB`],
    ['`Retry-After` honoured', `${CRAWL_LIMITS.maxRetryAfterMs / 60_000} min`],
    ['messages per fetch invocation (batch size)', String(FETCH_EVENT_SOURCE.batchSize)],
    ["CPU time of a page's content extraction", `${CONTENT_LIMITS.extractionCpuMs} ms`],
  ];
  const rows = [...limitsTable()];
  const actual = expected.map(([label]) => {
    const row = rows.find(([cell]) => cell.startsWith(label));
    return [label, row?.[1] ?? '(no such row)'];
  });
  assert.deepEqual(actual, expected);
  assert.equal(rows.length, expected.length, 'every row of the table is checked');
});
