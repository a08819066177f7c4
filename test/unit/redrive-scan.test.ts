/**
 * `crawler redrive` scans a whole DLQ: SQS returns visible messages in no promised order, so a
 * message the scan does not move must stay hidden until the scan ends. Made visible at once, it can
 * be received again in place of one not yet seen, and the scan would end before it saw them all.
 * The queue here hands back the most recently released messages first, as SQS may.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { redrive } from '../../cli/redrive-command.ts';

interface Stored {
  id: string;
  body: string;
  hiddenUntil: number;
  receipt: number;
  /** SentTimestamp, as SQS reports it: when the message came into the DLQ. */
  sent?: number;
}

/** `bounceAt`: every message sent to the source queue comes back into the DLQ at once, sent then. */
function lifoQueue(bodies: string[], bounceAt?: number) {
  let clock = 0;
  let receipts = 0;
  // The last entry is handed out first: released messages are pushed to the end.
  const dlq: Stored[] = bodies.map((body, index) => ({ id: `m${index}`, body, hiddenUntil: 0, receipt: 0 }));
  const source: string[] = [];
  const client = {
    async send(command: unknown) {
      clock++;
      if (command instanceof ReceiveMessageCommand) {
        const max = command.input.MaxNumberOfMessages ?? 1;
        const visible = dlq
          .filter((m) => m.hiddenUntil <= clock)
          .reverse()
          .slice(0, max);
        const messages: Message[] = visible.map((m) => {
          m.hiddenUntil = clock + 1_000_000; // the look outlasts this test's scan
          m.receipt = ++receipts;
          return {
            MessageId: m.id,
            Body: m.body,
            ReceiptHandle: `${m.id}#${m.receipt}`,
            ...(m.sent === undefined ? {} : { Attributes: { SentTimestamp: String(m.sent) } }),
          };
        });
        return { Messages: messages };
      }
      if (command instanceof ChangeMessageVisibilityBatchCommand) {
        for (const entry of command.input.Entries ?? []) {
          const index = dlq.findIndex((m) => `${m.id}#${m.receipt}` === entry.ReceiptHandle);
          if (index < 0) continue;
          const [m] = dlq.splice(index, 1);
          m!.hiddenUntil = clock + (entry.VisibilityTimeout ?? 0);
          dlq.push(m!);
        }
        return { Successful: [], Failed: [] };
      }
      if (command instanceof SendMessageBatchCommand) {
        for (const entry of command.input.Entries ?? []) {
          source.push(entry.MessageBody ?? '');
          if (bounceAt !== undefined)
            dlq.push({
              id: `b${source.length}`,
              body: entry.MessageBody ?? '',
              hiddenUntil: 0,
              receipt: 0,
              sent: bounceAt,
            });
        }
        return { Successful: (command.input.Entries ?? []).map((e) => ({ Id: e.Id })), Failed: [] };
      }
      if (command instanceof DeleteMessageBatchCommand) {
        for (const entry of command.input.Entries ?? []) {
          const index = dlq.findIndex((m) => `${m.id}#${m.receipt}` === entry.ReceiptHandle);
          if (index >= 0) dlq.splice(index, 1);
        }
        return { Successful: [], Failed: [] };
      }
      throw new Error(`unexpected command ${(command as object).constructor.name}`);
    },
  };
  return {
    client: client as unknown as SQSClient,
    dlq,
    source,
    visibleNow: () => dlq.filter((m) => m.hiddenUntil <= clock),
  };
}

const task = (crawlId: string, n: number) =>
  JSON.stringify({ v: 1, crawlId, url: `https://example.com/${n}`, depth: 0 });

test('redrive of one crawl moves all its messages past 30 of other crawls, and leaves those visible', async () => {
  const others = Array.from({ length: 30 }, (_, n) => task('other', n));
  const ours = Array.from({ length: 5 }, (_, n) => task('mine', n));
  // Ours are handed out last.
  const queue = lifoQueue([...ours, ...others]);
  const result = await redrive(queue.client, 'dlq', 'source', 'mine');
  assert.equal(result.moved, 5);
  assert.equal(result.kept, 30);
  assert.deepEqual(queue.source.sort(), [...ours].sort());
  assert.equal(queue.dlq.length, 30);
  assert.equal(queue.visibleNow().length, 30, 'every message not moved is visible again when the scan ends');
});

test('a task that comes back into the DLQ during the scan is left there, not moved again and again', async () => {
  const ours = Array.from({ length: 12 }, (_, n) => task('gone', n));
  const startedAt = 1_000;
  // Each task moved back fails at once (its crawl is gone) and is dead-lettered again while the scan goes on.
  const queue = lifoQueue(ours, startedAt + 1);
  for (const m of queue.dlq) m.sent = startedAt - 1;
  const result = await redrive(queue.client, 'dlq', 'source', undefined, { now: () => startedAt });
  assert.equal(result.moved, 12, 'each task that was in the DLQ is moved once');
  assert.equal(result.arrived, 12, 'its copy that came back is counted apart');
  assert.equal(result.kept, 0);
  assert.deepEqual(queue.source.sort(), [...ours].sort());
  assert.equal(
    queue.visibleNow().length,
    12,
    'the copies that came back are visible in the DLQ when the scan ends',
  );
});
