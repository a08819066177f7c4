/**
 * One crawl's index part in an aggregate batch (aggregate-batch.ts; docs/frontier.md, "Finalize"):
 * which winners still need their lines written (a repeat whose earlier part exists has them), and
 * the part's lines, in order. Apart from the batch: what a part holds, not when it is written.
 */
import { type IndexLine, indexLine } from '../archive/index.ts';
import type { FinalizeOutcome } from '../crawl/index.ts';
import { bareResult, type CrawlResult } from '../results/index.ts';
import type { AggregateDeps, ResultItem } from './aggregate-types.ts';

export const JSONL = 'application/x-ndjson';

/**
 * The winners whose line this batch must write: first wins, and repeats whose earlier part does not
 * exist (those are pointed at `part` first, so a failed PUT leaves them pointing at a missing part
 * and completion waits for their next delivery). One HEAD per distinct earlier part.
 */
export async function unindexed<T extends ResultItem & FinalizeOutcome>(
  winners: readonly T[],
  part: string,
  crawlId: string,
  deps: AggregateDeps,
): Promise<T[]> {
  const earlier = new Map<string, Promise<boolean>>();
  const fresh: T[] = [];
  for (const item of winners) {
    if (item.part === undefined || item.part === part) {
      fresh.push(item);
      continue;
    }
    let exists = earlier.get(item.part);
    if (!exists) {
      exists = deps.blobs.exists(item.part);
      earlier.set(item.part, exists);
    }
    if (await exists) continue;
    await deps.frontier.repoint(crawlId, item.result.url, item.result.key, item.rid, part);
    fresh.push(item);
  }
  return fresh;
}

/** A result's index lines: its own (without what it carries), then one per skipped link it carries. */
export function linesOf({ skipped, ...result }: CrawlResult): IndexLine[] {
  return [
    indexLine(result),
    // Found when its page was fetched: the page's time, as the record has it.
    ...(skipped ?? []).map(({ code, reason, ...link }) =>
      indexLine({
        ...bareResult({ crawlId: result.crawlId, ...link }, 'skipped', FOUND_AT, { code, reason }),
        fetchedAt: result.fetchedAt,
      }),
    ),
  ];
}

/** Replaced by the page's `fetchedAt` (a string the schema does not parse). */
const FOUND_AT = new Date(0);

export function compareLines(a: IndexLine, b: IndexLine): number {
  return a.urlkey < b.urlkey
    ? -1
    : a.urlkey > b.urlkey
      ? 1
      : a.timestamp < b.timestamp
        ? -1
        : a.timestamp > b.timestamp
          ? 1
          : 0;
}
