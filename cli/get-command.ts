/**
 * `crawler get URL --crawl ID [--body|--headers|--warc|--markdown|--text|--meta] [--raw]`: one stored
 * page by ranged read.
 *
 * The URL is normalized like the crawler does (lambdas/core/urls/url-normalize.ts) and its results index
 * line found by its key: in the one part the frontier names (index-lookup.ts), or by a scan when it
 * cannot. The line's `{filename, offset, length}` is read with one S3 ranged GET, which is exactly one
 * gzip member holding the page's WARC response record.
 *
 * - `--body` (default): the payload exactly as the site served it. The WARC record keeps the body
 *   with its Content-Encoding (gzip, br, deflate, zstd; transfer coding removed), as WARC requires.
 *   For `--body` such a body is decoded, in reverse order of the codings listed, so the output is
 *   the representation the site meant (the HTML, the image...), not the compressed bytes of the
 *   transfer; a note goes to stderr. Decoding stops at the crawl's own caps (`maxDecodedBytes`,
 *   `maxDecodeRatio`: a stored decompression bomb is refused, not expanded). `--raw` writes the stored
 *   (still encoded) bytes instead. A truncated body (WARC-Truncated) decodes as far as its bytes go.
 * - `--headers`: the HTTP status line and header fields as stored (CRLF line ends, blank line last).
 * - `--warc`: the whole WARC record, uncompressed.
 * - `--markdown`, `--text`, `--meta`: from the page's content record (the index line's `content`
 *   pointer, one ranged GET of one gzip member): its Markdown, its text, or its metadata as JSON.
 *
 * Every failure is one line on stderr and exit code 1; one about the stored record names its object
 * (`s3://bucket/key`) and offset.
 */
import { gunzipSync } from 'node:zlib';
import { CrawlConfigStore } from '../lambdas/adapters/crawl-config-store.ts';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { FrontierUrlLookup } from '../lambdas/adapters/frontier-url-lookup.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import {
  type BlobReader,
  damageWarning,
  type HttpMessage,
  type IndexLine,
  parseHttpMessage,
  readWarcRecord,
  type WarcRecord,
} from '../lambdas/core/archive/index.ts';
import { isGzip } from '../lambdas/core/base/index.ts';
import type { MainContent } from '../lambdas/core/content/index.ts';
import {
  type DecodedBody,
  decodeContent,
  decodeText,
  type FetchLimits,
  FetchLimitsSchema,
} from '../lambdas/core/crawl/index.ts';
import { type ContentRecord, contentMetadata } from '../lambdas/core/results/index.ts';
import { normalizeUrl } from '../lambdas/core/urls/index.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import type { LocatedStack } from '../local/stack-locator.ts';
import { type CliIo, write } from './cli-io.ts';
import { ContentReadError, readContentRecord } from './content-reader.ts';
import { defineCommand } from './define-command.ts';
import { isMissingObject, lookupIndexLine } from './index-lookup.ts';
import { STACK_OPTIONS, STACK_USAGE, withStorage } from './stack-access.ts';
import { UsageError } from './usage-error.ts';
import { noSuchCrawl } from './usage-failures.ts';

export const GET_USAGE = `usage: crawler get URL --crawl ID [options]
  --crawl ID           the crawl to read from (required)
  --body               the payload as the site served it, content-encoding decoded (default)
  --raw                with --body: the stored bytes, content-encoding not decoded
  --headers            the HTTP status line and headers
  --warc               the whole WARC record
  --markdown           the page's main content as Markdown (its content record)
  --text               the page's main content as plain text (a text, JSON or XML page: its text)
  --meta               the page's metadata (title, description, language, ...) as JSON
${STACK_USAGE}`;

export const getCommand = defineCommand({
  usage: GET_USAGE,
  options: {
    crawl: { type: 'string' },
    body: { type: 'boolean' },
    headers: { type: 'boolean' },
    warc: { type: 'boolean' },
    markdown: { type: 'boolean' },
    text: { type: 'boolean' },
    meta: { type: 'boolean' },
    raw: { type: 'boolean' },
    ...STACK_OPTIONS,
  },
  run: async ({ io, values, positionals }) => {
    if (positionals.length !== 1) throw new UsageError(`get needs exactly one URL\n${GET_USAGE}`);
    if (values.crawl === undefined || values.crawl === '')
      throw new UsageError(`get needs --crawl ID\n${GET_USAGE}`);
    const modes = (['body', 'headers', 'warc', 'markdown', 'text', 'meta'] as const).filter(
      (mode) => values[mode],
    );
    if (modes.length > 1)
      throw new UsageError(
        `give one of --body, --headers, --warc, --markdown, --text, --meta (got ${modes.map((m) => `--${m}`).join(', ')})`,
      );
    const mode = modes[0] ?? 'body';
    if (values.raw && mode !== 'body') throw new UsageError('--raw applies to --body only');
    const crawlId = values.crawl;
    const normalized = normalizeUrl(positionals[0]!);
    if (!normalized.ok) throw new UsageError(`not a crawlable URL: ${normalized.reason}`);

    return withStorage(values, io, async (stack) => {
      const blobs = new S3Blobs(
        stack.clients.s3,
        requiredOutput(stack.outputs, OUTPUTS.pageBucketName, stack.description),
      );
      const page: PageRead = { io, stack, blobs, crawlId, url: normalized.url };
      const line = await findLine(page, normalized);
      if (!line) return 1;
      if (mode === 'markdown' || mode === 'text' || mode === 'meta') {
        return writeContent(io, blobs, line, mode, `${normalized.url} in crawl ${crawlId}`, async () =>
          extractFromStoredPage(blobs, blobs.bucket, line, await decodeLimits(stack, crawlId)),
        );
      }
      return writeRecord(page, line, mode, values.raw ?? false);
    });
  },
});

/** One page read from one crawl's storage, and where to report. */
interface PageRead {
  io: CliIo;
  stack: LocatedStack;
  blobs: S3Blobs;
  crawlId: string;
  /** The page's URL, normalized. */
  url: string;
}

/**
 * The page's results index line, by its key. None: one line on stderr, saying whether the crawl
 * exists but has no result for the URL, or does not exist.
 */
async function findLine(
  { io, stack, blobs, crawlId, url }: PageRead,
  normalized: { url: string; key: string },
): Promise<IndexLine | undefined> {
  const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description);
  let skipped = 0;
  const line = await lookupIndexLine(
    blobs,
    new FrontierUrlLookup(stack.clients.dynamodb, table),
    crawlId,
    normalized,
    {
      onFallback: (why) =>
        io.stderr.write(`note: ${url}: ${why}; scanning the whole index of crawl ${crawlId}\n`),
      onDamage: (damage) => {
        skipped++;
        io.stderr.write(`${damageWarning(damage)}\n`);
      },
    },
  );
  if (line) return line;
  const known = await createFrontierStore(stack.clients.dynamodb, table).readCounters(crawlId);
  const maybe =
    skipped > 0 ? ` (${skipped} damaged index parts or lines were skipped: it may be in one)` : '';
  io.stderr.write(
    known
      ? `${url} is not in crawl ${crawlId} (no result for it in ${stack.description})${maybe}\n`
      : `${noSuchCrawl(crawlId, stack.description)}${maybe}\n`,
  );
  return undefined;
}

/** `--body`, `--headers`, `--warc`: from the WARC record the index line points at. */
async function writeRecord(
  page: PageRead,
  line: IndexLine,
  mode: 'body' | 'headers' | 'warc',
  raw: boolean,
): Promise<number> {
  const { io, blobs, crawlId, url } = page;
  if (line.filename === undefined || line.offset === undefined || line.length === undefined) {
    const why = [line.code, line.reason].filter((part) => part !== undefined).join(': ');
    io.stderr.write(
      `${url} has no stored page in crawl ${crawlId}: it ended as ${line.outcome}${why ? ` (${why})` : ''}\n`,
    );
    return 1;
  }
  // A revisit holds no payload: --warc shows it, the body and headers come from the capture it confirms.
  const place: RecordPlace =
    mode === 'warc'
      ? { bucket: blobs.bucket, key: line.filename, offset: line.offset, length: line.length }
      : payloadPlace(line, blobs.bucket)!;
  try {
    const member = await readMember(blobs, place);
    if (mode === 'warc') {
      await write(io.stdout, isGzip(member) ? gunzipMember(member, place) : member);
      return 0;
    }
    const http = readResponse(member, place, line);
    if (mode === 'headers') {
      await write(io.stdout, http.head);
      return 0;
    }
    return await writeBody(page, http.message, raw);
  } catch (error) {
    if (!(error instanceof StoredRecordError)) throw error;
    io.stderr.write(`${error.message}\n`);
    return 1;
  }
}

/** `--body`: decoded from its content codings under the crawl's caps, unless `raw`. */
async function writeBody(
  { io, stack, crawlId, url }: PageRead,
  message: HttpMessage,
  raw: boolean,
): Promise<number> {
  const contentEncoding = message.header('Content-Encoding');
  const codings = contentCodings(contentEncoding);
  if (raw || codings.length === 0) {
    await write(io.stdout, message.body);
    return 0;
  }
  const limits = await decodeLimits(stack, crawlId);
  const decoded = decodeStoredBody(message.body, contentEncoding, limits);
  if (!decoded.ok) {
    io.stderr.write(
      decoded.code === 'bad-encoding'
        ? `cannot decode the body of ${url} (Content-Encoding: ${codings.join(', ')}): ${decoded.reason}; --raw writes it as stored\n`
        : `the body of ${url} is larger than the crawl's decode cap when decoded: ${decoded.reason}; --raw writes it as stored\n`,
    );
    return 1;
  }
  io.stderr.write(
    `note: body decoded from Content-Encoding ${codings.join(', ')} (${message.body.byteLength} → ${decoded.bytes.byteLength} bytes); --raw keeps it encoded\n`,
  );
  await write(io.stdout, decoded.bytes);
  return 0;
}

/** `--markdown`, `--text`, `--meta`: from the content record the index line points at. */
async function writeContent(
  io: CliIo,
  blobs: BlobReader,
  line: IndexLine,
  mode: 'markdown' | 'text' | 'meta',
  what: string,
  fromStoredPage: () => Promise<MainContent>,
): Promise<number> {
  if (line.content === undefined) {
    const why =
      line.outcome !== 'fetched'
        ? `it ended as ${line.outcome}${line.code ? ` (${line.code})` : ''}`
        : `its type ${line.mime ?? 'unknown'} has none, or the crawl ran with --content none`;
    io.stderr.write(`${what} has no content record: ${why}\n`);
    return 1;
  }
  let record: ContentRecord;
  try {
    record = await readContentRecord(blobs, line.content);
  } catch (error) {
    if (!(error instanceof ContentReadError)) throw error;
    io.stderr.write(`${error.message}\n`);
    return 1;
  }
  if (mode === 'meta') {
    await write(io.stdout, `${JSON.stringify(contentMetadata(record), null, 2)}\n`);
    return 0;
  }
  if (mode === 'markdown' && record.kind === 'text') {
    io.stderr.write(
      `${what} has no Markdown (a page of type ${record.mime} has text only); --text prints it\n`,
    );
    return 1;
  }
  let content = mode === 'markdown' ? record.markdown : record.text;
  if (content === undefined && record.kind === 'pdf') {
    // A PDF's other form is not rendered from the stored document here: the crawl kept one.
    const kept =
      mode === 'markdown' ? 'text (--content text); --text prints it' : 'Markdown; --markdown prints it';
    io.stderr.write(`${what} is a PDF whose crawl kept its ${kept}\n`);
    return 1;
  }
  if (content === undefined) {
    // The record holds the other form (--content markdown or text): render this one from the page.
    try {
      const extracted = await fromStoredPage();
      content = mode === 'markdown' ? extracted.markdown : extracted.text;
    } catch (error) {
      if (!(error instanceof StoredRecordError || error instanceof ContentReadError)) throw error;
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    io.stderr.write(
      `note: ${mode} extracted from the stored page (the crawl stored ${mode === 'text' ? 'Markdown' : 'text'})\n`,
    );
  }
  await write(io.stdout, content.endsWith('\n') ? content : `${content}\n`);
  return 0;
}

/** The main content of a page as stored in its WARC record: decoded under the crawl's caps, extracted. */
async function extractFromStoredPage(
  blobs: BlobReader,
  bucket: string,
  line: IndexLine,
  limits: DecodeLimits,
): Promise<MainContent> {
  const place = payloadPlace(line, bucket);
  if (place === undefined)
    throw new ContentReadError(`the index line of ${line.url} has a content record but no WARC record`);
  const http = readResponse(await readMember(blobs, place), place, line);
  const decoded = decodeStoredBody(http.message.body, http.message.header('Content-Encoding'), limits);
  if (!decoded.ok) throw new StoredRecordError(place, `cannot decode the page: ${decoded.reason}`);
  const html = decodeText(decoded.bytes, http.message.header('Content-Type'));
  // Loaded here only: the extractor is most of what `get` would load, and a stored content record
  // (every page crawled with content on) needs none of it.
  const { extractMainContent } = await import('../lambdas/core/content/index.ts');
  return extractMainContent(html, line.finalUrl ?? line.url);
}

/**
 * The response record holding a line's payload: its own, or for a revisit (a re-crawl's unchanged
 * page) the earlier capture's. Undefined when the line points at no record.
 */
function payloadPlace(line: IndexLine, bucket: string): RecordPlace | undefined {
  if (line.revisit !== undefined) return { bucket, ...line.revisit.warc };
  if (line.filename === undefined || line.offset === undefined || line.length === undefined) return undefined;
  return { bucket, key: line.filename, offset: line.offset, length: line.length };
}

/** Where a record is: the WARC object and its gzip member. */
export interface RecordPlace {
  bucket: string;
  key: string;
  offset: number;
  length: number;
}

/** The stored record is not what the index says it is; the message names the object and offset. */
export class StoredRecordError extends Error {
  override name = 'StoredRecordError';
  constructor(place: RecordPlace, what: string, options?: ErrorOptions) {
    super(
      `stored record s3://${place.bucket}/${place.key} at offset ${place.offset} (length ${place.length}): ${what}`,
      options,
    );
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function readMember(blobs: BlobReader, place: RecordPlace): Promise<Uint8Array> {
  let member: Uint8Array;
  try {
    member = await blobs.get(place.key, { offset: place.offset, length: place.length });
  } catch (error) {
    const what = isMissingObject(error) ? 'no such object' : `cannot read it (${messageOf(error)})`;
    throw new StoredRecordError(place, what, { cause: error });
  }
  if (member.byteLength !== place.length) {
    throw new StoredRecordError(place, `got ${member.byteLength} bytes, the index says ${place.length}`);
  }
  return member;
}

function gunzipMember(member: Uint8Array, place: RecordPlace): Uint8Array {
  try {
    return gunzipSync(member);
  } catch (error) {
    throw new StoredRecordError(place, `not a gzip member (${messageOf(error)})`, { cause: error });
  }
}

/** The response record's HTTP message, checked against the index line. */
function readResponse(
  member: Uint8Array,
  place: RecordPlace,
  line: IndexLine,
): { message: HttpMessage; head: Uint8Array } {
  let record: WarcRecord;
  try {
    record = readWarcRecord(member);
  } catch (error) {
    throw new StoredRecordError(place, `not a WARC record (${messageOf(error)})`, { cause: error });
  }
  const type = record.header('WARC-Type');
  if (type !== 'response')
    throw new StoredRecordError(place, `a WARC ${type ?? 'untyped'} record, not a response`);
  const stored = record.header('WARC-Payload-Digest');
  if (
    line.digest !== undefined &&
    stored !== undefined &&
    stored.toUpperCase() !== line.digest.toUpperCase()
  ) {
    throw new StoredRecordError(place, `holds payload ${stored}, but the index says ${line.digest}`);
  }
  let message: HttpMessage;
  try {
    message = parseHttpMessage(record.block);
  } catch (error) {
    throw new StoredRecordError(place, `no HTTP response in the record (${messageOf(error)})`, {
      cause: error,
    });
  }
  return { message, head: record.block.subarray(0, record.block.byteLength - message.body.byteLength) };
}

export type DecodeLimits = Pick<FetchLimits, 'maxDecodedBytes' | 'maxDecodeRatio'>;

/** The crawl's own decode caps (its stored config), or the defaults when it cannot be read. */
async function decodeLimits(stack: LocatedStack, crawlId: string): Promise<DecodeLimits> {
  try {
    const config = await new CrawlConfigStore(
      stack.clients.dynamodb,
      requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description),
    ).get(crawlId);
    return config.limits;
  } catch {
    return FetchLimitsSchema.parse({});
  }
}

/**
 * Undoes the content codings under the crawler's caps (lambdas/core/crawl/page-content.ts): the output
 * never grows past `maxDecodedBytes`, nor past `maxDecodeRatio` times the stored body, so a stored
 * decompression bomb costs a bounded buffer.
 */
export function decodeStoredBody(
  body: Uint8Array,
  contentEncoding: string | undefined,
  limits: DecodeLimits,
): DecodedBody {
  return decodeContent(body, contentEncoding, limits.maxDecodedBytes, { maxRatio: limits.maxDecodeRatio });
}

/** The content codings of a Content-Encoding value, in the order they were applied; identity dropped. */
export function contentCodings(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
}
