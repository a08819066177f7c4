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
}

function lifoQueue(bodies: string[]) {
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
          return { MessageId: m.id, Body: m.body, ReceiptHandle: `${m.id}#${m.receipt}` };
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
        for (const entry of command.input.Entries ?? []) source.push(entry.MessageBody ?? '');
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
