/**
 * The aggregate function's work for one batch of result messages: validate, group by crawl,
 * and write each crawl's lines as one gzip JSONL part under `results/<crawlId>/`.
 */
import { gzipSync } from 'node:zlib';
import type { BlobWriter } from './ports.ts';
import { type CrawlResult, ResultSchema } from './result.ts';

export interface ResultMessage {
  id: string;
  body: string;
}

export interface AggregateReport {
  written: Array<{ key: string; lines: number }>;
  /** Messages that are not result records: failed so the queue moves them to its DLQ for inspection. */
  rejected: Array<{ id: string; reason: string }>;
}

export function resultPartKey(crawlId: string, at: Date, invocationId: string): string {
  const stamp = at.toISOString().replace(/[:.]/g, '-');
  return `results/${crawlId}/${stamp}-${invocationId}.jsonl.gz`;
}

export async function processResultBatch(
  messages: readonly ResultMessage[],
  deps: { blobs: BlobWriter; invocationId: string; now?: () => Date },
): Promise<AggregateReport> {
  const rejected: AggregateReport['rejected'] = [];
  const valid: CrawlResult[] = [];
  for (const message of messages) {
    let json: unknown;
    try {
      json = JSON.parse(message.body);
    } catch (error) {
      rejected.push({ id: message.id, reason: `not JSON: ${(error as Error).message}` });
      continue;
    }
    const parsed = ResultSchema.safeParse(json);
    if (parsed.success) valid.push(parsed.data);
    else
      rejected.push({
        id: message.id,
        reason: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
      });
  }
  const at = (deps.now ?? (() => new Date()))();
  const written: AggregateReport['written'] = [];
  for (const [crawlId, lines] of Map.groupBy(valid, (result) => result.crawlId)) {
    const key = resultPartKey(crawlId, at, deps.invocationId);
    const body = gzipSync(`${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    await deps.blobs.put(key, body, 'application/x-ndjson');
    written.push({ key, lines: lines.length });
  }
  return { written, rejected };
}
