// Lambda's side of the SQS contract: the event it builds from received messages, and how it reads
// the function's response.
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttribute, SQSRecord } from 'aws-lambda';

/** One record exactly as Lambda's SQS poller shapes it. */
export function toSqsRecord(message: Message, queueArn: string, region: string): SQSRecord {
  const record: SQSRecord = {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '',
      SenderId: '',
      ApproximateFirstReceiveTimestamp: '',
      ...message.Attributes,
    },
    messageAttributes: toLambdaAttributes(message.MessageAttributes),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
  if (message.MD5OfMessageAttributes) {
    // Lambda puts it between messageAttributes and md5OfBody; rebuild to keep the key order.
    const { md5OfBody, eventSource, eventSourceARN, awsRegion, ...head } = record;
    return {
      ...head,
      md5OfMessageAttributes: message.MD5OfMessageAttributes,
      md5OfBody,
      eventSource,
      eventSourceARN,
      awsRegion,
    };
  }
  return record;
}

// SDK shape (StringValue, BinaryValue bytes) -> Lambda shape (stringValue, base64 binaryValue, list fields always present).
function toLambdaAttributes(attributes: Record<string, MessageAttributeValue> | undefined) {
  const out: Record<string, SQSMessageAttribute> = {};
  for (const [name, value] of Object.entries(attributes ?? {})) {
    out[name] = {
      ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { binaryValue: base64(value.BinaryValue) } : {}),
      stringListValues: value.StringListValues ?? [],
      binaryListValues: (value.BinaryListValues ?? []).map(base64),
      dataType: value.DataType ?? 'String',
    };
  }
  return out;
}

function base64(bytes: Uint8Array | string): string {
  return typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('base64');
}

export type BatchVerdict =
  | { kind: 'success'; ignoredFailures: number }
  | { kind: 'partial'; failed: Set<string> }
  | { kind: 'invalid'; reason: string };

/**
 * Lambda's reading of a handler's return value for an SQS batch.
 * Without ReportBatchItemFailures any response is success, even one listing failures (a known trap).
 * With it: null/empty response or empty/null list = success; each entry must name a message of the
 * batch by a non-empty itemIdentifier, else the whole batch fails.
 */
export function judgeResponse(
  value: unknown,
  messageIds: readonly string[],
  reportBatchItemFailures: boolean,
): BatchVerdict {
  let parsed: unknown;
  try {
    // The runtime serializes the result; what cannot be serialized is a function error.
    const text = JSON.stringify(value);
    parsed = text === undefined ? null : JSON.parse(text);
  } catch (err) {
    return { kind: 'invalid', reason: `response is not JSON-serializable: ${String(err)}` };
  }
  const list = isRecord(parsed) ? parsed.batchItemFailures : undefined;
  if (!reportBatchItemFailures) {
    return { kind: 'success', ignoredFailures: Array.isArray(list) ? list.length : 0 };
  }
  if (parsed === null) return { kind: 'success', ignoredFailures: 0 };
  if (!isRecord(parsed))
    return { kind: 'invalid', reason: `response is not an object: ${JSON.stringify(parsed)}` };
  if (list === undefined || list === null) return { kind: 'success', ignoredFailures: 0 };
  if (!Array.isArray(list)) return { kind: 'invalid', reason: 'batchItemFailures is not a list' };
  const known = new Set(messageIds);
  const failed = new Set<string>();
  for (const entry of list) {
    const id = isRecord(entry) ? entry.itemIdentifier : undefined;
    if (typeof id !== 'string' || id === '' || !known.has(id)) {
      return {
        kind: 'invalid',
        reason: `batchItemFailures entry ${JSON.stringify(entry)} names no message of the batch`,
      };
    }
    failed.add(id);
  }
  return failed.size === 0 ? { kind: 'success', ignoredFailures: 0 } : { kind: 'partial', failed };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
