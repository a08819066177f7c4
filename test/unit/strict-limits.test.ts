// The strict layer's pure parts (local/strict-limits.ts, local/strict-dynamodb.ts): how AWS counts
// and what the throttle option accepts. Over the wire: test/integration/strict-limits.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DYNAMODB_THROTTLE_ENV, throttleFromEnv } from '../../local/strict-dynamodb.ts';
import { dynamoItemSize, isValidMessageGroupId, sqsMessageSize } from '../../local/strict-limits.ts';

describe('dynamoItemSize', () => {
  it('counts names and strings in UTF-8 bytes, numbers by significant digits, containers with overhead', () => {
    assert.equal(dynamoItemSize({ pk: { S: 'abc' } }), 2 + 3);
    assert.equal(dynamoItemSize({ é: { S: 'é' } }), 2 + 2, 'UTF-8, not UTF-16 units');
    assert.equal(dynamoItemSize({ n: { N: '12345' } }), 1 + 3 + 1, '5 digits: 3 bytes + 1');
    assert.equal(dynamoItemSize({ n: { N: '-0.00100' } }), 1 + 1 + 1, 'zeros and sign trimmed');
    assert.equal(dynamoItemSize({ b: { B: Buffer.from('abcd').toString('base64') } }), 1 + 4);
    assert.equal(dynamoItemSize({ f: { BOOL: true }, z: { NULL: true } }), 2 + 2);
    assert.equal(dynamoItemSize({ s: { SS: ['a', 'bb'] } }), 1 + 3);
    assert.equal(dynamoItemSize({ l: { L: [{ S: 'a' }, { N: '1' }] } }), 1 + 3 + (1 + 1) + (1 + 2));
    assert.equal(dynamoItemSize({ m: { M: { k: { S: 'v' } } } }), 1 + 3 + (1 + 1 + 1));
  });
});

describe('sqsMessageSize', () => {
  it('is the body plus each attribute name, type and value, in UTF-8 bytes (binary decoded)', () => {
    assert.equal(
      sqsMessageSize({
        MessageBody: 'é',
        MessageAttributes: {
          code: { DataType: 'String', StringValue: 'x' },
          raw: { DataType: 'Binary', BinaryValue: Buffer.from([1, 2, 3]).toString('base64') },
        },
      }),
      2 + (4 + 6 + 1) + (3 + 6 + 3),
    );
  });
});

describe('isValidMessageGroupId', () => {
  it('takes 1 to 128 alphanumeric and punctuation characters', () => {
    assert.ok(isValidMessageGroupId('a'.repeat(128)));
    assert.ok(isValidMessageGroupId('[::1]:8080'));
    assert.ok(!isValidMessageGroupId('a'.repeat(129)));
    assert.ok(!isValidMessageGroupId(''));
    assert.ok(!isValidMessageGroupId('a b'));
    assert.ok(!isValidMessageGroupId('bücher'));
  });
});

describe(`${DYNAMODB_THROTTLE_ENV}`, () => {
  it('is off when unset, a rate, or a rate and a key prefix', () => {
    assert.equal(throttleFromEnv({}), undefined);
    assert.deepEqual(throttleFromEnv({ [DYNAMODB_THROTTLE_ENV]: '0.25' }), { rate: 0.25 });
    assert.deepEqual(throttleFromEnv({ [DYNAMODB_THROTTLE_ENV]: '0.3:CRAWL#' }), {
      rate: 0.3,
      keyPrefix: 'CRAWL#',
    });
  });

  it('refuses a rate outside 0..1 or not a number, naming the form expected', () => {
    for (const bad of ['2', '-0.1', 'often', ':CRAWL#'])
      assert.throws(() => throttleFromEnv({ [DYNAMODB_THROTTLE_ENV]: bad }), /expected <rate 0\.\.1>/, bad);
  });
});
