// Both functions report the age of each message they receive for the third time or more: SQS's
// ApproximateAgeOfOldestMessage stops counting such a message, and the stack alarms on this metric
// instead (cdk/monitoring.ts). The real handlers, on the emulators, with their EMF lines captured.
import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { createHandler as createAggregateHandler } from '../../lambdas/aggregate/handler.ts';
import { createHandler as createFetchHandler } from '../../lambdas/fetch/handler.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { CRAWLER_METRICS, CRAWLER_NAMESPACE } from '../../lambdas/shared/metrics.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';

let aws: LocalAws;

before(async () => {
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    log: () => {},
  });
});
after(() => aws?.stop());

const HOUR = 3_600_000;

function record(
  id: string,
  body: string,
  receiveCount: number,
  sentAgoMs: number,
  queueArn: string,
): SQSRecord {
  return {
    messageId: id,
    receiptHandle: `rh-${id}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: String(Date.now() - sentAgoMs),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(Date.now() - sentAgoMs),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  };
}

/** The redelivered-message ages (ms) in the EMF lines the handler wrote while `run` ran. */
async function agesWritten(fn: string, run: () => Promise<unknown>): Promise<number[]> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  // Everything still goes through: the test runner reports on this stream too.
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    lines.push(String(chunk));
    return write(chunk, ...rest);
  }) as typeof process.stdout.write;
  try {
    await run();
  } finally {
    process.stdout.write = write;
  }
  return agesIn(lines, fn);
}

/** The redelivered-message ages (ms) in EMF lines of function `fn` among `lines`. */
function agesIn(lines: readonly string[], fn: string): number[] {
  return lines
    .flatMap((text) => text.split('\n'))
    .filter((line) => line.startsWith('{"_aws"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((emf) => emf.Function === fn && JSON.stringify(emf._aws).includes(CRAWLER_NAMESPACE))
    .flatMap((emf) => {
      const value = emf[CRAWLER_METRICS.redeliveredMessageAge];
      return value === undefined ? [] : [value].flat().map(Number);
    });
}

/** A TCP server that accepts connections and never answers: the AWS calls made to it hang. */
async function blackhole(): Promise<{ url: string; reached: Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let reach: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  const server = createServer((socket) => {
    sockets.add(socket);
    reach();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    reached,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('the redelivered-message age metric', () => {
  it('the fetch function reports it before any work: an invocation killed at its deadline has reported it', async () => {
    // Its DynamoDB and S3 never answer: the visit is stuck on its first call until Lambda kills it.
    const stuck = await blackhole();
    const handler = createFetchHandler({
      ...aws.functionEnv.FetchFunction,
      LOG_LEVEL: 'info',
      AWS_ENDPOINT_URL_DYNAMODB: stuck.url,
      AWS_ENDPOINT_URL_S3: stuck.url,
    });
    const arn = 'arn:aws:sqs:us-east-1:000000000000:TaskQueue';
    const visit = JSON.stringify({ v: 1, kind: 'visit', crawlId: 'stuck', host: 'http://stuck.test' });
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      lines.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof process.stdout.write;
    let invocation: Promise<unknown> | undefined;
    let seen: number[];
    try {
      invocation = handler(
        { Records: [record('e', visit, 5, HOUR, arn)] },
        {
          awsRequestId: 'killed',
          getRemainingTimeInMillis: () => 1_000,
        },
      ).catch(() => undefined);
      await stuck.reached;
      // Lambda kills it here: what it wrote so far is all CloudWatch gets.
      seen = agesIn(lines, 'fetch');
    } finally {
      process.stdout.write = write;
      await stuck.close();
    }
    assert.equal(seen.length, 1, 'the age was written before the invocation started its work');
    assert.ok(seen[0]! >= HOUR && seen[0]! < HOUR + 60_000, `its age, ${seen[0]} ms`);
    await invocation;
  });

  it('the fetch function reports each task received three times or more, with its age', async () => {
    const handler = createFetchHandler({ ...aws.functionEnv.FetchFunction, LOG_LEVEL: 'info' });
    const arn = 'arn:aws:sqs:us-east-1:000000000000:TaskQueue';
    const event: SQSEvent = {
      Records: [record('a', 'not a task', 1, 2 * HOUR, arn), record('b', 'not a task either', 4, HOUR, arn)],
    };
    const ages = await agesWritten('fetch', () => handler(event));
    assert.equal(ages.length, 1, 'one message received three times or more');
    assert.ok(ages[0]! >= HOUR && ages[0]! < HOUR + 60_000, `its age, ${ages[0]} ms`);
  });

  it('the aggregate function reports each result received three times or more, with its age', async () => {
    const handler = createAggregateHandler({ ...aws.functionEnv.AggregateFunction, LOG_LEVEL: 'info' });
    const arn = `arn:aws:sqs:us-east-1:000000000000:${aws.outputs.ResultsQueueUrl!.split('/').pop()}`;
    const event: SQSEvent = {
      Records: [record('c', '{}', 3, 2 * HOUR, arn), record('d', '{}', 2, 3 * HOUR, arn)],
    };
    const ages = await agesWritten('aggregate', () => handler(event));
    assert.equal(ages.length, 1, 'one message received three times or more');
    assert.ok(ages[0]! >= 2 * HOUR && ages[0]! < 2 * HOUR + 60_000, `its age, ${ages[0]} ms`);
  });
});
