/**
 * A DLQ copy carries its reason as message attributes, which SQS counts in the message's size and
 * holds to the body's character rules: a copy of a message that was at the queue's limit (or whose
 * reason has any text at all) must still be accepted, over the wire, by the strict layer in front
 * of the emulator (local/strict-fauxqs.ts), as SQS would accept it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { QUEUE } from '../../cdk/limits.ts';
import { SqsDeadLetterSender } from '../../lambdas/adapters/queues.ts';
import { messageBytes } from '../../lambdas/adapters/sqs-batch-sender.ts';
import { clientSettings, sqsConfig } from '../../local/aws-clients.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';

const MAX = QUEUE.maxMessageSizeBytes;
let emulators: Emulators;
let sqs: SQSClient;
let dlqUrl: string;

before(async () => {
  emulators = await startEmulators();
  sqs = new SQSClient(sqsConfig(emulators.endpoints, clientSettings({ maxAttempts: 1 })));
  // As the stack makes its DLQs: MaximumMessageSize from cdk/limits.ts.
  const created = await sqs.send(
    new CreateQueueCommand({ QueueName: 'dlq', Attributes: { MaximumMessageSize: String(MAX) } }),
  );
  dlqUrl = created.QueueUrl!;
});
after(async () => {
  sqs?.destroy();
  await emulators?.stop();
});

async function receiveAll(count: number): Promise<Message[]> {
  const got: Message[] = [];
  for (let round = 0; got.length < count && round < 20; round++) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = out.Messages ?? [];
    got.push(...messages);
    if (messages.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: dlqUrl,
          Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
    }
  }
  return got;
}

function sizeOf(message: Message): number {
  const attributes = Object.fromEntries(
    Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, value.StringValue ?? '']),
  );
  return messageBytes({ body: message.Body ?? '', attributes });
}

describe('DLQ copies fit the queue', () => {
  it('a body at the limit is cut to leave room for the reason, and marked with its full length', async () => {
    const body = `{"u":"${'x'.repeat(MAX - 8)}"}`;
    assert.equal(Buffer.byteLength(body), MAX);
    await new SqsDeadLetterSender(sqs, dlqUrl).send([
      { body, code: 'invalid-task', reason: `task fields are invalid: ${'r'.repeat(2000)}` },
    ]);
    const [copy] = await receiveAll(1);
    assert.ok(copy);
    assert.ok(sizeOf(copy) <= MAX);
    assert.equal(copy.MessageAttributes?.truncated?.StringValue, String(MAX));
    assert.ok(body.startsWith(copy.Body!), 'the copy is a prefix of the message');
  });

  it('a reason of characters outside the BMP, cut at its length limit, is still valid text', async () => {
    // 600 emoji are 1,200 UTF-16 units: the 1,024-unit cut falls inside a surrogate pair.
    const reason = '😀'.repeat(600);
    await new SqsDeadLetterSender(sqs, dlqUrl).send([{ body: '{"v":1}', code: 'invalid-task', reason }]);
    const [copy] = await receiveAll(1);
    assert.ok(copy);
    const got = copy.MessageAttributes?.reason?.StringValue ?? '';
    assert.ok(got.endsWith('…') && reason.startsWith(got.slice(0, -1)), 'cut, never split');
  });

  it('a batch of copies at the limit is sent in as many requests as SQS allows, none lost', async () => {
    const letters = Array.from({ length: 12 }, (_, i) => ({
      body: `${i}`.padEnd(MAX, 'é').slice(0, MAX / 2),
      code: 'invalid-task',
      reason: `letter ${i}`,
    }));
    await new SqsDeadLetterSender(sqs, dlqUrl).send(letters);
    const copies = await receiveAll(letters.length);
    assert.equal(copies.length, letters.length);
    for (const copy of copies) assert.ok(sizeOf(copy) <= MAX);
  });
});
