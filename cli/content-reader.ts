/**
 * Reads a crawl's content records (lambdas/core/results/content-record.ts) from the page store: all of them,
 * file by file, for `--out pages.jsonl`, `--markdown-dir` and `crawler llms-txt`; or one, by the
 * `content` pointer of its results index line, for `crawler get --markdown|--text|--meta`.
 *
 * A page fetched again (after a kill cut off the invocation that first fetched it) can have two
 * records; the first one met is kept, as the results index keeps the first line of a key. A content
 * file or line that cannot be read is skipped and handed to `onDamage`, like a damaged index part.
 */
import { gunzipSync } from 'node:zlib';
import {
  type BlobReader,
  gzipJsonLines,
  type IndexDamage,
  MAX_PART_DECODED_BYTES,
  type OnDamage,
  type ParsedLine,
  parseJsonLine,
  prefetchInOrder,
} from '../lambdas/core/archive/index.ts';
import { type ContentRecord, ContentRecordSchema, type WarcPointer } from '../lambdas/core/results/index.ts';
import { contentPrefix } from '../lambdas/shared/contracts.ts';

export interface StoredContent {
  record: ContentRecord;
  /** The line exactly as stored (without its newline). */
  text: string;
}

export async function* streamContent(
  blobs: BlobReader,
  crawlId: string,
  onDamage: OnDamage = throwDamage,
): AsyncGenerator<StoredContent> {
  const keys: string[] = [];
  for await (const key of blobs.list(contentPrefix(crawlId))) if (key.endsWith('.jsonl.gz')) keys.push(key);
  keys.sort();
  const seen = new Set<string>();
  // Two files in flight: the next download overlaps the parsing of this one.
  const read = (key: string) =>
    blobs.get(key).then(
      (body) => ({ body }),
      (error: unknown) => ({ error }),
    );
  for await (const [key, got] of prefetchInOrder(keys, read, 2)) {
    if ('error' in got) {
      onDamage({ key, reason: `cannot read it (${messageOf(got.error)})` });
      continue;
    }
    const body = got.body;
    for (const { value: record, text } of gzipJsonLines(key, body, onDamage, parseContentLine)) {
      const id = record.key.slice(0, 32);
      if (seen.has(id)) continue;
      seen.add(id);
      yield { record, text };
    }
  }
}

export function parseContentLine(text: string): ParsedLine<ContentRecord> {
  return parseJsonLine(text, ContentRecordSchema, 'a content record');
}

/** The record a results index line's `content` pointer names: one ranged GET of one gzip member. */
export async function readContentRecord(blobs: BlobReader, pointer: WarcPointer): Promise<ContentRecord> {
  const where = `content record ${pointer.key} at offset ${pointer.offset} (length ${pointer.length})`;
  let member: Uint8Array;
  try {
    member = await blobs.get(pointer.key, { offset: pointer.offset, length: pointer.length });
  } catch (error) {
    throw new ContentReadError(`${where}: cannot read it (${messageOf(error)})`);
  }
  let text: string;
  try {
    text = gunzipSync(member, { maxOutputLength: MAX_PART_DECODED_BYTES }).toString('utf8').trimEnd();
  } catch (error) {
    throw new ContentReadError(`${where}: not a gzip member (${messageOf(error)})`);
  }
  const parsed = parseContentLine(text);
  if (!parsed.ok) throw new ContentReadError(`${where}: ${parsed.reason}`);
  return parsed.value;
}

/** A stored content record could not be read; the message names it. */
export class ContentReadError extends Error {
  override name = 'ContentReadError';
}

function throwDamage(damage: IndexDamage): never {
  throw new ContentReadError(
    `${damage.key}${damage.line === undefined ? '' : ` line ${damage.line}`}: ${damage.reason}`,
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
