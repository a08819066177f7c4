// The event-source pollers against fauxqs: Lambda's SQS semantics with the test handler
// (test/fixtures/local-handler.ts), whose behaviour each message body chooses.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { createClients, destroyClients } from '../../local/aws-clients.ts';
import type { CfnTemplate } from '../../local/cfn-template.ts';
import { startEmulators } from '../../local/emulators.ts';
import type { InvocationReport } from '../../local/event-source-poller.ts';
import { type LocalAws, type LocalAwsOptions, startLocalAws } from '../../local/local-aws.ts';
import { type Recorder, recorder } from '../fixtures/local-handler.ts';
import { DLQ, FUNCTION, MAPPING, patchProperties, QUEUE, testTemplate } from '../fixtures/local-template.ts';
import { waitFor } from '../fixtures/wait-for.ts';

interface Runtime {
  aws: LocalAws;
  rec: Recorder;
  reports: InvocationReport[];
  logs: string[];
  send(bodies: Array<string | object>): Promise<string[]>;
  queueUrl: string;
}

async function runtime(
  t: TestContext,
  options: { template?: CfnTemplate } & Partial<LocalAwsOptions> = {},
): Promise<Runtime> {
  const runId = randomUUID();
  const reports: InvocationReport[] = [];
  const logs: string[] = [];
  const aws = await startLocalAws({
    stackName: 'PollerTest',
    handlerEnvOverrides: { TEST_RUN_ID: runId },
    log: (line) => logs.push(line),
    onInvocation: (report) => reports.push(report),
    ...options,
    template: options.template ?? testTemplate(),
  });
  t.after(() => aws.stop());
  const queueUrl = aws.outputs.TaskQueueUrl ?? '';
  return {
    aws,
    rec: recorder(runId),
    reports,
    logs,
    queueUrl,
    async send(bodies) {
      const ids: string[] = [];
      for (let i = 0; i < bodies.length; i += 10) {
        const entries = bodies.slice(i, i + 10).map((body, j) => ({
          Id: String(j),
          MessageBody: typeof body === 'string' ? body : JSON.stringify(body),
        }));
        const out = await aws.clients.sqs.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
        );
        assert.deepEqual(out.Failed ?? [], []);
        for (const ok of [...(out.Successful ?? [])].sort((a, b) => Number(a.Id) - Number(b.Id)))
          ids.push(ok.MessageId ?? '');
      }
      return ids;
    },
  };
}

/** Every (messageId -> receive counts seen by the handler), in invocation order. */
function receiveCounts(rec: Recorder): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  for (const inv of rec.invocations) {
    for (const r of inv.event.Records)
      seen.set(r.messageId, [...(seen.get(r.messageId) ?? []), r.attributes.ApproximateReceiveCount]);
  }
  return seen;
}

async function drainDlq(aws: LocalAws): Promise<string[]> {
  const out = await aws.clients.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: aws.outputs.TaskDlqUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
    }),
  );
  return (out.Messages ?? []).map((m) => m.Body ?? '');
}

/** Messages received from the task queue and not yet deleted (taken by the poller). */
async function inFlight(aws: LocalAws): Promise<number> {
  const out = await aws.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: aws.outputs.TaskQueueUrl ?? '',
      AttributeNames: ['ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
}

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const idle = { timeoutMs: 20_000 };

describe('event-source poller: events, context and env', () => {
  it('hands the handler Lambda-shaped SQS records, a Lambda context and the function env', async (t) => {
    const { aws, rec, queueUrl } = await runtime(t);
    await aws.start();
    const sent = await aws.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: 'hello',
        MessageAttributes: {
          kind: { DataType: 'String', StringValue: 'task' },
          depth: { DataType: 'Number', StringValue: '3' },
          blob: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 255, 7]) },
        },
      }),
    );
    await aws.waitForIdle(idle);
    const inv = rec.invocations[0];
    const record = inv?.event.Records[0];
    assert.ok(inv && record);
    assert.deepEqual(Object.keys(record), [
      'messageId',
      'receiptHandle',
      'body',
      'attributes',
      'messageAttributes',
      'md5OfMessageAttributes',
      'md5OfBody',
      'eventSource',
      'eventSourceARN',
      'awsRegion',
    ]);
    assert.equal(record.messageId, sent.MessageId);
    assert.equal(record.body, 'hello');
    assert.equal(record.md5OfBody, createHash('md5').update('hello').digest('hex'));
    assert.equal(record.md5OfMessageAttributes, sent.MD5OfMessageAttributes);
    assert.equal(record.eventSource, 'aws:sqs');
    assert.equal(record.eventSourceARN, aws.stack.resources[QUEUE]?.arn);
    assert.equal(record.awsRegion, 'us-east-1');
    assert.equal(record.attributes.ApproximateReceiveCount, '1');
    for (const key of ['SentTimestamp', 'SenderId', 'ApproximateFirstReceiveTimestamp'] as const) {
      assert.ok(record.attributes[key], key);
    }
    assert.deepEqual(record.messageAttributes, {
      kind: { stringValue: 'task', stringListValues: [], binaryListValues: [], dataType: 'String' },
      depth: { stringValue: '3', stringListValues: [], binaryListValues: [], dataType: 'Number' },
      blob: {
        binaryValue: Buffer.from([0, 255, 7]).toString('base64'),
        stringListValues: [],
        binaryListValues: [],
        dataType: 'Binary',
      },
    });

    const fn = aws.stack.functions[FUNCTION];
    assert.ok(fn);
    assert.equal(inv.context.functionName, fn.functionName);
    assert.equal(inv.context.functionVersion, '$LATEST');
    assert.equal(inv.context.invokedFunctionArn, fn.functionArn);
    assert.equal(inv.context.memoryLimitInMB, '256');
    assert.equal(inv.context.logGroupName, `/aws/lambda/${fn.functionName}`);
    assert.ok(
      inv.context.remainingAtStart > 0 && inv.context.remainingAtStart <= 1000,
      String(inv.context.remainingAtStart),
    );

    const env = rec.instances[0]?.env ?? {};
    assert.equal(env.TASK_QUEUE_URL, queueUrl);
    assert.equal(env.PAGE_BUCKET, aws.outputs.PageBucketName);
    assert.equal(env.FRONTIER_TABLE, aws.outputs.FrontierTableName);
    assert.equal(env.MAX_PAGES, '50');
    assert.equal(env.AWS_ENDPOINT_URL_SQS, aws.endpoints.sqs);
    assert.equal(env.AWS_ENDPOINT_URL_S3, aws.endpoints.s3);
    assert.equal(env.AWS_ENDPOINT_URL_DYNAMODB, aws.endpoints.dynamodb);
    assert.equal(env.AWS_S3_FORCE_PATH_STYLE, 'true');
    assert.equal(env.AWS_LAMBDA_FUNCTION_NAME, fn.functionName);
    assert.equal(env.TEST_RUN_ID, aws.functionEnv[FUNCTION]?.TEST_RUN_ID);
  });
});

describe('event-source poller: batching and concurrency', () => {
  it('invokes with at most BatchSize records, full batches at once', async (t) => {
    const { aws, rec, send } = await runtime(t, { concurrencyOverride: { [FUNCTION]: 1 } });
    await send(Array.from({ length: 12 }, (_, i) => `m${i}`));
    await aws.start();
    await aws.waitForIdle(idle);
    assert.deepEqual(
      rec.invocations.map((i) => i.event.Records.length),
      [5, 5, 2],
    );
    assert.equal(rec.completed.size, 12);
  });

  it('gathers messages arriving within MaximumBatchingWindowInSeconds into one batch', async (t) => {
    const { aws, rec, send } = await runtime(t, { concurrencyOverride: { [FUNCTION]: 1 } });
    await aws.start();
    await send(['a']);
    // 'a' is taken (in flight, inside the window) before the others are sent.
    await waitFor(async () => (await inFlight(aws)) === 1, {
      what: "the poller to receive 'a'",
      timeoutMs: 20_000,
    });
    await send(['b', 'c']);
    await aws.waitForIdle(idle);
    assert.deepEqual(
      rec.invocations.map((i) => i.event.Records.map((r) => r.body).sort()),
      [['a', 'b', 'c']],
    );
  });

  it('invokes after a single poll when the window is 0', async (t) => {
    const template = patchProperties(testTemplate(), MAPPING, { MaximumBatchingWindowInSeconds: undefined });
    const { aws, rec, send } = await runtime(t, { template, concurrencyOverride: { [FUNCTION]: 1 } });
    await aws.start();
    await send(['a']);
    await until(() => rec.invocations.length === 1);
    await send(['b']);
    await aws.waitForIdle(idle);
    assert.deepEqual(
      rec.invocations.map((i) => i.event.Records.length),
      [1, 1],
    );
  });

  it('never runs more than ScalingConfig.MaximumConcurrency invocations at once', async (t) => {
    const template = patchProperties(testTemplate(), MAPPING, { BatchSize: 1 });
    const { aws, rec, send } = await runtime(t, { template });
    await send(Array.from({ length: 8 }, (_, i) => ({ do: 'sleep', ms: 250, tag: i })));
    await aws.start();
    await aws.waitForIdle(idle);
    assert.equal(rec.maxActive, 2);
    assert.equal(aws.stats().total.maxConcurrentInvocations, 2);
    assert.equal(rec.completed.size, 8);
  });

  it('takes a concurrency override per function', async (t) => {
    const template = patchProperties(testTemplate(), MAPPING, { BatchSize: 1 });
    const { aws, rec, send } = await runtime(t, { template, concurrencyOverride: { [FUNCTION]: 4 } });
    await send(Array.from({ length: 8 }, (_, i) => ({ do: 'sleep', ms: 400, tag: i })));
    await aws.start();
    await aws.waitForIdle(idle);
    assert.equal(rec.maxActive, 4);
    assert.equal(aws.pollers[0]?.concurrency, 4);
  });

  it('gives each slot its own createHandler instance, kept warm across invocations', async (t) => {
    const template = patchProperties(testTemplate(), MAPPING, { BatchSize: 1 });
    const { aws, rec, send } = await runtime(t, { template });
    await send(Array.from({ length: 8 }, (_, i) => ({ do: 'sleep', ms: 100, tag: i })));
    await aws.start();
    await aws.waitForIdle(idle);
    assert.equal(rec.instances.length, 2);
    assert.equal(aws.stats().total.coldStarts, 2);
    const byInstance = Map.groupBy(rec.invocations, (i) => i.instanceId);
    assert.deepEqual([...byInstance.keys()].sort(), rec.instances.map((i) => i.instanceId).sort());
    for (const invocations of byInstance.values()) {
      assert.ok(invocations.length >= 2, 'each container serves several invocations');
      assert.equal(new Set(invocations.map((i) => i.context.logStreamName)).size, 1);
      // One container runs one invocation at a time.
      for (let i = 1; i < invocations.length; i++) {
        assert.ok((invocations[i - 1]?.endedAt ?? Infinity) <= (invocations[i]?.startedAt ?? 0));
      }
    }
  });
});

// Independent runtimes, mostly waiting out the 2 s visibility timeout: run side by side.
describe('event-source poller: failures', { concurrency: true }, () => {
  it('partial batch failure: only failed items come back, with a growing receive count, then go to the DLQ', async (t) => {
    const { aws, rec, send } = await runtime(t, { concurrencyOverride: { [FUNCTION]: 1 } });
    const [ok1, bad, ok2] = await send(['ok-1', { do: 'fail' }, 'ok-2']);
    await aws.start();
    const snapshot = await aws.waitForIdle(idle);
    const counts = receiveCounts(rec);
    assert.deepEqual(counts.get(ok1 ?? ''), ['1']);
    assert.deepEqual(counts.get(ok2 ?? ''), ['1']);
    // maxReceiveCount 2: received twice, then SQS moves it to the DLQ on the next receive.
    assert.deepEqual(counts.get(bad ?? ''), ['1', '2']);
    assert.deepEqual(snapshot.queues[DLQ], { visible: 1, inFlight: 0, delayed: 0 });
    assert.deepEqual(snapshot.queues[QUEUE], { visible: 0, inFlight: 0, delayed: 0 });
    assert.deepEqual(await drainDlq(aws), [JSON.stringify({ do: 'fail' })]);
    const stats = aws.stats().total;
    assert.equal(stats.itemFailures, 2);
    assert.equal(stats.messagesDeleted, 2);
    assert.equal(stats.batchFailures, 0);
  });

  it('a failed item that later succeeds is deleted then', async (t) => {
    const { aws, rec, send } = await runtime(t, { concurrencyOverride: { [FUNCTION]: 1 } });
    const [id] = await send([{ do: 'failUntil', n: 2 }]);
    await aws.start();
    const snapshot = await aws.waitForIdle(idle);
    assert.deepEqual(receiveCounts(rec).get(id ?? ''), ['1', '2']);
    assert.equal(snapshot.queues[DLQ]?.visible, 0);
  });

  it('a thrown error leaves the whole batch on the queue for redelivery', async (t) => {
    const { aws, rec, reports, send } = await runtime(t, { concurrencyOverride: { [FUNCTION]: 1 } });
    const ids = await send([{ do: 'throwUntil', n: 2 }, 'ok-a', 'ok-b']);
    await aws.start();
    const snapshot = await aws.waitForIdle(idle);
    const counts = receiveCounts(rec);
    for (const id of ids) assert.deepEqual(counts.get(id), ['1', '2'], id);
    assert.equal(reports[0]?.outcome, 'error');
    assert.deepEqual([...(reports[0]?.retainedIds ?? [])].sort(), [...ids].sort());
    assert.equal(reports.at(-1)?.outcome, 'success');
    assert.equal(aws.stats().total.errors, 1);
    assert.equal(snapshot.queues[DLQ]?.visible, 0);
  });

  it('an invalid batch response fails the whole batch, which ends in the DLQ', async (t) => {
    const { aws, rec, send } = await runtime(t, { concurrencyOverride: { [FUNCTION]: 1 } });
    const ids = await send([{ do: 'invalid' }, 'innocent']);
    await aws.start();
    const snapshot = await aws.waitForIdle(idle);
    for (const id of ids) assert.deepEqual(receiveCounts(rec).get(id), ['1', '2']);
    assert.equal(aws.stats().total.invalidResponses, 2);
    assert.equal(snapshot.queues[DLQ]?.visible, 2);
  });

  it('without ReportBatchItemFailures, returned batchItemFailures are ignored and the batch deleted', async (t) => {
    const template = patchProperties(testTemplate(), MAPPING, { FunctionResponseTypes: undefined });
    const { aws, rec, logs, send } = await runtime(t, { template, concurrencyOverride: { [FUNCTION]: 1 } });
    const [bad] = await send([{ do: 'fail' }, 'ok']);
    await aws.start();
    const snapshot = await aws.waitForIdle(idle);
    assert.deepEqual(receiveCounts(rec).get(bad ?? ''), ['1']);
    assert.equal(aws.stats().total.ignoredBatchItemFailures, 1);
    assert.equal(aws.stats().total.messagesDeleted, 2);
    assert.equal(snapshot.queues[DLQ]?.visible, 0);
    assert.ok(logs.some((l) => l.includes('lacks ReportBatchItemFailures')));
  });

  it('a handler running past the function timeout fails its batch and recycles its container', async (t) => {
    const { aws, rec, reports, send } = await runtime(t, { concurrencyOverride: { [FUNCTION]: 1 } });
    const [id] = await send([{ do: 'sleepUntil', ms: 1500, n: 2 }]);
    await aws.start();
    await aws.waitForIdle(idle);
    assert.deepEqual(receiveCounts(rec).get(id ?? ''), ['1', '2']);
    assert.deepEqual(
      reports.map((r) => r.outcome),
      ['timeout', 'success'],
    );
    assert.equal(aws.stats().total.timeouts, 1);
    assert.equal(rec.instances.length, 2, 'a fresh createHandler after the timeout');
  });
});

describe('event-source poller: quiescence and shutdown', () => {
  it('waitForIdle resolves only after chained work is done', async (t) => {
    const { aws, rec, send } = await runtime(t);
    await aws.start();
    await send([{ do: 'spawn', n: 3, depth: 2 }]);
    const snapshot = await aws.waitForIdle(idle);
    // 1 root + 3 children + 9 grandchildren.
    assert.equal(rec.completed.size, 13);
    assert.equal(aws.stats().total.messagesDeleted, 13);
    assert.deepEqual(snapshot.queues[QUEUE], { visible: 0, inFlight: 0, delayed: 0 });
  });

  it('runs the same way behind a single endpoint port', async (t) => {
    const { aws, rec, send } = await runtime(t, { port: 0 });
    assert.equal(new URL(aws.outputs.TaskQueueUrl ?? '').origin, aws.endpoints.sqs);
    await aws.start();
    await send([{ do: 'spawn', n: 2, depth: 1 }]);
    await aws.waitForIdle(idle);
    assert.equal(rec.completed.size, 3);
  });

  it('waitForIdle waits for delayed messages', async (t) => {
    const { aws, rec, queueUrl } = await runtime(t);
    await aws.start();
    await aws.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'later', DelaySeconds: 1 }),
    );
    await aws.waitForIdle(idle);
    assert.equal(rec.completed.get('later'), 1);
  });

  it('waitForIdle times out while work is pending and nothing consumes it', async (t) => {
    const { aws, send } = await runtime(t);
    await send(['never']);
    await assert.rejects(aws.waitForIdle({ timeoutMs: 500 }), /not idle after 500 ms/);
  });

  it('a poller stopped (its long polls cut short) and started again takes messages again', async (t) => {
    const { aws, rec, send } = await runtime(t);
    await aws.start();
    await Promise.all(aws.pollers.map((poller) => poller.stop()));
    await Promise.all(aws.pollers.map((poller) => poller.start()));
    await send(['after-restart']);
    await aws.waitForIdle(idle);
    assert.equal(rec.completed.get('after-restart'), 1);
  });

  it('stop() lets the in-flight batch finish and settle', async (t) => {
    const emulators = await startEmulators();
    t.after(() => emulators.stop());
    const { aws, rec, send, queueUrl } = await runtime(t, { endpoint: emulators.endpoints });
    await aws.start();
    await send([{ do: 'sleep', ms: 600 }]);
    await until(() => rec.active === 1);
    await aws.stop();
    assert.equal(rec.active, 0);
    assert.equal(rec.completed.size, 1);
    // Deleted before stop() returned: the queue (whose emulator still runs) is empty, not just in flight.
    const clients = createClients(emulators.endpoints);
    t.after(() => destroyClients(clients));
    const { Attributes: a = {} } = await clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    assert.deepEqual(a, { ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0' });
  });
});
