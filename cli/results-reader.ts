/**
 * Reads a crawl's results index from the page store: the gzip JSONL parts under `results/<crawlId>/`
 * (line format: lambdas/core/cdxj.ts), in key order (write time, then invocation id), one line per
 * URL. The aggregator writes a line twice only after a crash (lambdas/core/aggregate-batch.ts), so
 * lines are deduplicated by `key` (the frontier key, sha256 of the normalized URL): the first wins.
 *
 * Also here: how the read-only commands (`status`, `results`, `get`) find the stack, CSV output,
 * and `summarize` for `crawler crawl`.
 */
import type { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';
import type { IndexLine } from '../lambdas/core/cdxj.ts';
import { OUTCOMES } from '../lambdas/core/outcome.ts';
import type { CrawlResult } from '../lambdas/core/result.ts';
import { ResultSchema } from '../lambdas/core/result.ts';
import type { CrawlCostReport } from '../lambdas/shared/aws-prices.ts';
import {
  type DescribeStackOutputs,
  type LocatedStack,
  type LocateStackOptions,
  locateStack,
} from '../local/stack-locator.ts';
import { resolveStateDir } from '../local/state-dir.ts';
import { UsageError } from './usage-error.ts';

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

export interface ReadIndexOptions {
  /** Only lines with this outcome. Deduplication still sees every line, so the filter cannot resurrect a duplicate. */
  outcome?: string;
  /** Parts fetched ahead of the one being read (default 8). */
  prefetch?: number;
}

export function resultsPrefix(crawlId: string): string {
  return `results/${crawlId}/`;
}

/** Every index line of a crawl, deduplicated by key, in part order. */
export async function* streamIndex(
  blobs: BlobReader,
  crawlId: string,
  options: ReadIndexOptions = {},
): AsyncGenerator<StoredLine> {
  const keys: string[] = [];
  for await (const key of blobs.list(resultsPrefix(crawlId))) if (key.endsWith('.jsonl.gz')) keys.push(key);
  keys.sort();
  // Keys are 64 hex digits; the first 32 (128 bits) identify a URL without a realistic collision and
  // halve the memory a crawl of millions of URLs needs here.
  const seen = new Set<string>();
  for await (const [key, body] of prefetchInOrder(keys, (key) => blobs.get(key), options.prefetch ?? 8)) {
    const text = gunzipSync(body).toString('utf8');
    let lineNo = 0;
    for (const raw of text.split('\n')) {
      lineNo++;
      if (raw.trim() === '') continue;
      const line = parseIndexLine(raw, `${key} line ${lineNo}`);
      const id = line.key.slice(0, 32);
      if (seen.has(id)) continue;
      seen.add(id);
      if (options.outcome !== undefined && line.outcome !== options.outcome) continue;
      yield { line, text: raw };
    }
  }
}

export function parseIndexLine(text: string, where: string): IndexLine {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${where}: not JSON: ${(error as Error).message}`);
  }
  const parsed = IndexLineSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(
      `${where}: not an index line: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data;
}

/** The whole index of a crawl in memory (for `crawler crawl`'s results.jsonl). */
export async function readCrawlResults(
  blobs: BlobReader,
  crawlId: string,
  options: ReadIndexOptions = {},
): Promise<IndexLine[]> {
  const lines: IndexLine[] = [];
  for await (const { line } of streamIndex(blobs, crawlId, options)) lines.push(line);
  return lines;
}

/** The index line of one URL by its frontier key (the first, as readers see it), or undefined. */
export async function findIndexLine(
  blobs: BlobReader,
  crawlId: string,
  key: string,
): Promise<IndexLine | undefined> {
  for await (const { line } of streamIndex(blobs, crawlId)) if (line.key === key) return line;
  return undefined;
}

/** Yields `[item, await load(item)]` in order, with up to `ahead` loads in flight. */
async function* prefetchInOrder<T, R>(
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

// --- CSV --------------------------------------------------------------------------------------

/** The fixed columns of `crawler results --format csv`, in order. */
export const CSV_COLUMNS = [
  'url',
  'status',
  'outcome',
  'code',
  'reason',
  'mime',
  'bytes',
  'digest',
  'timestamp',
  'fetchedAt',
  'ms',
  'depth',
  'outlinks',
  'attempt',
  'truncated',
  'finalUrl',
  'location',
  'filename',
  'offset',
  'length',
  'urlkey',
  'key',
] as const satisfies ReadonlyArray<keyof IndexLine>;

/** One RFC 4180 field: quoted when it holds a comma, a double quote, CR or LF (quotes doubled). */
export function csvField(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A record with its CRLF (RFC 4180). */
export function csvRecord(fields: readonly unknown[]): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

export function csvHeader(): string {
  return csvRecord(CSV_COLUMNS);
}

export function csvRow(line: IndexLine): string {
  return csvRecord(CSV_COLUMNS.map((column) => line[column]));
}

// --- Finding the stack ------------------------------------------------------------------------

/** The options every read-only command takes to find the AWS a crawl ran on (for parseArgs). */
export const STACK_OPTIONS = {
  endpoint: { type: 'string' },
  stack: { type: 'string' },
  'state-dir': { type: 'string' },
} as const;

export const STACK_USAGE = `  --endpoint URL       a running local AWS (\`crawler local\`) or LocalStack
  --stack NAME         a deployed stack (outputs from CloudFormation)
  --state-dir DIR      the embedded AWS's state (default: $CRAWLER_STATE_DIR or .crawler)`;

export type Locate = (options: LocateStackOptions) => Promise<LocatedStack>;

/** Streams and a stack locator, injectable for tests. */
export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  locate: Locate;
  /** For `--stack NAME` (a deployed stack): its CloudFormation outputs. Not wired yet: needs a CloudFormation client. */
  describeStackOutputs?: DescribeStackOutputs;
}

export function cliIo(overrides: Partial<CliIo> = {}): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, locate: locateStack, ...overrides };
}

/** The AWS a read command was pointed at could not be opened (no state, not provisioned, unreachable). */
export class StackNotFoundError extends Error {
  override name = 'StackNotFoundError';
}

export async function openStack(
  values: { endpoint?: string | undefined; stack?: string | undefined; 'state-dir'?: string | undefined },
  io: Pick<CliIo, 'locate' | 'describeStackOutputs'>,
): Promise<LocatedStack> {
  if (values.endpoint !== undefined && !/^https?:\/\//.test(values.endpoint)) {
    throw new UsageError(
      `--endpoint expects an http(s) URL such as http://127.0.0.1:4566, got ${values.endpoint}`,
    );
  }
  const stateDir = resolveStateDir(values['state-dir']);
  // A deployed stack's outputs come from CloudFormation (loaded only for --stack: it is a big client).
  const describeStackOutputs =
    io.describeStackOutputs ??
    (values.stack === undefined
      ? undefined
      : (await import('./stack-outputs.ts')).stackOutputsReader(values.endpoint));
  try {
    return await io.locate({
      stateDir,
      ...(values.endpoint === undefined ? {} : { endpoint: values.endpoint }),
      ...(values.stack === undefined ? {} : { stackName: values.stack }),
      ...(describeStackOutputs ? { describeStackOutputs } : {}),
    });
  } catch (error) {
    const where =
      values.stack !== undefined
        ? `stack ${values.stack}`
        : values.endpoint !== undefined
          ? `the AWS at ${values.endpoint}`
          : `the local state in ${stateDir}`;
    throw new StackNotFoundError(
      `cannot open ${where}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/**
 * The frame of a read-only command: finds the stack, runs `body` on it, closes it. Output to a reader
 * that went away ends quietly (see `writingTo`); a stack that cannot be opened is a one-line error
 * on stderr and exit code 1.
 */
export function withStack(
  values: { endpoint?: string | undefined; stack?: string | undefined; 'state-dir'?: string | undefined },
  io: CliIo,
  body: (stack: LocatedStack) => Promise<number>,
): Promise<number> {
  return writingTo(io.stdout, async () => {
    let stack: LocatedStack;
    try {
      stack = await openStack(values, io);
    } catch (error) {
      if (!(error instanceof StackNotFoundError)) throw error;
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    try {
      return await body(stack);
    } finally {
      await stack.close();
    }
  });
}

export function requireOutput(stack: LocatedStack, name: string): string {
  const value = stack.outputs[name];
  if (!value)
    throw new Error(`${stack.description} has no ${name} output; is it the serverless-crawler stack?`);
  return value;
}

/** The reader of the output went away (EPIPE, e.g. `crawler results ID | head`), or the stream failed. */
export class OutputClosedError extends Error {
  override name = 'OutputClosedError';
}

/** Writes `chunk`, waiting while the stream's buffer is full (so a slow pipe does not fill memory). */
export async function write(stream: Writable, chunk: string | Uint8Array): Promise<void> {
  if (stream.destroyed || stream.writableEnded) throw new OutputClosedError('output closed');
  if (stream.write(chunk)) return;
  await new Promise<void>((resolve, reject) => {
    const settle = (error?: unknown) => {
      stream.off('drain', settle);
      stream.off('error', settle);
      stream.off('close', closed);
      if (error) reject(new OutputClosedError('output failed', { cause: error }));
      else resolve();
    };
    const closed = () => settle(new Error('closed'));
    stream.on('drain', settle);
    stream.on('error', settle);
    stream.on('close', closed);
  });
}

/**
 * Runs a command that writes to `stream`. A reader that goes away (EPIPE) ends the command quietly
 * with `run`'s exit code 0, as `cat` does; any other stream error is thrown.
 */
export async function writingTo(stream: Writable, run: () => Promise<number>): Promise<number> {
  let failure: NodeJS.ErrnoException | undefined;
  const onError = (error: NodeJS.ErrnoException) => {
    failure ??= error;
  };
  stream.on('error', onError);
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof OutputClosedError)) throw error;
    const cause = failure ?? (error.cause as NodeJS.ErrnoException | undefined);
    if (cause === undefined || cause.code === 'EPIPE') return 0;
    throw cause;
  } finally {
    stream.off('error', onError);
  }
}

export function isOutcome(value: string): boolean {
  return (OUTCOMES as readonly string[]).includes(value);
}

// --- Summary for `crawler crawl` --------------------------------------------------------------

export interface CrawlSummary {
  crawlId: string;
  seeds: string[];
  startedAt: string;
  endedAt: string;
  seconds: number;
  urls: number;
  byOutcome: Record<string, number>;
  bytes: number;
  pagesPerSecond: number;
  warcFiles: number;
  /** Counted AWS requests per page and the cost per million pages they imply (lambdas/shared/aws-prices.ts). */
  aws?: CrawlCostReport;
}

export function summarize(
  results: readonly CrawlResult[],
  info: { crawlId: string; seeds: string[]; startedAt: Date; endedAt: Date; warcFiles: number },
): CrawlSummary {
  const byOutcome: Record<string, number> = {};
  let bytes = 0;
  for (const result of results) {
    byOutcome[result.outcome] = (byOutcome[result.outcome] ?? 0) + 1;
    bytes += result.bytes;
  }
  const seconds = Math.max(0.001, (info.endedAt.getTime() - info.startedAt.getTime()) / 1000);
  return {
    crawlId: info.crawlId,
    seeds: info.seeds,
    startedAt: info.startedAt.toISOString(),
    endedAt: info.endedAt.toISOString(),
    seconds: Number(seconds.toFixed(3)),
    urls: results.length,
    byOutcome,
    bytes,
    pagesPerSecond: Number(((byOutcome.fetched ?? 0) / seconds).toFixed(2)),
    warcFiles: info.warcFiles,
  };
}
