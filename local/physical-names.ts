// Physical names the way CloudFormation makes them when a template names nothing:
// <stackName>-<LogicalId>-<SUFFIX>, cut to each service's length and character rules.
import { createHash } from 'node:crypto';

export type NameKind = 'queue' | 'bucket' | 'table' | 'function' | 'other';

interface Rule {
  max: number;
  invalid: RegExp;
  lowercase?: boolean;
}

const rules: Record<NameKind, Rule> = {
  queue: { max: 80, invalid: /[^A-Za-z0-9_-]/g },
  // Dots are legal in bucket names but break TLS virtual hosting; CloudFormation avoids them too.
  bucket: { max: 63, invalid: /[^a-z0-9-]/g, lowercase: true },
  table: { max: 255, invalid: /[^A-Za-z0-9_.-]/g },
  function: { max: 64, invalid: /[^A-Za-z0-9_-]/g },
  other: { max: 128, invalid: /[^A-Za-z0-9_-]/g },
};

/**
 * Tag provisioning puts on every queue it creates, as CloudFormation tags what it creates with the
 * stack id (`arn:aws:cloudformation:<region>:<account>:stack/<stackName>/<instanceId>`): names derive
 * from a random instance id, so a client given only an endpoint finds the instance by this tag.
 */
export const STACK_ID_TAG = 'crawler:stack-id';

/** The leading part every `kind` name of `stackName` shares, whatever the logical id (for listing). */
export function stackNamePrefix(kind: NameKind, stackName: string): string {
  const rule = rules[kind];
  // The least room the stack part ever gets: half the budget of a .fifo name (see physicalName).
  const room = Math.floor((rule.max - SUFFIX_LENGTH - '.fifo'.length - 2) / 2);
  return cleanPart(rule, stackName).slice(0, room).replace(/-$/, '');
}

/**
 * Deterministic for (stackName, logicalId, instanceId): the same instance re-provisions the same
 * names (useful against a persistent endpoint), a new instance gets fresh ones. Unpredictable when
 * the instance id is (a state dir's is random): no web page can guess a queue or bucket name.
 */
export function physicalName(
  kind: NameKind,
  stackName: string,
  logicalId: string,
  instanceId: string,
  options: { fifo?: boolean } = {},
): string {
  const rule = rules[kind];
  const clean = (part: string) => cleanPart(rule, part);
  let suffix = hashSuffix(`${stackName}\0${logicalId}\0${instanceId}`);
  if (rule.lowercase) suffix = suffix.toLowerCase();
  const tail = options.fifo ? '.fifo' : '';
  const budget = rule.max - suffix.length - tail.length - 2; // two dashes
  // The stack part gets what the logical id leaves over, but at least half the budget.
  const stackRoom = Math.max(Math.floor(budget / 2), budget - clean(logicalId).length);
  const stack = clean(stackName).slice(0, Math.max(0, stackRoom)).replace(/-$/, '');
  const logical = clean(logicalId)
    .slice(0, budget - stack.length)
    .replace(/-$/, '');
  return [stack, logical, suffix].filter((p) => p.length > 0).join('-') + tail;
}

function cleanPart(rule: Rule, part: string): string {
  const text = rule.lowercase ? part.toLowerCase() : part;
  return text.replace(rule.invalid, '-').replace(/-+/g, '-').replace(/^-|-$/g, '');
}

const SUFFIX_LENGTH = 12;

function hashSuffix(seed: string): string {
  // 12 chars of base32 (A-Z, 2-7), like CloudFormation's random suffix.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const bytes = createHash('sha256').update(seed).digest();
  let out = '';
  for (let i = 0; i < SUFFIX_LENGTH; i++) out += alphabet[(bytes[i] ?? 0) % 32];
  return out;
}
