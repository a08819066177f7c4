/** The task, results and render queues as the core's ports. */
import { createHash } from 'node:crypto';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DrainedRecord } from '../core/batches/index.ts';
import type {
  DeadLetter,
  DeadLetterSender,
  OutgoingVisit,
  RenderMessage,
  RenderSender,
  ResultSender,
  Task,
  TaskSender,
} from '../core/crawl/index.ts';
import { type CrawlResult, resultMessageBodies } from '../core/results/index.ts';
import {
  MAX_MESSAGE_BYTES,
  messageBytes,
  type QueueMessage,
  sendMessagesInBatches,
} from './sqs-batch-sender.ts';

export class SqsTaskSender implements TaskSender {
  private readonly sqs: SQSClient;
  private readonly queueUrl: string;

  constructor(sqs: SQSClient, queueUrl: string) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
  }

  sendVisits(visits: readonly OutgoingVisit[]): Promise<void> {
    return sendMessagesInBatches(
      this.sqs,
      this.queueUrl,
      visits.map(({ visit, delaySeconds }) => ({
        body: JSON.stringify(visit),
        delaySeconds,
        groupId: messageGroupOf(visit.host),
      })),
    );
  }

  /** Task messages as anyone may send them (a seed the CLI could not admit goes this way). */
  sendTasks(tasks: readonly Task[]): Promise<void> {
    return sendMessagesInBatches(
      this.sqs,
      this.queueUrl,
      tasks.map((task) => ({ body: JSON.stringify(task) })),
    );
  }
}

/**
 * Fair queues: the host is the message group, so one large host cannot starve the rest of a crawl.
 * SQS takes 1 to 128 alphanumeric and punctuation characters; a host name may have up to 253 (and
 * a port). A longer one keeps its first characters and ends in a hash of the whole, so two hosts
 * that share a long prefix still get groups of their own.
 */
export function messageGroupOf(host: string): string | undefined {
  if (host === '') return undefined;
  if (host.length <= MAX_GROUP_ID_LENGTH && GROUP_ID_CHARS.test(host)) return host;
  const digest = createHash('sha256').update(host).digest('base64url').slice(0, GROUP_DIGEST_LENGTH);
  const prefix = host.replace(NOT_GROUP_ID_CHAR, '_').slice(0, MAX_GROUP_ID_LENGTH - GROUP_DIGEST_LENGTH - 1);
  return `${prefix}~${digest}`;
}

const MAX_GROUP_ID_LENGTH = 128;
/** 132 bits of SHA-256 in base64url (whose characters SQS accepts). */
const GROUP_DIGEST_LENGTH = 22;
const GROUP_ID_CHARS = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]+$/;
const NOT_GROUP_ID_CHAR = /[^A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

export class SqsResultSender implements ResultSender {
  private readonly sqs: SQSClient;
  private readonly queueUrl: string;

  constructor(sqs: SQSClient, queueUrl: string) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
  }

  /** The records go packed, as few messages a crawl as fit (core/results/result-message.ts). */
  sendResults(results: readonly CrawlResult[]): Promise<void> {
    return sendMessagesInBatches(
      this.sqs,
      this.queueUrl,
      resultMessageBodies(results).map((body) => ({ body })),
    );
  }

  /** A host of the crawl drained: the aggregate function checks completion (aggregate-batch.ts). */
  sendDrained(crawlId: string): Promise<void> {
    const record: DrainedRecord = { v: 1, kind: 'drained', crawlId };
    return sendMessagesInBatches(this.sqs, this.queueUrl, [{ body: JSON.stringify(record) }]);
  }
}

export class SqsRenderSender implements RenderSender {
  private readonly sqs: SQSClient;
  private readonly queueUrl: string;

  constructor(sqs: SQSClient, queueUrl: string) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
  }

  sendRenders(messages: readonly RenderMessage[]): Promise<void> {
    return sendMessagesInBatches(
      this.sqs,
      this.queueUrl,
      messages.map((message) => ({ body: JSON.stringify(message) })),
    );
  }
}

/** Moves unprocessable messages to a DLQ with their reason as message attributes. */
export class SqsDeadLetterSender implements DeadLetterSender {
  private readonly sqs: SQSClient;
  private readonly queueUrl: string;

  constructor(sqs: SQSClient, queueUrl: string) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
  }

  send(letters: readonly DeadLetter[]): Promise<void> {
    return sendMessagesInBatches(this.sqs, this.queueUrl, letters.map(deadLetterMessage));
  }
}

/**
 * The attribute naming why the crawler dead-lettered a message itself (a malformed task, an unknown
 * crawl). Messages SQS moved after too many receives have none: `crawler redrive` tells them apart.
 */
export const DEAD_LETTER_CODE_ATTRIBUTE = 'code';

/**
 * A DLQ copy always fits the queue: the body came in at up to the limit, and the reason attributes
 * come on top, so a body too long for both is cut (at a character boundary) and marked with
 * `truncated` = its full length in bytes. A message that cannot be sent would fail its whole batch.
 */
function deadLetterMessage(letter: DeadLetter): QueueMessage {
  const attributes = {
    [DEAD_LETTER_CODE_ATTRIBUTE]: sqsSafe(letter.code, 256),
    reason: sqsSafe(letter.reason, 1024),
  };
  if (messageBytes({ body: letter.body, attributes }) <= MAX_MESSAGE_BYTES)
    return { body: letter.body, attributes };
  const marked = { ...attributes, truncated: String(Buffer.byteLength(letter.body)) };
  const room = MAX_MESSAGE_BYTES - messageBytes({ body: '', attributes: marked });
  const { read } = new TextEncoder().encodeInto(letter.body, new Uint8Array(room));
  return { body: letter.body.slice(0, read), attributes: marked };
}

/** SQS accepts only these characters (and limits sizes): anything else in a reason becomes U+FFFD. */
function sqsSafe(text: string, maxLength: number): string {
  const safe = text.replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD');
  if (safe.length <= maxLength) return safe || '-';
  // Cut between code points: half a surrogate pair is a character SQS refuses.
  const cut = safe.slice(0, maxLength - 1);
  return `${/[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}
