/**
 * Reads a crawl's results index from the page store: the gzip JSONL parts under `results/<crawlId>/`
 * (line format: lambdas/core/archive/cdxj.ts), in key order (write time, then invocation id), one line per
 * URL. The aggregator writes a line twice only after a crash (lambdas/core/batches/aggregate-batch.ts), so
 * lines are deduplicated by `key` (the frontier key, sha256 of the normalized URL): the first wins.
 *
 * Damage (a part that is not gzip, a line that is not an index line) is data, not an exception: it
 * goes to the reader's `onDamage` with the object key and the reason, and reading goes on with the
 * next line or part. A reader without `onDamage` gets an `IndexDamageError` instead.
 */
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';
import { resultsPrefix } from '../../shared/contracts.ts';
import { isGzip, isOutputCapError } from '../base/index.ts';
import { ResultSchema } from '../results/index.ts';
import type { IndexLine } from './cdxj.ts';

/** What reading needs from the page store (S3Blobs has it). */
export interface BlobReader {
  get(key: string, range?: { offset: number; length: number }): Promise<Uint8Array>;
  list(prefix: string): AsyncIterable<string>;
}

export const IndexLineSchema = ResultSchema.extend({
  urlkey: z.string(),
  timestamp: z.string(),
  mime: z.string().optional(),
  digest: z.string().optional(),
  filename: z.string().optional(),
  offset: z.number().int().min(0).optional(),
  length: z.number().int().positive().optional(),
});

export interface StoredLine {
  line: IndexLine;
  /** The line exactly as stored (without its newline): JSONL output repeats it byte for byte. */
  text: string;
}

/** A part, or one line of it, that was skipped: `line` (1-based) when only that line was bad. */
export interface IndexDamage {
  /** The part's object key, `results/<crawlId>/<part>.jsonl.gz`. */
  key: string;
  line?: number;
  reason: string;
}

export type OnDamage = (damage: IndexDamage) => void;

/** Thrown by a read given no `onDamage`: the caller wanted an intact index and did not get one. */
export class IndexDamageError extends Error {
  override name = 'IndexDamageError';
  readonly damage: IndexDamage;
  constructor(damage: IndexDamage) {
    super(describeDamage(damage));
    this.damage = damage;
  }
}

/** `results/c1/p.jsonl.gz line 3: not JSON (...)`. */
export function describeDamage(damage: IndexDamage): string {
  return `${damage.key}${damage.line === undefined ? '' : ` line ${damage.line}`}: ${damage.reason}`;
}

/** The one stderr line the commands print per damage. */
export function damageWarning(damage: IndexDamage): string {
  return `warning: skipped ${describeDamage(damage)}`;
}

const throwDamage: OnDamage = (damage) => {
  throw new IndexDamageError(damage);
};

export interface ReadIndexOptions {
  /** Only lines with this outcome. Deduplication still sees every line, so the filter cannot resurrect a duplicate. */
  outcome?: string;
  /** Parts fetched ahead of the one being read (default 8). */
  prefetch?: number;
  /** Told of each skipped part or line; without it the read throws IndexDamageError at the first. */
  onDamage?: OnDamage;
}

/** Every index line of a crawl, deduplicated by key, in part order; damaged parts and lines skipped. */
export async function* streamIndex(
  blobs: BlobReader,
  crawlId: string,
  options: ReadIndexOptions = {},
): AsyncGenerator<StoredLine> {
  const onDamage = options.onDamage ?? throwDamage;
  const keys: string[] = [];
  for await (const key of blobs.list(resultsPrefix(crawlId))) if (key.endsWith('.jsonl.gz')) keys.push(key);
  keys.sort();
  // Keys are 64 hex digits; the first 32 (128 bits) identify a URL without a realistic collision and
  // halve the memory a crawl of millions of URLs needs here.
  const seen = new Set<string>();
  for await (const [key, body] of prefetchInOrder(keys, (key) => blobs.get(key), options.prefetch ?? 8)) {
    for (const stored of partLines(key, body, onDamage)) {
      const id = stored.line.key.slice(0, 32);
      if (seen.has(id)) continue;
      seen.add(id);
      if (options.outcome !== undefined && stored.line.outcome !== options.outcome) continue;
      yield stored;
    }
  }
}

/** A part decoding to more than this is damaged (parts hold one aggregate batch: a few MB at most). */
export const MAX_PART_DECODED_BYTES = 256 * 1024 * 1024;

/**
 * The lines of one part. The whole part is gunzipped before any line is given out, so a part that
 * is not gzip (or is cut short) is skipped whole; a bad line is skipped alone.
 */
export function* partLines(
  key: string,
  body: Uint8Array,
  onDamage: OnDamage = throwDamage,
): Generator<StoredLine> {
  for (const { value, text } of gzipJsonLines(key, body, onDamage, parseIndexLine))
    yield { line: value, text };
}

export type ParsedLine<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * The parsed lines of a gzip JSONL object (an index part, a content file). The whole object is
 * gunzipped before any line is given out, so one that is not gzip (or is cut short) is skipped whole;
 * a bad line is skipped alone.
 */
export function* gzipJsonLines<T>(
  key: string,
  body: Uint8Array,
  onDamage: OnDamage,
  parse: (text: string) => ParsedLine<T>,
): Generator<{ value: T; text: string }> {
  let bytes: Buffer;
  try {
    bytes = gunzipSync(body, { maxOutputLength: MAX_PART_DECODED_BYTES });
  } catch (error) {
    onDamage({ key, reason: gzipDamage(body, error) });
    return;
  }
  // Line by line from the buffer: no string of the whole object, whatever its size.
  let start = 0;
  for (let lineNo = 1; start < bytes.length; lineNo++) {
    let end = bytes.indexOf(0x0a, start);
    if (end === -1) end = bytes.length;
    const text = bytes.toString('utf8', start, end);
    start = end + 1;
    if (text.trim() === '') continue;
    const parsed = parse(text);
    if (parsed.ok) yield { value: parsed.value, text };
    else onDamage({ key, line: lineNo, reason: parsed.reason });
  }
}

function gzipDamage(body: Uint8Array, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (!isGzip(body)) return `not gzip (${message})`;
  if (isOutputCapError(error)) return `decodes to more than ${MAX_PART_DECODED_BYTES} bytes`;
  return `bad gzip (${message})`;
}

/** A JSON line validated by `schema`; `what` names it in the reason (`not an index line (...)`). */
export function parseJsonLine<T>(text: string, schema: z.ZodType<T>, what: string): ParsedLine<T> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `not JSON (${(error as Error).message})` };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return { ok: false, reason: `not ${what} (${issues})` };
}

export function parseIndexLine(text: string): ParsedLine<IndexLine> {
  return parseJsonLine(text, IndexLineSchema, 'an index line');
}

/** The whole index of a crawl in memory (tests, small crawls; `crawler crawl` streams it instead). */
export async function readCrawlResults(
  blobs: BlobReader,
  crawlId: string,
  options: ReadIndexOptions = {},
): Promise<IndexLine[]> {
  const lines: IndexLine[] = [];
  for await (const { line } of streamIndex(blobs, crawlId, options)) lines.push(line);
  return lines;
}

/**
 * The index line of one URL by its frontier key (the first, as readers see it), or undefined: a scan
 * of the whole index, for when the frontier cannot say which part holds it.
 */
export async function findIndexLine(
  blobs: BlobReader,
  crawlId: string,
  key: string,
  options: Pick<ReadIndexOptions, 'onDamage'> = {},
): Promise<IndexLine | undefined> {
  for await (const { line } of streamIndex(blobs, crawlId, options)) if (line.key === key) return line;
  return undefined;
}

/** The line of frontier key `key` in one part's bytes, or undefined. */
export function findLineInPart(
  partKey: string,
  body: Uint8Array,
  key: string,
  onDamage?: OnDamage,
): IndexLine | undefined {
  for (const { line } of partLines(partKey, body, onDamage)) if (line.key === key) return line;
  return undefined;
}

/** Yields `[item, await load(item)]` in order, with up to `ahead` loads in flight. */
/** Loads `items` in order, up to `ahead` at once, and yields each with what it loaded. */
export async function* prefetchInOrder<T, R>(
  items: readonly T[],
  load: (item: T) => Promise<R>,
  ahead: number,
): AsyncGenerator<[T, R]> {
  const pending: Array<Promise<R>> = [];
  let next = 0;
  const fill = () => {
    while (next < items.length && pending.length < Math.max(1, ahead)) {
      const promise = load(items[next++] as T);
      promise.catch(() => {}); // awaited below, in order; avoid an unhandled rejection meanwhile
      pending.push(promise);
    }
  };
  for (let i = 0; i < items.length; i++) {
    fill();
    const value = await (pending.shift() as Promise<R>);
    yield [items[i] as T, value];
  }
}
