import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AWS_LIMITS,
  backoffMs,
  backoffSeconds,
  RETRY_BACKOFF,
  retryAfterMs,
} from '../../lambdas/core/base/index.ts';

test('a failed message waits 2 s doubling per receive, at least half the ceiling, capped at 60 s', () => {
  const policy = RETRY_BACKOFF.failedMessage;
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

test('full jitter spreads an AWS step retry from 0 to its ceiling; no jitter is the ceiling itself', () => {
  assert.equal(
    backoffMs(1, RETRY_BACKOFF.awsStep, () => 0),
    0,
  );
  assert.equal(
    backoffMs(2, RETRY_BACKOFF.awsStep, () => 0.5),
    100,
  );
  assert.equal(
    backoffMs(50, RETRY_BACKOFF.awsStep, () => 1),
    RETRY_BACKOFF.awsStep.maxMs,
  );
  const robots = RETRY_BACKOFF.robotsUnreachable;
  assert.deepEqual(
    [1, 2, 3, 11, 12, 1000].map((attempt) => backoffMs(attempt, robots, () => 0)),
    [30_000, 60_000, 120_000, 30_000 * 1024, 30_000 * 1024, 30_000 * 1024],
  );
});

test('every message-delay policy fits within one SQS delay', () => {
  for (const [name, policy] of Object.entries(RETRY_BACKOFF)) {
    if (name === 'robotsUnreachable') continue; // a stored retryAt, not a message delay
    assert.ok(policy.maxMs <= AWS_LIMITS.sqsMaxDelaySeconds * 1000, `${name} fits one SQS delay`);
    assert.ok(policy.baseMs > 0 && policy.baseMs <= policy.maxMs, name);
  }
});

test('Retry-After takes delta seconds or an HTTP date', () => {
  const now = Date.parse('2026-11-29T20:00:00Z');
  assert.equal(retryAfterMs('120', now), 120_000);
  assert.equal(retryAfterMs('Sun, 29 Nov 2026 20:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('soon', now), undefined);
  assert.equal(retryAfterMs(undefined, now), undefined);
});
