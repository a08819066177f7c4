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
 * Deterministic for (stackName, logicalId, instanceId): the same instance re-provisions the same
 * names (useful against a persistent endpoint), a new instance gets fresh ones.
 */
export function physicalName(
  kind: NameKind,
  stackName: string,
  logicalId: string,
  instanceId: string,
  options: { fifo?: boolean } = {},
): string {
  const rule = rules[kind];
  const clean = (part: string) => {
    const text = rule.lowercase ? part.toLowerCase() : part;
    return text.replace(rule.invalid, '-').replace(/-+/g, '-').replace(/^-|-$/g, '');
  };
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

function hashSuffix(seed: string): string {
  // 12 chars of base32 (A-Z, 2-7), like CloudFormation's random suffix.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const bytes = createHash('sha256').update(seed).digest();
  let out = '';
  for (let i = 0; i < 12; i++) out += alphabet[(bytes[i] ?? 0) % 32];
  return out;
}
