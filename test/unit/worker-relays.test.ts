// A worker's AWS call counts and IAM ledger entries reach the main thread's: each take is what
// accumulated since the last one, and absorbing every take adds up to what the worker counted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwsCallCounter } from '../../lambdas/shared/aws-call-counter.ts';
import { AwsCallLedger } from '../../lambdas/shared/aws-call-ledger.ts';
import { counterRelay, ledgerRelay } from '../../local/worker-relays.ts';

describe('worker relays: the AWS call counter', () => {
  it('relays windows that add up to the worker’s counts, with nothing twice and nothing empty', () => {
    const worker = new AwsCallCounter();
    const main = new AwsCallCounter();
    main.attempt('SQS', 'ReceiveMessage', 100);
    main.call('SQS', 'ReceiveMessage', {}, { Messages: [] }, false);
    const mainBefore = main.snapshot();
    const inWorker = counterRelay(worker);
    const onMain = counterRelay(main);

    assert.equal(inWorker.take(), undefined, 'nothing counted yet');
    worker.attempt('S3', 'PutObject', 2048);
    worker.call('S3', 'PutObject', {}, {}, false);
    worker.attempt('DynamoDB', 'UpdateItem', 300);
    worker.call('DynamoDB', 'UpdateItem', { Item: {} }, { ConsumedCapacity: { CapacityUnits: 1 } }, false);
    const first = inWorker.take();
    assert.ok(first);
    onMain.absorb(first);
    worker.attempt('S3', 'PutObject', 10);
    worker.attempt('S3', 'PutObject', 10);
    worker.call('S3', 'PutObject', {}, undefined, true);
    const second = inWorker.take();
    assert.ok(second);
    onMain.absorb(second);
    assert.equal(inWorker.take(), undefined, 'each count relayed once');

    const workerCounts = worker.snapshot().operations;
    const mainCounts = main.snapshot().operations;
    assert.deepEqual(mainCounts['S3:PutObject'], workerCounts['S3:PutObject']);
    assert.deepEqual(mainCounts['DynamoDB:UpdateItem'], workerCounts['DynamoDB:UpdateItem']);
    assert.deepEqual(mainCounts['SQS:ReceiveMessage'], mainBefore.operations['SQS:ReceiveMessage']);
    assert.equal(mainCounts['S3:PutObject']?.s3Class, 'put');
  });
});

describe('worker relays: the IAM ledger', () => {
  it('hands each recorded call to the main ledger once', () => {
    const worker = new AwsCallLedger();
    const main = new AwsCallLedger();
    worker.enable();
    main.enable();
    const inWorker = ledgerRelay(worker);
    const onMain = ledgerRelay(main);
    const put = { action: 's3:PutObject', resource: 'arn:aws:s3:::b/k' };
    assert.equal(inWorker.take(), undefined, 'nothing recorded yet');
    worker.record('fn', [put], false);
    worker.record('fn', [put], true);
    onMain.absorb(inWorker.take() ?? { entries: [] });
    worker.record('fn', [put], false);
    onMain.absorb(inWorker.take() ?? { entries: [] });
    assert.equal(inWorker.take(), undefined, 'each call relayed once');
    assert.deepEqual(main.snapshot().entries, [{ principal: 'fn', ...put, calls: 3, errors: 1 }]);
  });
});
