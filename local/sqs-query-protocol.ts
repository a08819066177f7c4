// The SQS query protocol's shapes, apart from the gateway that speaks it (sqs-query-gateway.ts):
// an `Action=...` form read as the JSON protocol's input, and a JSON answer written as the query
// protocol's XML (a result, or an error). Pure text work: no requests, no sockets.
import { randomUUID } from 'node:crypto';

const XMLNS = 'http://queue.amazonaws.com/doc/2012-11-05/';

// --- Query form → JSON input ------------------------------------------------------------------

type Tree = { [key: string]: Tree | string };

const INTEGERS = new Set([
  'DelaySeconds',
  'MaxNumberOfMessages',
  'VisibilityTimeout',
  'WaitTimeSeconds',
  'MaxResults',
]);
const SCALAR_LISTS: Record<string, string> = {
  AttributeName: 'AttributeNames',
  MessageAttributeName: 'MessageAttributeNames',
  MessageSystemAttributeName: 'MessageSystemAttributeNames',
  TagKey: 'TagKeys',
};

/** `A.1.B=x` pairs as a tree (`{A: {1: {B: 'x'}}}`), then shaped as the JSON protocol wants it. */
export function toJsonInput(form: URLSearchParams): Record<string, unknown> {
  const tree: Tree = {};
  for (const [key, value] of form) {
    if (key === 'Action' || key === 'Version') continue;
    const path = key.split('.');
    let node = tree;
    for (const [index, part] of path.entries()) {
      if (index === path.length - 1) {
        node[part] = value;
      } else {
        const next = node[part];
        if (typeof next === 'object') node = next;
        else {
          const created: Tree = {};
          node[part] = created;
          node = created;
        }
      }
    }
  }
  return shape(tree);
}

function ordered(node: Tree | string): Array<Tree | string> {
  if (typeof node === 'string') return [node];
  return Object.keys(node)
    .filter((key) => /^\d+$/.test(key))
    .sort((a, b) => Number(a) - Number(b))
    .map((key) => node[key] as Tree | string);
}

function shape(tree: Tree): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, node] of Object.entries(tree)) {
    const listName = SCALAR_LISTS[key];
    if (listName !== undefined) {
      out[listName] = ordered(node).filter((item): item is string => typeof item === 'string');
    } else if (key === 'Attribute' || key === 'Tag') {
      // Maps: Attribute.N.Name/Value, Tag.N.Key/Value.
      const map: Record<string, string> = {};
      for (const entry of ordered(node)) {
        if (typeof entry !== 'object') continue;
        const name = entry.Name ?? entry.Key;
        if (typeof name === 'string' && typeof entry.Value === 'string') map[name] = entry.Value;
      }
      out[key === 'Attribute' ? 'Attributes' : 'Tags'] = map;
    } else if (key === 'MessageAttribute' || key === 'MessageSystemAttribute') {
      const map: Record<string, unknown> = {};
      for (const entry of ordered(node)) {
        if (typeof entry !== 'object' || typeof entry.Name !== 'string' || typeof entry.Value !== 'object')
          continue;
        const value = entry.Value;
        const attribute: Record<string, unknown> = {};
        if (typeof value.DataType === 'string') attribute.DataType = value.DataType;
        if (typeof value.StringValue === 'string') attribute.StringValue = value.StringValue;
        // Base64 in both protocols.
        if (typeof value.BinaryValue === 'string') attribute.BinaryValue = value.BinaryValue;
        map[entry.Name] = attribute;
      }
      out[`${key}s`] = map;
    } else if (key.endsWith('RequestEntry')) {
      out.Entries = ordered(node).flatMap((entry) => (typeof entry === 'object' ? [shape(entry)] : []));
    } else if (typeof node === 'string') {
      out[key] = INTEGERS.has(key) && /^-?\d+$/.test(node) ? Number(node) : node;
    } else {
      out[key] = shape(node);
    }
  }
  return out;
}

// --- JSON output → query XML ------------------------------------------------------------------

/** A query action's answer: its result in the envelope SQS wraps it in. */
export function queryResponseXml(action: string, json: Record<string, unknown>): string {
  return (
    `<?xml version="1.0"?><${action}Response xmlns="${XMLNS}"><${action}Result>` +
    resultXml(action, json) +
    `</${action}Result><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></${action}Response>`
  );
}

/** A query error as SQS answers it. */
export function queryErrorXml(code: string, message: string, type: string): string {
  return (
    `<?xml version="1.0"?><ErrorResponse xmlns="${XMLNS}"><Error><Type>${type}</Type><Code>${esc(code)}</Code>` +
    `<Message>${esc(message)}</Message><Detail/></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`
  );
}

const BATCH_ENTRY: Record<string, string> = {
  SendMessageBatch: 'SendMessageBatchResultEntry',
  DeleteMessageBatch: 'DeleteMessageBatchResultEntry',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibilityBatchResultEntry',
};

function resultXml(action: string, json: Record<string, unknown>): string {
  let xml = '';
  for (const [key, value] of Object.entries(json)) {
    if (value === undefined || value === null) continue;
    if (key === 'Messages' && Array.isArray(value)) {
      for (const message of value)
        xml += `<Message>${messageXml(message as Record<string, unknown>)}</Message>`;
    } else if (key === 'QueueUrls' && Array.isArray(value)) {
      for (const url of value) xml += el('QueueUrl', String(url));
    } else if (key === 'Attributes' && typeof value === 'object') {
      xml += attributesXml(value as Record<string, unknown>);
    } else if (key === 'Tags' && typeof value === 'object') {
      for (const [tag, tagValue] of Object.entries(value as Record<string, unknown>)) {
        xml += `<Tag>${el('Key', tag)}${el('Value', String(tagValue))}</Tag>`;
      }
    } else if (key === 'Successful' && Array.isArray(value)) {
      const name = BATCH_ENTRY[action] ?? `${action}ResultEntry`;
      for (const entry of value) xml += `<${name}>${scalarsXml(entry as Record<string, unknown>)}</${name}>`;
    } else if (key === 'Failed' && Array.isArray(value)) {
      for (const entry of value)
        xml += `<BatchResultErrorEntry>${scalarsXml(entry as Record<string, unknown>)}</BatchResultErrorEntry>`;
    } else if (typeof value !== 'object') {
      xml += el(key, String(value));
    }
  }
  return xml;
}

function messageXml(message: Record<string, unknown>): string {
  let xml = '';
  for (const [key, value] of Object.entries(message)) {
    if (value === undefined || value === null) continue;
    if (key === 'Attributes' && typeof value === 'object')
      xml += attributesXml(value as Record<string, unknown>);
    else if (key === 'MessageAttributes' && typeof value === 'object') {
      for (const [name, attribute] of Object.entries(value as Record<string, Record<string, unknown>>)) {
        xml += `<MessageAttribute>${el('Name', name)}<Value>${scalarsXml(attribute)}</Value></MessageAttribute>`;
      }
    } else if (typeof value !== 'object') xml += el(key, String(value));
  }
  return xml;
}

function attributesXml(map: Record<string, unknown>): string {
  return Object.entries(map)
    .map(([name, value]) => `<Attribute>${el('Name', name)}${el('Value', String(value))}</Attribute>`)
    .join('');
}

function scalarsXml(record: Record<string, unknown>): string {
  return Object.entries(record)
    .filter(([, value]) => value !== undefined && value !== null && typeof value !== 'object')
    .map(([key, value]) => el(key, String(value)))
    .join('');
}

function el(name: string, text: string): string {
  return `<${name}>${esc(text)}</${name}>`;
}

function esc(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;')
    .replaceAll('\r', '&#xD;');
}
