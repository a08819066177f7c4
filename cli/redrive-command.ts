/**
 * `crawler redrive [ID] [--queue tasks|results|renders|all]`: after a fix, moves dead-lettered messages
 * back to the queue they came from (TaskDLQ → TaskQueue, ResultsDLQ → ResultsQueue, RenderDLQ →
 * RenderQueue in a stack deployed with `-c render=true`), only a crawl's own
 * messages when ID is given. Messages the crawler dead-lettered itself as malformed (they carry a
 * `code` attribute) stay unless --include-malformed: sent back as they are, they end `invalid` and
 * come straight back to the DLQ. A moved message is sent first and deleted after, so nothing is lost; a
 * crash in between leaves a duplicate, which the frontier absorbs (fetch-once claims, one index line).
 */
import {
  type BatchResultErrorEntry,
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DEAD_LETTER_CODE_ATTRIBUTE } from '../lambdas/adapters/queues.ts';
import { sendMessagesInBatches } from '../lambdas/adapters/sqs-batch-sender.ts';
import { DEFAULT_CRAWL_ID, parseTaskMessage } from '../lambdas/core/crawl/index.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import { write } from './cli-io.ts';
import { defineCommand } from './define-command.ts';
import { STACK_OPTIONS, STACK_USAGE, withStack } from './stack-access.ts';
import { UsageError } from './usage-error.ts';

export const REDRIVE_USAGE = `usage: crawler redrive [ID] [options]
  moves dead-lettered messages back to their queue (all crawls' unless ID is given)
  --queue Q            tasks, results, renders (a stack with -c render=true), both (tasks and results) or all (default all)
  --include-malformed  also move messages dead-lettered as malformed (after a fix that makes them valid)
${STACK_USAGE}`;

const PAIRS = {
  tasks: { dlq: OUTPUTS.taskDlqUrl, source: OUTPUTS.taskQueueUrl, owner: taskCrawlOf },
  results: { dlq: OUTPUTS.resultsDlqUrl, source: OUTPUTS.resultsQueueUrl, owner: crawlOf },
  renders: { dlq: OUTPUTS.renderDlqUrl, source: OUTPUTS.renderQueueUrl, owner: crawlOf },
} as const;
type PairName = keyof typeof PAIRS;
/** `both`: the task and results queues, as before the render queue came. */
const QUEUE_CHOICES = [...(Object.keys(PAIRS) as PairName[]), 'both', 'all'] as const;

/** While a redrive looks at a message it is hidden this long from other readers of the DLQ. */
const LOOK_SECONDS = 30;

export const redriveCommand = defineCommand({
  usage: REDRIVE_USAGE,
  options: { queue: { type: 'string' }, 'include-malformed': { type: 'boolean' }, ...STACK_OPTIONS },
  run: async ({ io, values, positionals }) => {
    if (positionals.length > 1) throw new UsageError(`redrive takes at most one crawl id\n${REDRIVE_USAGE}`);
    const crawlId = positionals[0];
    const queue = values.queue ?? 'all';
    if (!(QUEUE_CHOICES as readonly string[]).includes(queue)) {
      throw new UsageError(`--queue expects ${QUEUE_CHOICES.join(', ')}, got ${JSON.stringify(queue)}`);
    }
    return withStack(values, io, async (stack) => {
      // `all`: the render queue only where the stack has one.
      const names: PairName[] =
        queue === 'all'
          ? (Object.keys(PAIRS) as PairName[]).filter((name) => stack.outputs[PAIRS[name].dlq] !== undefined)
          : queue === 'both'
            ? ['tasks', 'results']
            : [queue as PairName];
      if (queue === 'renders' && stack.outputs[PAIRS.renders.dlq] === undefined)
        throw new UsageError(
          `--queue renders: ${stack.description} has no render queue (deployed without -c render=true)`,
        );
      for (const name of names) {
        const pair = PAIRS[name];
        const moved = await redrive(
          stack.clients.sqs,
          requiredOutput(stack.outputs, pair.dlq, stack.description),
          requiredOutput(stack.outputs, pair.source, stack.description),
          crawlId,
          { includeMalformed: values['include-malformed'] ?? false, owner: pair.owner },
        );
        const malformed =
          moved.malformed > 0
            ? `, left ${moved.malformed} dead-lettered as malformed (--include-malformed moves them)`
            : '';
        const arrived =
          moved.arrived > 0
            ? `, left ${moved.arrived} that came in during the redrive (redrive again for them)`
            : '';
        await write(
          io.stdout,
          `${name}: moved ${moved.moved} message(s) back, left ${moved.kept} of other crawls${malformed}${arrived}\n`,
        );
      }
      return 0;
    });
  },
});

/** The crawl a queued message belongs to: a task's or result's `crawlId`, a bare URL's default crawl. */
export function crawlOf(body: string): string | undefined {
  const text = body.trim();
  if (!text.startsWith('{')) return DEFAULT_CRAWL_ID;
  try {
    const parsed: unknown = JSON.parse(text);
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      'crawlId' in parsed &&
      typeof parsed.crawlId === 'string'
    ) {
      return parsed.crawlId;
    }
  } catch {
    // not JSON: belongs to no crawl
  }
  return undefined;
}

/** The crawl a task message makes its result in, malformed or not (as the fetch function parses it). */
export function taskCrawlOf(body: string): string {
  const parsed = parseTaskMessage(body);
  return parsed.ok ? parsed.task.crawlId : parsed.crawlId;
}

export async function redrive(
  sqs: SQSClient,
  dlqUrl: string,
  sourceUrl: string,
  crawlId: string | undefined,
  options: {
    includeMalformed?: boolean;
    owner?: (body: string) => string | undefined;
    now?: () => number;
  } = {},
): Promise<{ moved: number; kept: number; malformed: number; arrived: number }> {
  const scan: Scan = {
    startedAt: (options.now ?? Date.now)(),
    arrived: new Set(),
    held: new Map(),
    malformed: new Set(),
    includeMalformed: options.includeMalformed ?? false,
    ours: (message) => crawlId === undefined || (options.owner ?? crawlOf)(message.Body ?? '') === crawlId,
  };
  let moved = 0;
  try {
    for (;;) {
      const fresh = await receiveFresh(sqs, dlqUrl, scan.held);
      if (fresh.length === 0) break;
      const mine = sortOut(scan, fresh);
      if (mine.length === 0) continue;
      await moveBack(sqs, dlqUrl, sourceUrl, mine, scan.held);
      moved += mine.length;
    }
  } finally {
    await release(sqs, dlqUrl, [...scan.held.values()]);
  }
  return {
    moved,
    kept: scan.held.size - scan.malformed.size - scan.arrived.size,
    malformed: scan.malformed.size,
    arrived: scan.arrived.size,
  };
}

/** What one redrive has seen of the DLQ so far, and how it sorts a message. */
interface Scan {
  /**
   * What comes into the DLQ during the scan is not this redrive's: a task it moved back that fails at
   * once (its crawl gone) is dead-lettered again while the scan goes on, and moving it again would
   * repeat that for as long as the scan lasts. It is left, counted apart.
   */
  startedAt: number;
  arrived: Set<string>;
  /**
   * Messages not moved stay hidden until the scan ends (a message made visible at once could be
   * received again in place of one not yet seen, and end the scan early), then are all made visible
   * again at once. Each keeps its latest receipt handle: one that came back after the look is seen again.
   */
  held: Map<string, Message>;
  malformed: Set<string>;
  includeMalformed: boolean;
  /** The message belongs to the crawl redriven (any, when no ID was given). */
  ours: (message: Message) => boolean;
}

/** The next messages of the DLQ not seen yet (none: the scan is done); those seen again keep their new receipt. */
async function receiveFresh(sqs: SQSClient, dlqUrl: string, held: Map<string, Message>): Promise<Message[]> {
  const received = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: dlqUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: LOOK_SECONDS,
      WaitTimeSeconds: 1,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['SentTimestamp'],
    }),
  );
  const messages = received.Messages ?? [];
  const fresh = messages.filter((message) => !held.has(message.MessageId ?? ''));
  for (const message of messages)
    if (held.has(message.MessageId ?? '')) held.set(message.MessageId!, message);
  return fresh;
}

/** The fresh messages to move back; the others are held, and counted as arrived or malformed. */
function sortOut(scan: Scan, fresh: readonly Message[]): Message[] {
  const { held } = scan;
  const before = fresh.filter((message) => !(Number(message.Attributes?.SentTimestamp) > scan.startedAt));
  for (const message of fresh) {
    if (before.includes(message)) continue;
    held.set(message.MessageId ?? '', message);
    scan.arrived.add(message.MessageId ?? '');
  }
  const ours = before.filter(scan.ours);
  const mine = ours.filter((message) => scan.includeMalformed || !deadLetteredAsMalformed(message));
  for (const message of before) {
    if (mine.includes(message)) continue;
    held.set(message.MessageId ?? '', message);
    if (ours.includes(message)) scan.malformed.add(message.MessageId ?? '');
  }
  return mine;
}

/** Sends the messages to their queue, then deletes them from the DLQ: nothing is lost in between. */
async function moveBack(
  sqs: SQSClient,
  dlqUrl: string,
  sourceUrl: string,
  mine: readonly Message[],
  held: Map<string, Message>,
): Promise<void> {
  try {
    await sendMessagesInBatches(
      sqs,
      sourceUrl,
      mine.map((message) => ({ body: message.Body ?? '' })),
    );
  } catch (error) {
    // Not moved: visible in the DLQ again at once, not after the look.
    for (const message of mine) held.set(message.MessageId ?? '', message);
    throw error;
  }
  const deleted = await sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: dlqUrl,
      Entries: mine.map((message, index) => ({
        Id: String(index),
        ReceiptHandle: message.ReceiptHandle!,
      })),
    }),
  );
  entriesFailed(
    'delete from the DLQ',
    deleted.Failed,
    'they are back in their queue and stay in the DLQ too',
  );
}

/** Dead-lettered by the crawler itself, with why: not something a retry fixes. */
function deadLetteredAsMalformed(message: Message): boolean {
  return message.MessageAttributes?.[DEAD_LETTER_CODE_ATTRIBUTE] !== undefined;
}

/** Makes messages this redrive does not move visible again at once (ten a call, SQS's batch limit). */
async function release(sqs: SQSClient, queueUrl: string, messages: readonly Message[]): Promise<void> {
  for (let start = 0; start < messages.length; start += 10) {
    const out = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.slice(start, start + 10).map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle!,
          VisibilityTimeout: 0,
        })),
      }),
    );
    entriesFailed('make visible again', out.Failed, `they are visible again within ${LOOK_SECONDS} s`);
  }
}

/** A batch call answers 200 with a per-entry Failed list: one clear line, not silence. */
function entriesFailed(
  what: string,
  failed: readonly BatchResultErrorEntry[] | undefined,
  after: string,
): void {
  if (failed === undefined || failed.length === 0) return;
  const first = failed[0]!;
  throw new Error(
    `redrive: could not ${what} ${failed.length} message(s) (${first.Code}: ${first.Message ?? ''}); ${after}`,
  );
}
