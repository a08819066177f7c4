/**
 * `crawler get URL --crawl ID [--body|--headers|--warc] [--raw]`: one stored page by ranged read.
 *
 * The URL is normalized like the crawler does (lambdas/core/url-normalize.ts) and found in the
 * crawl's results index by its key; the index line's `{filename, offset, length}` is read with one
 * S3 ranged GET, which is exactly one gzip member holding the page's WARC response record.
 *
 * - `--body` (default): the payload exactly as the site served it. The WARC record keeps the body
 *   with its Content-Encoding (gzip, br, deflate, zstd; transfer coding removed), as WARC requires.
 *   For `--body` such a body is decoded, in reverse order of the codings listed, so the output is
 *   the representation the site meant (the HTML, the image...), not the compressed bytes of the
 *   transfer; a note goes to stderr. `--raw` writes the stored (still encoded) bytes instead. A
 *   truncated body (WARC-Truncated) decodes as far as its bytes go.
 * - `--headers`: the HTTP status line and header fields as stored (CRLF line ends, blank line last).
 * - `--warc`: the whole WARC record, uncompressed.
 */
import {
  brotliDecompressSync,
  constants,
  gunzipSync,
  inflateRawSync,
  inflateSync,
  zstdDecompressSync,
} from 'node:zlib';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import { normalizeUrl } from '../lambdas/core/url-normalize.ts';
import { parseHttpMessage, readWarcRecord } from '../lambdas/core/warc.ts';
import {
  type CliIo,
  cliIo,
  findIndexLine,
  requireOutput,
  STACK_OPTIONS,
  STACK_USAGE,
  withStack,
  write,
} from './results-reader.ts';
import { parseCommandArgs, UsageError } from './usage-error.ts';

export const GET_USAGE = `usage: crawler get URL --crawl ID [options]
  --crawl ID           the crawl to read from (required)
  --body               the payload as the site served it, content-encoding decoded (default)
  --raw                with --body: the stored bytes, content-encoding not decoded
  --headers            the HTTP status line and headers
  --warc               the whole WARC record
${STACK_USAGE}`;

/** Decoded bodies larger than this are refused (a stored body is limited; its expansion is not). */
export const MAX_DECODED_BYTES = 1024 * 1024 * 1024;

export async function getCommand(args: string[], overrides: Partial<CliIo> = {}): Promise<number> {
  const io = cliIo(overrides);
  if (args.includes('--help') || args.includes('-h')) {
    await write(io.stdout, `${GET_USAGE}\n`);
    return 0;
  }
  const { values, positionals } = parse(args);
  if (positionals.length !== 1) throw new UsageError(`get needs exactly one URL\n${GET_USAGE}`);
  if (values.crawl === undefined || values.crawl === '')
    throw new UsageError(`get needs --crawl ID\n${GET_USAGE}`);
  const modes = (['body', 'headers', 'warc'] as const).filter((mode) => values[mode]);
  if (modes.length > 1)
    throw new UsageError(`give one of --body, --headers, --warc (got ${modes.join(', ')})`);
  const mode = modes[0] ?? 'body';
  if (values.raw && mode !== 'body') throw new UsageError('--raw applies to --body only');
  const crawlId = values.crawl;
  const normalized = normalizeUrl(positionals[0]!);
  if (!normalized.ok) throw new UsageError(`not a crawlable URL: ${normalized.reason}`);

  return withStack(values, io, async (stack) => {
    const blobs = new S3Blobs(stack.clients.s3, requireOutput(stack, 'PageBucketName'));
    const line = await findIndexLine(blobs, crawlId, normalized.key);
    if (!line) {
      const table = requireOutput(stack, 'FrontierTableName');
      const known = await createFrontierStore(stack.clients.dynamodb, table).readCounters(crawlId);
      io.stderr.write(
        known
          ? `${normalized.url} is not in crawl ${crawlId} (no result for it in ${stack.description})\n`
          : `no crawl ${crawlId} in ${stack.description}\n`,
      );
      return 1;
    }
    if (line.filename === undefined || line.offset === undefined || line.length === undefined) {
      const why = [line.code, line.reason].filter((part) => part !== undefined).join(': ');
      io.stderr.write(
        `${normalized.url} has no stored page in crawl ${crawlId}: it ended as ${line.outcome}${why ? ` (${why})` : ''}\n`,
      );
      return 1;
    }
    const member = await blobs.get(line.filename, { offset: line.offset, length: line.length });
    if (member.byteLength !== line.length) {
      throw new Error(
        `s3://${blobs.bucket}/${line.filename} bytes ${line.offset}+${line.length}: got ${member.byteLength} bytes`,
      );
    }
    if (mode === 'warc') {
      await write(io.stdout, isGzip(member) ? gunzipSync(member) : member);
      return 0;
    }
    const record = readWarcRecord(member);
    const type = record.header('WARC-Type');
    if (type !== 'response') {
      throw new Error(
        `${line.filename} at ${line.offset} is a WARC ${type ?? 'untyped'} record, not a response`,
      );
    }
    const stored = record.header('WARC-Payload-Digest');
    if (
      line.digest !== undefined &&
      stored !== undefined &&
      stored.toUpperCase() !== line.digest.toUpperCase()
    ) {
      throw new Error(
        `${line.filename} at ${line.offset} holds payload ${stored}, but the index says ${line.digest}`,
      );
    }
    const http = parseHttpMessage(record.block);
    if (mode === 'headers') {
      await write(io.stdout, record.block.subarray(0, record.block.byteLength - http.body.byteLength));
      return 0;
    }
    if (values.raw) {
      await write(io.stdout, http.body);
      return 0;
    }
    const codings = contentCodings(http.header('Content-Encoding'));
    if (codings.length === 0) {
      await write(io.stdout, http.body);
      return 0;
    }
    let decoded: Uint8Array;
    try {
      decoded = decodeContent(http.body, codings);
    } catch (error) {
      io.stderr.write(
        `cannot decode the body (Content-Encoding: ${codings.join(', ')}): ${(error as Error).message}; --raw writes it as stored\n`,
      );
      return 1;
    }
    io.stderr.write(
      `note: body decoded from Content-Encoding ${codings.join(', ')} (${http.body.byteLength} → ${decoded.byteLength} bytes); --raw keeps it encoded\n`,
    );
    await write(io.stdout, decoded);
    return 0;
  });
}

/** The content codings of a Content-Encoding value, in the order they were applied; identity dropped. */
export function contentCodings(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
}

/**
 * Undoes content codings (last applied first). Flushing (not finishing) the streams lets a body cut
 * short by a size or time limit decode as far as its bytes go. Unknown codings throw.
 */
export function decodeContent(body: Uint8Array, codings: readonly string[]): Uint8Array {
  let data: Uint8Array = body;
  const limits = { maxOutputLength: MAX_DECODED_BYTES };
  for (const coding of [...codings].reverse()) {
    switch (coding) {
      case 'gzip':
      case 'x-gzip':
        data = gunzipSync(data, { ...limits, finishFlush: constants.Z_SYNC_FLUSH });
        break;
      case 'deflate':
        // RFC 9110 says zlib-wrapped; some servers send raw deflate.
        try {
          data = inflateSync(data, { ...limits, finishFlush: constants.Z_SYNC_FLUSH });
        } catch {
          data = inflateRawSync(data, { ...limits, finishFlush: constants.Z_SYNC_FLUSH });
        }
        break;
      case 'br':
        data = brotliDecompressSync(data, { ...limits, finishFlush: constants.BROTLI_OPERATION_FLUSH });
        break;
      case 'zstd':
        data = zstdDecompressSync(data, { ...limits, finishFlush: constants.ZSTD_e_flush });
        break;
      default:
        throw new Error(`unknown content coding ${JSON.stringify(coding)}`);
    }
  }
  return data;
}

function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

function parse(args: string[]) {
  return parseCommandArgs(
    args,
    {
      crawl: { type: 'string' },
      body: { type: 'boolean' },
      headers: { type: 'boolean' },
      warc: { type: 'boolean' },
      raw: { type: 'boolean' },
      ...STACK_OPTIONS,
    },
    GET_USAGE,
  );
}
