/**
 * Result records on the results queue: the records of one crawl go out packed in as few messages
 * as fit the SQS size limit (`{v: 1, kind: "results", crawlId, results: [...]}`), so SQS requests
 * (send, receive, delete) are paid per flush, not per URL. A bare result record as the whole body
 * (what versions before this one sent, and what a message left in a queue at upgrade time holds) is
 * still read. One crawl a message: `crawler redrive ID` finds a message's crawl at its top level, and
 * the aggregate function fails, defers or retries a message as one unit of one crawl.
 *
 * Each record keeps the id it had as a message of its own (`rid`: a hash of its JSON), so a record
 * finalizes the same whether it came alone or packed, delivered once or again.
 */
import { createHash } from 'node:crypto';
import { AWS_LIMITS } from '../base/index.ts';
import { type CrawlResult, ResultSchema } from './result.ts';

export interface ResultsRecord {
  v: 1;
  kind: 'results';
  crawlId: string;
  results: CrawlResult[];
}

/** A record read from a message, with the id that makes finalizing it again idempotent. */
export interface ReceivedResult {
  result: CrawlResult;
  rid: string;
}

/**
 * The message bodies carrying `results`: grouped by crawl (in the order each crawl first appears, a
 * crawl's records in their order), each body at most `maxBytes`. A record too large for a message of
 * its own goes alone, as a bare record (SQS refuses it as it refused it before).
 */
export function resultMessageBodies(
  results: readonly CrawlResult[],
  maxBytes: number = AWS_LIMITS.sqsMaxMessageBytes,
): string[] {
  const bodies: string[] = [];
  for (const [crawlId, records] of Map.groupBy(results, (result) => result.crawlId)) {
    const head = `{"v":1,"kind":"results","crawlId":${JSON.stringify(crawlId)},"results":[`;
    const tail = ']}';
    const envelope = Buffer.byteLength(head) + tail.length;
    let parts: string[] = [];
    let bytes = envelope;
    const close = () => {
      if (parts.length > 0) bodies.push(`${head}${parts.join(',')}${tail}`);
      parts = [];
      bytes = envelope;
    };
    for (const record of records) {
      const json = JSON.stringify(record);
      const size = Buffer.byteLength(json);
      if (envelope + size > maxBytes) {
        close();
        bodies.push(json);
        continue;
      }
      // A comma before every record but the first.
      if (parts.length > 0 && bytes + 1 + size > maxBytes) close();
      bytes += (parts.length > 0 ? 1 : 0) + size;
      parts.push(json);
    }
    close();
  }
  return bodies;
}

/** A record's id: the same for every delivery of it, alone or packed, and different for another record. */
export function resultId(json: string): string {
  return createHash('sha256').update(json).digest('base64url').slice(0, 22);
}

/**
 * The records of a results message (packed, or one bare record), each checked against the one
 * result schema; any record that fails it fails the whole message (it goes to the DLQ as a unit,
 * and `crawler redrive` brings it back whole).
 */
export function parseResultsMessage(
  body: string,
): { ok: true; results: ReceivedResult[] } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, reason: `not JSON: ${(error as Error).message}` };
  }
  if (!isPacked(json)) {
    const one = checked(json, []);
    return one.ok ? { ok: true, results: [{ result: one.result, rid: resultId(body) }] } : one;
  }
  if (json.v !== 1 || typeof json.crawlId !== 'string' || !Array.isArray(json.results))
    return { ok: false, reason: 'not a results message: needs v 1, a crawlId and a results array' };
  const results: ReceivedResult[] = [];
  for (const [index, raw] of json.results.entries()) {
    const one = checked(raw, ['results', index]);
    if (!one.ok) return one;
    if (one.result.crawlId !== json.crawlId)
      return {
        ok: false,
        reason: `not a results message: results.${index} is of crawl ${JSON.stringify(one.result.crawlId)}, the message of ${JSON.stringify(json.crawlId)}`,
      };
    // JSON.stringify of the parsed record is the record as its sender wrote it alone.
    results.push({ result: one.result, rid: resultId(JSON.stringify(raw)) });
  }
  return { ok: true, results };
}

function isPacked(json: unknown): json is { v?: unknown; crawlId?: unknown; results?: unknown } {
  return typeof json === 'object' && json !== null && (json as { kind?: unknown }).kind === 'results';
}

/** `raw` checked against the result schema; `at` is where it sits in the message (for the reason). */
function checked(
  raw: unknown,
  at: ReadonlyArray<string | number>,
): { ok: true; result: CrawlResult } | { ok: false; reason: string } {
  const parsed = ResultSchema.safeParse(raw);
  if (parsed.success) return { ok: true, result: parsed.data };
  const where = (path: readonly PropertyKey[]) => [...at, ...path].map(String).join('.') || '(root)';
  return {
    ok: false,
    reason: `not a result record: ${parsed.error.issues.map((i) => `${where(i.path)}: ${i.message}`).join('; ')}`,
  };
}
