import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffSeconds } from '../../lambdas/core/backoff.ts';
import { retryAfterMs } from '../../lambdas/core/http-headers.ts';

test('backoff doubles per attempt within [ceiling/2, ceiling] and is capped', () => {
  const policy = { baseSeconds: 2, maxSeconds: 60 };
  assert.equal(
    backoffSeconds(1, policy, () => 0),
    1,
  );
  assert.equal(
    backoffSeconds(1, policy, () => 1),
    2,
  );
  assert.equal(
    backoffSeconds(3, policy, () => 0),
    4,
  );
  assert.equal(
    backoffSeconds(3, policy, () => 1),
    8,
  );
  assert.equal(
    backoffSeconds(20, policy, () => 1),
    60,
  );
  assert.equal(
    backoffSeconds(20, policy, () => 0),
    30,
  );
});

test('Retry-After takes delta seconds or an HTTP date', () => {
  const now = Date.parse('2026-11-29T20:00:00Z');
  assert.equal(retryAfterMs('120', now), 120_000);
  assert.equal(retryAfterMs('Sun, 29 Nov 2026 20:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('soon', now), undefined);
  assert.equal(retryAfterMs(undefined, now), undefined);
});
