// Throttling is the one DynamoDB error a counter ADD may repeat blindly (the call never took effect);
// any other error may hide a write that happened, so retrying it could count twice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  InternalServerError,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { isThrottling, retryThrottled } from '../../lambdas/adapters/frontier-schema.ts';

const metadata = { $metadata: {} };
const throttling = () => new ThrottlingException({ message: 'Rate exceeded', ...metadata });
const internal = () => new InternalServerError({ message: 'Internal server error', ...metadata });

/** An error the SDK marked as throttling by its retry classification, whatever its name. */
function markedThrottling(): Error {
  return Object.assign(new Error('SlowDown'), { name: 'SlowDown', $retryable: { throttling: true } });
}

/** A call that fails with `errors` in turn, then returns 'ok'; counts its attempts. */
function failing(...errors: unknown[]) {
  const call = async () => {
    call.attempts++;
    const error = errors.shift();
    if (error !== undefined) throw error;
    return 'ok';
  };
  call.attempts = 0;
  return call;
}

describe('isThrottling', () => {
  it('recognizes the throttling errors by name and by the SDK retry classification', () => {
    assert.equal(isThrottling(throttling()), true);
    assert.equal(
      isThrottling(new ProvisionedThroughputExceededException({ message: 'too much', ...metadata })),
      true,
    );
    assert.equal(isThrottling(new RequestLimitExceeded({ message: 'account limit', ...metadata })), true);
    assert.equal(isThrottling(markedThrottling()), true);
  });

  it('does not take other errors, or non-errors, for throttling', () => {
    assert.equal(isThrottling(internal()), false);
    assert.equal(
      isThrottling(Object.assign(new Error('x'), { $retryable: { throttling: false } })),
      false,
      'retryable but not a throttle (e.g. a 500)',
    );
    assert.equal(isThrottling(new Error('ThrottlingException')), false, 'the message does not count');
    assert.equal(isThrottling({ name: 'ThrottlingException' }), false, 'not an Error');
    assert.equal(isThrottling(undefined), false);
  });
});

describe('retryThrottled', () => {
  it('retries a throttled call until it goes through', async () => {
    const call = failing(throttling(), markedThrottling());
    assert.equal(await retryThrottled(call, 3), 'ok');
    assert.equal(call.attempts, 3);
  });

  it('gives up after `attempts` throttled calls with the last throttle', async () => {
    const last = throttling();
    const call = failing(throttling(), throttling(), last, throttling());
    await assert.rejects(retryThrottled(call, 3), (err) => err === last);
    assert.equal(call.attempts, 3);
  });

  it('makes 5 attempts by default', async () => {
    const call = failing(...Array.from({ length: 6 }, throttling));
    await assert.rejects(retryThrottled(call), ThrottlingException);
    assert.equal(call.attempts, 5);
  });

  it('never retries any other error, even after throttles', async () => {
    const error = internal();
    const call = failing(error);
    await assert.rejects(retryThrottled(call, 5), (err) => err === error);
    assert.equal(call.attempts, 1, 'a 500 may have taken effect: not repeated');

    const late = failing(throttling(), new Error('socket hang up'));
    await assert.rejects(retryThrottled(late, 5), /socket hang up/);
    assert.equal(late.attempts, 2);
  });

  it('makes one call when the first succeeds', async () => {
    const call = failing();
    assert.equal(await retryThrottled(call), 'ok');
    assert.equal(call.attempts, 1);
  });
});
