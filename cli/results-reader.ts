/**
 * Reads a crawl's results index from the page store: every gzip JSONL part under results/<crawlId>/,
 * one record per URL. A part may repeat a line only after an aggregator crash; the first wins.
 */
import { gunzipSync } from 'node:zlib';
import type { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import { type CrawlResult, ResultSchema } from '../lambdas/core/result.ts';

export async function readCrawlResults(blobs: S3Blobs, crawlId: string): Promise<CrawlResult[]> {
  const keys: string[] = [];
  for await (const key of blobs.list(`results/${crawlId}/`)) keys.push(key);
  keys.sort();
  const byUrl = new Map<string, CrawlResult>();
  for (const key of keys) {
    const text = gunzipSync(await blobs.get(key)).toString('utf8');
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const result = ResultSchema.parse(JSON.parse(line));
      if (!byUrl.has(result.url)) byUrl.set(result.url, result);
    }
  }
  return [...byUrl.values()];
}

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
