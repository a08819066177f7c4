/** Result records that carry no response (invalid tasks, skips, blocks, failures before a response). */
import { createHash } from 'node:crypto';
import type { Outcome } from '../base/index.ts';
import type { CrawlResult } from './result.ts';

export interface ResultSubject {
  crawlId: string;
  key: string;
  url: string;
  depth: number;
}

export function bareResult(
  subject: ResultSubject,
  outcome: Outcome,
  at: Date,
  why?: { code: string; reason: string },
): CrawlResult {
  return {
    v: 1,
    crawlId: subject.crawlId,
    key: subject.key,
    url: subject.url,
    outcome,
    ...(why ? { code: why.code, reason: why.reason } : {}),
    bytes: 0,
    fetchedAt: at.toISOString(),
    ms: 0,
    depth: subject.depth,
    outlinks: 0,
  };
}

/**
 * A malformed task has no usable URL: its frontier key comes from the message body, so a redelivery
 * and a redriven copy (a new message id) share it, and one body never makes two result lines.
 */
export function invalidTaskKey(body: string): string {
  return createHash('sha256').update(`invalid:${body}`).digest('hex');
}
