/**
 * One WARC file per crawl per invocation, written with one PUT (docs: S3 PUTs per page a fraction of
 * one); each result points at its response record's gzip member.
 */
import type { BlobWriter, PageResponse } from './ports.ts';
import type { CrawlResult } from './result.ts';
import { WarcFileBuilder } from './warc.ts';

export interface CapturedPage {
  response: PageResponse;
  /** The result, complete but for its WARC pointer and payload digest. */
  result: CrawlResult;
}

export function warcKey(crawlId: string, at: Date, invocationId: string): string {
  return `warc/${crawlId}/${at.toISOString().slice(0, 10)}/${invocationId}.warc.gz`;
}

export async function storeWarcFiles(
  captured: readonly CapturedPage[],
  blobs: BlobWriter,
  invocationId: string,
  at: Date,
): Promise<{ results: CrawlResult[]; keys: string[] }> {
  const results: CrawlResult[] = [];
  const keys: string[] = [];
  for (const [crawlId, pages] of Map.groupBy(captured, (page) => page.result.crawlId)) {
    const key = warcKey(crawlId, at, invocationId);
    const builder = new WarcFileBuilder({ filename: key.slice(key.lastIndexOf('/') + 1) });
    builder.addWarcinfo({ software: 'serverless-crawler', 'crawl-id': crawlId }, at);
    for (const { response, result } of pages) {
      const responseId = builder.newRecordId();
      builder.addRequest({
        targetUri: response.url,
        date: response.startedAt,
        requestLine: response.requestLine,
        headers: response.requestHeaders,
        ip: response.remoteAddress,
        concurrentTo: responseId,
      });
      const written = builder.addResponse({
        recordId: responseId,
        targetUri: response.url,
        date: response.startedAt,
        httpVersion: response.httpVersion,
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
        body: response.body,
        ip: response.remoteAddress,
        truncated: response.truncated,
      });
      builder.addMetadata({
        targetUri: response.url,
        date: response.startedAt,
        concurrentTo: responseId,
        fields: [
          ['fetchTimeMs', String(response.elapsedMs)],
          ['outlinks', String(result.outlinks)],
          ...(result.location === undefined ? [] : [['redirectTo', result.location] as [string, string]]),
        ],
      });
      results.push({
        ...result,
        sha1: written.payloadSha1Hex,
        warc: { key, offset: written.offset, length: written.length },
      });
    }
    await blobs.put(key, builder.toBytes(), 'application/warc');
    keys.push(key);
  }
  return { results, keys };
}
