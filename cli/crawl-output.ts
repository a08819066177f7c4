/**
 * `crawler crawl --out DIR`: copies a crawl's outputs from the page store to disk, streaming every
 * one of them, so the size of a crawl is bounded by the disk, not by memory or V8's string limit:
 *
 * - `DIR/warc/<name>.warc.gz`: each WARC object piped from S3 to its file;
 * - `DIR/results.jsonl`: the results index as `crawler results` prints it (each stored line byte for
 *   byte, deduplicated by key, but for `filename`, which names the file under DIR), written with
 *   backpressure while the summary is counted;
 * - `DIR/pages.jsonl`: the content records (Markdown, text, metadata; docs/output.md), one per page,
 *   streamed file by file from the page store;
 * - with `markdownDir`, one `.md` file per page with Markdown (markdown-files.ts);
 * - `DIR/summary.json`: counts by outcome, bytes, pages/s, written last.
 *
 * A damaged index part or line is skipped and handed to `onDamage` (index-reader.ts), and so is a
 * page whose Markdown file cannot be written (its URL as the key); the caller decides what it means
 * for the exit code.
 *
 * DIR holds one crawl: `prepareOutDir` refuses a non-empty one unless told to clear it (--force) or
 * that it holds the crawl being resumed, so two crawls' WARC files never mix.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type BlobReader,
  type IndexDamage,
  type OnDamage,
  streamIndex,
} from '../lambdas/core/archive/index.ts';
import { type CrawlCostReport, describeCost } from '../lambdas/shared/aws-prices.ts';
import { warcPrefix } from '../lambdas/shared/contracts.ts';
import { streamContent } from './content-reader.ts';
import { type CrawlSummary, SummaryAccumulator } from './crawl-summary.ts';
import { MarkdownDirWriter } from './markdown-files.ts';
import { UsageError } from './usage-error.ts';

/** What the copy needs from the page store (S3Blobs has it). */
export interface OutputBlobs extends BlobReader {
  getStream(key: string): Promise<Readable>;
}

export interface CrawlOutputInfo {
  seeds: string[];
  seedCount?: number;
  startedAt: Date;
  endedAt: Date;
  /** The crawl's state for summary.json (`interrupted`: written after Ctrl-C, resumable). */
  state?: CrawlSummary['state'];
  /** The counted AWS cost for `summary.aws`, given the number of fetched pages. */
  costReport?: (fetchedPages: number) => CrawlCostReport;
  /** Told of each skipped index part or line as it is met. */
  onDamage?: OnDamage;
  /** Also write each page's Markdown as a file under this directory. */
  markdownDir?: string;
}

export interface CrawlOutputReport {
  summary: CrawlSummary;
  /** Every index part or line skipped (results.jsonl lacks their URLs), and every page whose Markdown file was not written. */
  damages: IndexDamage[];
}

/** Where a WARC object's copy lives, relative to the output directory: what `filename` says there. */
export function localWarcPath(key: string): string {
  return `warc/${basename(key)}`;
}

/**
 * Makes `outDir` ready for one crawl's output: a missing or empty directory is fine; a non-empty one
 * is cleared with `force`, kept with `resume` (it holds the crawl being resumed, whose files are
 * written again under the same names), and refused otherwise.
 */
export async function prepareOutDir(
  outDir: string,
  options: { force?: boolean; resume?: boolean; flag?: '--out' | '--markdown-dir' } = {},
): Promise<void> {
  const flag = options.flag ?? '--out';
  const info = await stat(outDir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (info === undefined) return;
  if (!info.isDirectory()) throw new UsageError(`${flag} ${outDir} exists and is not a directory`);
  const entries = await readdir(outDir);
  if (entries.length === 0 || options.resume) return;
  if (!options.force) {
    throw new UsageError(
      `${flag} ${outDir} is not empty (${entries.length} entries); choose another directory, pass --force to clear it, or --resume ID to continue the crawl it holds`,
    );
  }
  // --force on the working directory or one above it would delete what the user is standing in.
  const cwdFromOut = relative(resolve(outDir), process.cwd());
  if (cwdFromOut !== '..' && !cwdFromOut.startsWith(`..${sep}`) && !isAbsolute(cwdFromOut)) {
    throw new UsageError(`--force will not clear ${outDir}: it holds the current directory`);
  }
  for (const entry of entries) await rm(join(outDir, entry), { recursive: true, force: true });
}

/** Lines are gathered into chunks of about this size: one write per line would cost a call per line. */
const CHUNK_CHARS = 256 * 1024;

export async function writeCrawlOutput(
  blobs: OutputBlobs,
  crawlId: string,
  outDir: string,
  info: CrawlOutputInfo,
): Promise<CrawlOutputReport> {
  await mkdir(join(outDir, 'warc'), { recursive: true });
  let warcFiles = 0;
  for await (const key of blobs.list(warcPrefix(crawlId))) {
    await pipeline(await blobs.getStream(key), createWriteStream(join(outDir, localWarcPath(key))));
    warcFiles++;
  }

  const damages: IndexDamage[] = [];
  const onDamage: OnDamage = (damage) => {
    damages.push(damage);
    info.onDamage?.(damage);
  };
  const accumulator = new SummaryAccumulator(info.startedAt);
  async function* chunks(): AsyncGenerator<string> {
    let chunk = '';
    for await (const { line, text } of streamIndex(blobs, crawlId, { onDamage })) {
      accumulator.add(line);
      // The stored `filename` is the S3 key; here the file is under outDir (`warc.key` keeps the key).
      const local =
        line.filename === undefined
          ? text
          : JSON.stringify({ ...JSON.parse(text), filename: localWarcPath(line.filename) });
      chunk += `${local}\n`;
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk !== '') yield chunk;
  }
  // pipeline: the generator is pulled only as fast as the file takes it (backpressure).
  await pipeline(chunks, createWriteStream(join(outDir, 'results.jsonl')));

  const markdown = info.markdownDir === undefined ? undefined : new MarkdownDirWriter(info.markdownDir);
  let pages = 0;
  async function* contentChunks(): AsyncGenerator<string> {
    let chunk = '';
    for await (const { record, text } of streamContent(blobs, crawlId, onDamage)) {
      pages++;
      const unwritten = await markdown?.write(record);
      // Like a skipped part: one line naming the page, the rest still written, and the exit code 1.
      if (unwritten)
        onDamage({ key: unwritten.url, reason: `Markdown file not written (${unwritten.reason})` });
      chunk += `${text}\n`;
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk !== '') yield chunk;
  }
  await pipeline(contentChunks, createWriteStream(join(outDir, 'pages.jsonl')));

  const summary = accumulator.summary({
    crawlId,
    seeds: info.seeds,
    ...(info.seedCount === undefined ? {} : { seedCount: info.seedCount }),
    startedAt: info.startedAt,
    endedAt: info.endedAt,
    warcFiles,
  });
  summary.contentRecords = pages;
  if (markdown) summary.markdownFiles = markdown.files;
  if (info.state) summary.state = info.state;
  // The counted calls are this run's: so are the pages they are divided among.
  if (info.costReport) summary.aws = info.costReport(accumulator.fetchedThisRun);
  await writeFile(join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  return { summary, damages };
}

/** What `crawler crawl` prints at the end: counts, rate, where the output is, and the crawl's cost. */
export function describeSummary(
  summary: CrawlSummary,
  outDir: string,
  options: { verbose?: boolean } = {},
): string {
  const outcomes = Object.entries(summary.byOutcome)
    .map(([outcome, count]) => `${outcome} ${count}`)
    .join(', ');
  return [
    `crawl ${summary.crawlId} ${summary.state === 'complete' || summary.state === undefined ? 'finished' : summary.state} in ${summary.seconds.toFixed(1)} s`,
    `  urls:     ${summary.urls} (${outcomes || 'none'})`,
    `  bytes:    ${summary.bytes}`,
    `  pages/s:  ${summary.pagesPerSecond}`,
    `  output:   ${outDir} (results.jsonl, warc/ ${summary.warcFiles} files, pages.jsonl ${summary.contentRecords ?? 0} pages, summary.json)`,
    ...(summary.markdownFiles === undefined ? [] : [`  markdown: ${summary.markdownFiles} files`]),
    ...(summary.aws ? [`  aws:      ${describeCost(summary.aws, options)}`] : []),
  ].join('\n');
}
