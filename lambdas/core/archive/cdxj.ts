/**
 * The results index: one JSON line per finished URL, written by the aggregate function as gzip JSONL
 * parts under `results/<crawlId>/` and read by `crawler results` / `crawler get`. Pure: no I/O.
 *
 * ## Line format
 *
 * Each line is one JSON object: the result record (lambdas/core/results/result.ts) plus CDXJ fields, so a
 * line can be used as a CDXJ record (pywb / OutbackCDX style) and still carries everything the
 * crawler knows about the URL. `urlkey` and `timestamp` come first, so sorting lines as text sorts
 * them like a CDXJ index.
 *
 * | field | from | example |
 * | --- | --- | --- |
 * | `urlkey` | SURT of `url`, the key pywb and the Wayback CDX server look it up by (surt.ts) | `com,example)/a?b=2&c=1` |
 * | `timestamp` | `fetchedAt`, UTC, 14 digits `YYYYMMDDhhmmss` | `20240501120000` |
 * | *result record* | `v, crawlId, key, url, finalUrl?, status?, outcome, code?, reason?, contentType?, bytes, sha1?, truncated?, location?, canonical?, warc?, content?, fetchedAt, ms, depth, attempt?, outlinks` | |
 * | `mime` | `contentType` without parameters, lower-cased (only when there is one); `warc/revisit` for a revisit record, as pywb's indexer writes it | `text/html` |
 * | `digest` | `sha1:` + RFC 4648 base32 of the payload SHA-1 (the result's hex `sha1`), as in `WARC-Payload-Digest` | `sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ` |
 * | `filename` | WARC object key in the page bucket (`warc.key`) | `warc/<crawlId>/2024-05-01/<id>.warc.gz` |
 * | `offset`, `length` | the record's gzip member in that object (`warc.offset`, `warc.length`): a ranged GET of `bytes=offset-(offset+length-1)` gunzips to the one WARC response record | `1234`, `5678` |
 * | `status` | HTTP status (already part of the result record; absent when no response was received) | `200` |
 *
 * `mime`, `digest`, `filename`, `offset` and `length` are present only for URLs with a stored
 * response (outcomes `fetched`, `redirected`, and `failed` with an HTTP status); skipped, disallowed,
 * blocked, invalid and network-failed URLs have no WARC record. `key` (sha256 of the normalized URL,
 * the frontier key) is unique per crawl: a reader that sees two lines with one `key` (possible only
 * after an aggregator crash) keeps the first. `urlkey` is not unique: URLs that the SURT folds together
 * (`/a/` and `/a`, a session id, the order of query arguments) share one, as in any CDX index.
 */
import type { CrawlResult } from '../results/index.ts';
import { surt } from '../urls/index.ts';
import { base32Encode } from './warc-digest.ts';

export interface CdxjFields {
  urlkey: string;
  timestamp: string;
  mime?: string;
  digest?: string;
  filename?: string;
  offset?: number;
  length?: number;
}

/** One results index line: CDXJ key fields, the result record, then the rest of the CDXJ fields. */
export type IndexLine = CrawlResult & CdxjFields;

/** `YYYYMMDDhhmmss` (UTC) of an ISO-8601 time; unparsable input keeps its first 14 digits, zero-padded. */
export function cdxTimestamp(iso: string): string {
  const time = Date.parse(iso);
  const digits = Number.isNaN(time)
    ? iso.replace(/\D/g, '')
    : new Date(time).toISOString().replace(/\D/g, '');
  return digits.slice(0, 14).padEnd(14, '0');
}

/** `text/html; charset=utf-8` → `text/html`; undefined for an empty or missing type. */
export function mimeType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const mime = (contentType.split(';', 1)[0] ?? '').trim().toLowerCase();
  return mime === '' ? undefined : mime;
}

/** `sha1:BASE32` of a 40-digit hex SHA-1 (the WARC-Payload-Digest spelling); undefined if not one. */
export function sha1HexToDigest(hex: string | undefined): string | undefined {
  if (hex === undefined || !/^[0-9a-fA-F]{40}$/.test(hex)) return undefined;
  return `sha1:${base32Encode(Buffer.from(hex, 'hex'))}`;
}

const REVISIT_MIME = 'warc/revisit';

/** The index line of a result (see the format at the top of this file). */
export function indexLine(result: CrawlResult): IndexLine {
  // A re-crawl's unchanged page points at a revisit record: pywb indexes those as `warc/revisit`.
  const mime = result.revisit === undefined ? mimeType(result.contentType) : REVISIT_MIME;
  const digest = sha1HexToDigest(result.sha1);
  return {
    urlkey: surt(result.url),
    timestamp: cdxTimestamp(result.fetchedAt),
    ...result,
    ...(mime === undefined ? {} : { mime }),
    ...(digest === undefined ? {} : { digest }),
    ...(result.warc === undefined
      ? {}
      : { filename: result.warc.key, offset: result.warc.offset, length: result.warc.length }),
  };
}
