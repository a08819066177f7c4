/**
 * Service limits AWS enforces and the emulators do not (or count differently), as pure checks, so a
 * local run fails where AWS would (issue 13, point 3). The hooks that apply them to the emulators'
 * requests are strict-sqs-s3.ts (fauxqs) and strict-dynamodb.ts (dynalite). An error carries what AWS
 * answers: the HTTP status, the error code and a message of the same shape.
 */
import { AWS_LIMITS } from '../lambdas/core/base/index.ts';

export interface AwsError {
  status: number;
  code: string;
  message: string;
}

/** SQS quotas (SQS Developer Guide, "Amazon SQS message quotas"; API reference of SendMessageBatch). */
export const SQS_LIMITS = {
  /** DelaySeconds of a message (and a queue's default): 0 to 900 seconds. */
  maxDelaySeconds: AWS_LIMITS.sqsMaxDelaySeconds,
  /** Entries of one SendMessageBatch (and of the other batch actions). */
  maxBatchEntries: 10,
  /**
   * The sum of a batch's message sizes. AWS raised it with the message size maximum to 1 MiB
   * (August 2025); a message's own limit is its queue's MaximumMessageSize (ours: 256 KiB).
   */
  maxBatchBytes: 1_048_576,
  /** Message attributes of one message. */
  maxMessageAttributes: 10,
  maxMessageGroupIdLength: 128,
} as const;

/** The characters SQS accepts in a message body and in string attribute values (XML 1.0's Char). */
const SQS_CHARS = '#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF';
// With the u flag a lone surrogate is one code point, outside every allowed range.
const INVALID_SQS_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** MessageGroupId: 1 to 128 of `a-z A-Z 0-9` and punctuation ``!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~``. */
const MESSAGE_GROUP_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

export function isValidMessageGroupId(id: string): boolean {
  return MESSAGE_GROUP_ID.test(id);
}

/** A message attribute as the SQS JSON protocol carries it. */
export interface SqsAttributeValue {
  DataType?: string;
  StringValue?: string;
  BinaryValue?: string;
}

/** One message of SendMessage or of a SendMessageBatch entry, as the JSON protocol carries it. */
export interface SqsMessageInput {
  MessageBody?: unknown;
  DelaySeconds?: unknown;
  MessageGroupId?: unknown;
  MessageAttributes?: unknown;
}

/** What of a queue the checks need. */
export interface QueueLimits {
  maximumMessageSize: number;
}

/**
 * The size SQS counts against MaximumMessageSize: the body's UTF-8 bytes and, per attribute, its
 * name, data type and value (a binary value by its decoded bytes).
 */
export function sqsMessageSize(message: SqsMessageInput): number {
  let size = typeof message.MessageBody === 'string' ? Buffer.byteLength(message.MessageBody) : 0;
  for (const [name, value] of attributeEntries(message.MessageAttributes)) {
    size += Buffer.byteLength(name) + Buffer.byteLength(value.DataType ?? '');
    if (typeof value.StringValue === 'string') size += Buffer.byteLength(value.StringValue);
    if (typeof value.BinaryValue === 'string') size += Buffer.from(value.BinaryValue, 'base64').length;
  }
  return size;
}

function attributeEntries(attributes: unknown): Array<[string, SqsAttributeValue]> {
  if (typeof attributes !== 'object' || attributes === null) return [];
  return Object.entries(attributes as Record<string, SqsAttributeValue>);
}

const invalidValue = (message: string): AwsError => ({ status: 400, code: 'InvalidParameterValue', message });

/** The limits of one message (SendMessage, or an entry of SendMessageBatch); undefined when it fits. */
export function checkSqsMessage(message: SqsMessageInput, queue: QueueLimits): AwsError | undefined {
  const delay = message.DelaySeconds;
  if (delay !== undefined && delay !== null) {
    if (
      typeof delay !== 'number' ||
      !Number.isInteger(delay) ||
      delay < 0 ||
      delay > SQS_LIMITS.maxDelaySeconds
    ) {
      return invalidValue(
        `Value ${String(delay)} for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= ${SQS_LIMITS.maxDelaySeconds}.`,
      );
    }
  }
  const group = message.MessageGroupId;
  // On a standard queue the group id is optional (fair queues) but held to the same rules.
  if (group !== undefined && group !== null && (typeof group !== 'string' || !isValidMessageGroupId(group))) {
    return invalidValue(
      `Value ${String(group)} for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to ${SQS_LIMITS.maxMessageGroupIdLength} in length.`,
    );
  }
  if (typeof message.MessageBody === 'string' && INVALID_SQS_CHAR.test(message.MessageBody)) {
    return {
      status: 400,
      code: 'InvalidMessageContents',
      message: `Invalid characters found. Valid unicode characters are ${SQS_CHARS}.`,
    };
  }
  const entries = attributeEntries(message.MessageAttributes);
  for (const [name, value] of entries) {
    // A string value "has the same restrictions on the content as the message body", and none is empty.
    if (value.DataType?.startsWith('String') || value.DataType?.startsWith('Number')) {
      if (!value.StringValue) {
        return invalidValue(
          `Message (user) attribute '${name}' must contain a non-empty value of type '${value.DataType}'.`,
        );
      }
      if (INVALID_SQS_CHAR.test(value.StringValue)) {
        return invalidValue(
          `Message (user) attribute '${name}' value contains invalid characters (${SQS_CHARS}).`,
        );
      }
    }
  }
  const attributes = entries.length;
  if (attributes > SQS_LIMITS.maxMessageAttributes) {
    return invalidValue(
      `Number of message attributes [${attributes}] exceeds the allowed maximum [${SQS_LIMITS.maxMessageAttributes}].`,
    );
  }
  if (sqsMessageSize(message) > queue.maximumMessageSize) {
    return invalidValue(
      `One or more parameters are invalid. Reason: Message must be shorter than ${queue.maximumMessageSize} bytes.`,
    );
  }
  return undefined;
}

/**
 * The limits of a SendMessageBatch: at most 10 entries, their sizes summed at most 1 MiB, and each
 * entry's own limits (answered for the whole request: the batch is refused, as a request with an
 * invalid parameter is).
 */
export function checkSqsBatch(entries: readonly SqsMessageInput[], queue: QueueLimits): AwsError | undefined {
  if (entries.length > SQS_LIMITS.maxBatchEntries) {
    return {
      status: 400,
      code: 'TooManyEntriesInBatchRequest',
      message: `Maximum number of entries per request are ${SQS_LIMITS.maxBatchEntries}. You have sent ${entries.length}.`,
    };
  }
  let total = 0;
  for (const entry of entries) total += sqsMessageSize(entry);
  if (total > SQS_LIMITS.maxBatchBytes) {
    return {
      status: 400,
      code: 'BatchRequestTooLong',
      message: `Batch requests cannot be longer than ${SQS_LIMITS.maxBatchBytes} bytes. You have sent ${total} bytes.`,
    };
  }
  for (const entry of entries) {
    const error = checkSqsMessage(entry, queue);
    if (error) return error;
  }
  return undefined;
}

/** DynamoDB's item size limit: 400 KB (Developer Guide, "Service, account, and table quotas"). */
export const DYNAMODB_MAX_ITEM_BYTES = 409_600;

/** A DynamoDB attribute value as the JSON protocol carries it. */
export type DynamoValue = Record<string, unknown>;

/**
 * An item's size as DynamoDB counts it (Developer Guide, "Item sizes and formats"): per attribute
 * the UTF-8 bytes of its name plus its value; strings in UTF-8 bytes (not characters), binaries in
 * bytes, a number about one byte per two significant digits plus one, a list or map 3 bytes plus one
 * per element.
 */
export function dynamoItemSize(item: Record<string, DynamoValue>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name) + valueSize(value);
  return size;
}

function valueSize(value: DynamoValue): number {
  const [type, raw] = Object.entries(value)[0] ?? [];
  switch (type) {
    case 'S':
      return Buffer.byteLength(String(raw));
    case 'N':
      return numberSize(String(raw));
    case 'B':
      return binarySize(raw);
    case 'BOOL':
    case 'NULL':
      return 1;
    case 'SS':
      return (raw as string[]).reduce((sum, s) => sum + Buffer.byteLength(s), 0);
    case 'NS':
      return (raw as string[]).reduce((sum, n) => sum + numberSize(n), 0);
    case 'BS':
      return (raw as unknown[]).reduce<number>((sum, b) => sum + binarySize(b), 0);
    case 'L':
      return 3 + (raw as DynamoValue[]).reduce((sum, element) => sum + 1 + valueSize(element), 0);
    case 'M': {
      const entries = Object.entries(raw as Record<string, DynamoValue>);
      return 3 + entries.reduce((sum, [name, v]) => sum + 1 + Buffer.byteLength(name) + valueSize(v), 0);
    }
    default:
      return 0;
  }
}

function numberSize(text: string): number {
  const digits = text
    .replace(/^[-+]/, '')
    .replace(/e.*$/i, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

function binarySize(raw: unknown): number {
  if (typeof raw === 'string') return Buffer.from(raw, 'base64').length;
  if (raw instanceof Uint8Array) return raw.length;
  return 0;
}
