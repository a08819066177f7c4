/**
 * Reads a crawl's content records (lambdas/core/content-record.ts) from the page store: all of them,
 * file by file, for `--out pages.jsonl`, `--markdown-dir` and `crawler llms-txt`; or one, by the
 * `content` pointer of its results index line, for `crawler get --markdown|--text|--meta`.
 *
 * A page fetched again (after a kill cut off the invocation that first fetched it) can have two
 * records; the first one met is kept, as the results index keeps the first line of a key. A content
 * file or line that cannot be read is skipped and handed to `onDamage`, like a damaged index part.
 */
import { gunzipSync } from 'node:zlib';
import { type ContentRecord, ContentRecordSchema } from '../lambdas/core/content-record.ts';
import type { WarcPointer } from '../lambdas/core/result.ts';
import { contentPrefix } from '../lambdas/core/warc-batch.ts';
import {
  type BlobReader,
  type IndexDamage,
  MAX_PART_DECODED_BYTES,
  type OnDamage,
} from './results-reader.ts';

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
  // One file ahead: the next download overlaps the parsing of this one.
  let next = keys.length > 0 ? blobs.get(keys[0]!) : undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    let body: Uint8Array;
    try {
      body = await next!;
    } catch (error) {
      next = i + 1 < keys.length ? blobs.get(keys[i + 1]!) : undefined;
      onDamage({ key, reason: `cannot read it (${messageOf(error)})` });
      continue;
    }
    next = i + 1 < keys.length ? blobs.get(keys[i + 1]!) : undefined;
    for (const stored of contentLines(key, body, onDamage)) {
      const id = stored.record.key.slice(0, 32);
      if (seen.has(id)) continue;
      seen.add(id);
      yield stored;
    }
  }
}

/** The records of one content file; a bad line is skipped alone, a file that is not gzip whole. */
export function* contentLines(key: string, body: Uint8Array, onDamage: OnDamage): Generator<StoredContent> {
  let bytes: Buffer;
  try {
    bytes = gunzipSync(body, { maxOutputLength: MAX_PART_DECODED_BYTES });
  } catch (error) {
    onDamage({ key, reason: `not gzip, or cut short (${messageOf(error)})` });
    return;
  }
  let start = 0;
  for (let lineNo = 1; start < bytes.length; lineNo++) {
    let end = bytes.indexOf(0x0a, start);
    if (end === -1) end = bytes.length;
    const text = bytes.toString('utf8', start, end);
    start = end + 1;
    if (text.trim() === '') continue;
    const parsed = parseContentLine(text);
    if (parsed.ok) yield { record: parsed.record, text };
    else onDamage({ key, line: lineNo, reason: parsed.reason });
  }
}

export function parseContentLine(
  text: string,
): { ok: true; record: ContentRecord } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `not JSON (${messageOf(error)})` };
  }
  const parsed = ContentRecordSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      reason: `not a content record (${issue?.path.join('.') || 'record'}: ${issue?.message})`,
    };
  }
  return { ok: true, record: parsed.data };
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
  return parsed.record;
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
