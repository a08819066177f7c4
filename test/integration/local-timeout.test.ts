// The local runtime enforces a function's timeout the way Lambda does: a handler module (run in a
// worker thread) whose invocation outlives the timeout is cut off, so what it would do afterwards
// (here an S3 PUT) never happens. Its AWS calls still reach the process-wide call counter (relayed from the worker).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { HeadObjectCommand, NotFound } from '@aws-sdk/client-s3';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { diffSnapshots } from '../../lambdas/shared/aws-call-counter.ts';
import type { InvocationReport } from '../../local/event-source-poller.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { processMeters } from '../../local/process-meters.ts';
import { LATE_EFFECT_HANDLER_MODULE } from '../fixtures/late-effect-handler.ts';
import { BUCKET, FUNCTION, testTemplate } from '../fixtures/local-template.ts';

let aws: LocalAws;
const reports: InvocationReport[] = [];

before(async () => {
  const template = testTemplate();
  const fn = template.Resources[FUNCTION]!;
  fn.Metadata = { ...fn.Metadata, 'crawler:handler': LATE_EFFECT_HANDLER_MODULE };
  aws = await startLocalAws({
    template,
    stackName: 'TimeoutTest',
    log: () => {},
    onInvocation: (report) => reports.push(report),
  });
  await aws.start();
});
after(() => aws?.stop());

async function send(command: { do: string; key: string }): Promise<string> {
  const out = await aws.clients.sqs.send(
    new SendMessageCommand({ QueueUrl: aws.outputs.TaskQueueUrl!, MessageBody: JSON.stringify(command) }),
  );
  return out.MessageId!;
}

async function exists(key: string): Promise<boolean> {
  try {
    await aws.clients.s3.send(
      new HeadObjectCommand({ Bucket: aws.stack.resources[BUCKET]!.physicalId, Key: `effects/${key}` }),
    );
    return true;
  } catch (error) {
    if (error instanceof NotFound || (error as { name?: string }).name === 'NotFound') return false;
    throw error;
  }
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const of = (id: string) => reports.filter((report) => report.messageIds.includes(id));

describe('local runtime: a timed-out invocation is cut off', () => {
  it('runs a handler module in a worker, and its AWS calls reach the process-wide counter', async () => {
    const before = processMeters.counter.snapshot();
    const key = randomUUID();
    const id = await send({ do: 'now', key });
    await until(() => of(id).length > 0, 30_000);
    assert.equal(of(id)[0]!.outcome, 'success');
    assert.equal(await exists(key), true);
    const puts = diffSnapshots(before, processMeters.counter.snapshot()).operations['S3:PutObject'];
    assert.ok(puts && puts.calls >= 1, 'the worker’s PutObject was counted here');
  });

  it('after the deadline the invocation does nothing more: its late PUT never happens', async () => {
    const key = randomUUID();
    const id = await send({ do: 'late', key });
    // Two deliveries (the queue's visibility timeout is 2 s), each cut off at the 1 s function timeout.
    await until(() => of(id).filter((report) => report.outcome === 'timeout').length >= 2, 30_000);
    // The handler would PUT 500 ms after its deadline: give it ample time to, had it survived.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(await exists(key), false, 'no effect after the timeout');
    assert.ok(aws.stats().total.timeouts >= 2);
  });
});
