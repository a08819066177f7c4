/**
 * Finds one URL's results index line with a bounded read: the frontier's URL item names the part that
 * holds the line (`part`, lambdas/adapters/frontier-url-lookup.ts), so a lookup is one GetItem and one
 * GET of a part of at most one aggregate batch, whatever the size of the crawl. Only when the frontier
 * cannot say (the item expired or was never written, a crawl from before `part`, a part that is
 * missing or damaged) is the whole index scanned, and the caller is told why first.
 */
import {
  type BlobReader,
  findIndexLine,
  findLineInPart,
  type IndexLine,
  type OnDamage,
} from '../lambdas/core/archive/index.ts';

export interface UrlPartReader {
  /** Where the line of normalized URL `url` (dedup key `key`) is: its URL item is in its host's partition. */
  indexPart(
    crawlId: string,
    url: string,
    key: string,
  ): Promise<{ found: false } | { found: true; state: string | undefined; part: string | undefined }>;
}

export interface IndexLookupReport {
  /** Why the lookup falls back to scanning the whole index (said before the scan starts). */
  onFallback: (why: string) => void;
  /** Damaged parts and lines the scan skips. */
  onDamage: OnDamage;
}

/** The index line of normalized URL `page.url`, frontier key `page.key` (the first, as readers see it), or undefined. */
export async function lookupIndexLine(
  blobs: BlobReader,
  frontier: UrlPartReader,
  crawlId: string,
  page: { url: string; key: string },
  report: IndexLookupReport,
): Promise<IndexLine | undefined> {
  const pointed = await readPointedPart(blobs, frontier, crawlId, page);
  if ('line' in pointed) return pointed.line;
  report.onFallback(pointed.fallback);
  return findIndexLine(blobs, crawlId, page.key, { onDamage: report.onDamage });
}

async function readPointedPart(
  blobs: BlobReader,
  frontier: UrlPartReader,
  crawlId: string,
  { url, key }: { url: string; key: string },
): Promise<{ line: IndexLine } | { fallback: string }> {
  const pointer = await frontier.indexPart(crawlId, url, key);
  if (!pointer.found) {
    return {
      fallback: 'the frontier has no item for this URL (expired, never admitted, or an unknown crawl)',
    };
  }
  if (pointer.part === undefined) {
    return { fallback: `its frontier item names no index part (state ${pointer.state ?? 'unknown'})` };
  }
  let body: Uint8Array;
  try {
    body = await blobs.get(pointer.part);
  } catch (error) {
    if (isMissingObject(error)) return { fallback: `its index part ${pointer.part} does not exist` };
    throw error;
  }
  // Damage in this part is reported by the scan that follows, once; here it only explains the miss.
  let damaged: string | undefined;
  const line = findLineInPart(pointer.part, body, key, (damage) => {
    damaged ??= damage.reason;
  });
  if (line) return { line };
  return {
    fallback: `its index part ${pointer.part} ${damaged === undefined ? 'does not hold its line' : `is damaged: ${damaged}`}`,
  };
}

/** S3's answer for a key that does not exist (NoSuchKey, or a bare 404). */
export function isMissingObject(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return error.name === 'NoSuchKey' || error.name === 'NotFound' || status === 404;
}
