/**
 * `crawler crawl --out DIR`: copies a crawl's outputs from the page store to disk, streaming every
 * one of them, so the size of a crawl is bounded by the disk, not by memory or V8's string limit:
 *
 * - `DIR/warc/<name>.warc.gz`: each WARC object piped from S3 to its file;
 * - `DIR/results.jsonl`: the results index as `crawler results` prints it (each stored line byte for
 *   byte, deduplicated by key), written with backpressure while the summary is counted;
 * - `DIR/summary.json`: counts by outcome, bytes, pages/s, written last.
 *
 * A damaged index part or line is skipped and handed to `onDamage` (results-reader.ts); the caller
 * decides what it means for the exit code.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { CrawlCostReport } from '../lambdas/shared/aws-prices.ts';
import {
  type BlobReader,
  type CrawlSummary,
  type IndexDamage,
  type OnDamage,
  SummaryAccumulator,
  streamIndex,
} from './results-reader.ts';

/** What the copy needs from the page store (S3Blobs has it). */
export interface OutputBlobs extends BlobReader {
  getStream(key: string): Promise<Readable>;
}

export interface CrawlOutputInfo {
  seeds: string[];
  startedAt: Date;
  endedAt: Date;
  /** The crawl's state for summary.json (`interrupted`: written after Ctrl-C, resumable). */
  state?: CrawlSummary['state'];
  /** The counted AWS cost for `summary.aws`, given the number of fetched pages. */
  costReport?: (fetchedPages: number) => CrawlCostReport;
  /** Told of each skipped index part or line as it is met. */
  onDamage?: OnDamage;
}

export interface CrawlOutputReport {
  summary: CrawlSummary;
  /** Every index part or line skipped: results.jsonl lacks their URLs. */
  damages: IndexDamage[];
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
  for await (const key of blobs.list(`warc/${crawlId}/`)) {
    await pipeline(await blobs.getStream(key), createWriteStream(join(outDir, 'warc', basename(key))));
    warcFiles++;
  }

  const damages: IndexDamage[] = [];
  const onDamage: OnDamage = (damage) => {
    damages.push(damage);
    info.onDamage?.(damage);
  };
  const accumulator = new SummaryAccumulator();
  async function* chunks(): AsyncGenerator<string> {
    let chunk = '';
    for await (const { line, text } of streamIndex(blobs, crawlId, { onDamage })) {
      accumulator.add(line);
      chunk += `${text}\n`;
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk !== '') yield chunk;
  }
  // pipeline: the generator is pulled only as fast as the file takes it (backpressure).
  await pipeline(chunks, createWriteStream(join(outDir, 'results.jsonl')));

  const summary = accumulator.summary({
    crawlId,
    seeds: info.seeds,
    startedAt: info.startedAt,
    endedAt: info.endedAt,
    warcFiles,
  });
  if (info.state) summary.state = info.state;
  if (info.costReport) summary.aws = info.costReport(summary.byOutcome.fetched ?? 0);
  await writeFile(join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  return { summary, damages };
}
