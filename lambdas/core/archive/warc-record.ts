/**
 * One WARC record's bytes, apart from the file it goes into: the WARC and HTTP heads, warc-fields,
 * header names, values and URIs made safe, record ids, dates and block digests; and a response
 * prepared (hashed and compressed) once, so that it can go into whichever file takes it. Apart from
 * warc-writer.ts, which assembles the file (gzip members, offsets, the warcinfo link, rollback); the
 * choices behind the format are listed at the top of that module.
 */
import { createHash, randomUUID } from 'node:crypto';
import { deflateRawSync, constants as zlibConstants } from 'node:zlib';
import { formatSha1 } from './warc-digest.ts';

export interface WarcResponseInput {
  targetUri: string;
  date: Date;
  /** `1.1`, `1.0`, `2`… (without `HTTP/`). */
  httpVersion: string;
  status: number;
  statusText: string;
  /** Headers as received. A Transfer-Encoding header is renamed (RENAMED_TRANSFER_ENCODING). */
  headers: Array<[string, string]>;
  /** Entity body as stored: transfer coding removed, content coding kept. */
  body: Uint8Array;
  ip?: string;
  truncated?: 'length' | 'time';
  recordId?: string;
}

/**
 * The part of a response record that does not depend on the file it goes into: digests, and the
 * HTTP head and body compressed once (prepareResponse). Only WARC-Warcinfo-ID is file-specific.
 */
export interface PreparedResponse {
  readonly recordId: string;
  readonly payloadDigest: string;
  readonly payloadSha1Hex: string;
  /** WARC headers that go before WARC-IP-Address / WARC-Warcinfo-ID, and those after. */
  readonly warcHeadersBefore: ReadonlyArray<[string, string]>;
  readonly warcHeadersAfter: ReadonlyArray<[string, string]>;
  readonly ip: string | undefined;
  /** Content-Length of the record: HTTP head + body. */
  readonly contentLength: number;
  /** HTTP head, body and the closing CRLFCRLF, uncompressed (for the gzip CRC; the body is not copied). */
  readonly tail: readonly Uint8Array[];
  /** Raw deflate segments of `tail`, each ending on a sync flush but the last (the final block). */
  readonly deflated: readonly Buffer[];
  readonly gzipLevel: number;
}

/** Renamed so readers do not de-chunk a body we store de-chunked (Common Crawl uses the same name). */
export const RENAMED_TRANSFER_ENCODING = 'X-Crawler-Transfer-Encoding';

const WARC_VERSION = 'WARC/1.1';
const CRLF = '\r\n';
export const RECORD_END = Buffer.from('\r\n\r\n', 'latin1');
const TOKEN_CHARS = /[^!#$%&'*+\-.^_`|~0-9A-Za-z]/g;
export const RECORD_ID = /^<[^<>\s]+>$/;
const CONTROL_RUNS = /[\r\n\0]+/g;

/**
 * Everything of a response record that does not depend on its file, with the body hashed and
 * compressed once. Add it with WarcFileBuilder.addResponse. The body is referenced, not copied: keep
 * it unchanged until the record is added.
 */
export function prepareResponse(
  input: WarcResponseInput,
  options: { gzipLevel?: number } = {},
): PreparedResponse {
  if (!Number.isInteger(input.status) || input.status < 100 || input.status > 999) {
    throw new RangeError(`HTTP status must be a 3-digit integer, got ${input.status}`);
  }
  const gzipLevel = options.gzipLevel ?? zlibConstants.Z_DEFAULT_COMPRESSION;
  const recordId = input.recordId === undefined ? newRecordId() : checkRecordId(input.recordId);
  const head = encodeHttpHead(statusLineOf(input), httpHeadersOf(input.headers));
  const payloadSha1 = createHash('sha1').update(input.body).digest();
  const payloadDigest = formatSha1(payloadSha1);
  const before: Array<[string, string]> = [
    ['WARC-Type', 'response'],
    ['WARC-Record-ID', recordId],
    ['WARC-Date', warcDate(input.date)],
    ['WARC-Target-URI', sanitizeUri(input.targetUri)],
  ];
  const after: Array<[string, string]> = [];
  if (input.truncated) after.push(['WARC-Truncated', input.truncated]);
  after.push(
    ['Content-Type', 'application/http; msgtype=response'],
    ['WARC-Payload-Digest', payloadDigest],
    ['WARC-Block-Digest', sha1Of([head, input.body])],
  );
  // Compressed in segments (no copy of the body into one record buffer): head and body each end on
  // a sync flush, the closing CRLFCRLF ends the deflate stream.
  const sync = { level: gzipLevel, finishFlush: zlibConstants.Z_SYNC_FLUSH };
  const deflated = [
    deflateRawSync(head, sync),
    deflateRawSync(input.body, sync),
    deflateRawSync(RECORD_END, { level: gzipLevel }),
  ];
  return {
    recordId,
    payloadDigest,
    payloadSha1Hex: payloadSha1.toString('hex'),
    warcHeadersBefore: before,
    warcHeadersAfter: after,
    ip: input.ip,
    contentLength: head.byteLength + input.body.byteLength,
    tail: [head, input.body, RECORD_END],
    deflated,
    gzipLevel,
  };
}

export function statusLineOf(
  response: Pick<WarcResponseInput, 'httpVersion' | 'status' | 'statusText'>,
): string {
  const version = sanitizeValue(response.httpVersion).replace(/^HTTP\//i, '');
  return `HTTP/${version} ${response.status} ${sanitizeValue(response.statusText)}`;
}

/** Headers as received, but Transfer-Encoding renamed: the body is stored de-chunked. */
export function httpHeadersOf(headers: ReadonlyArray<[string, string]>): Array<[string, string]> {
  return headers.map(([name, value]): [string, string] =>
    name.trim().toLowerCase() === 'transfer-encoding' ? [RENAMED_TRANSFER_ENCODING, value] : [name, value],
  );
}

export function newRecordId(): string {
  return `<urn:uuid:${randomUUID()}>`;
}

export function checkRecordId(id: string): string {
  if (!RECORD_ID.test(id)) throw new RangeError(`WARC record id must look like <urn:uuid:…>, got ${id}`);
  return id;
}

/** `WARC/1.1` CRLF, the headers, Content-Length, CRLF. */
export function encodeWarcHead(headers: Array<[string, string]>, blockLength: number): Buffer {
  let text = `${WARC_VERSION}${CRLF}`;
  for (const [name, value] of headers) text += `${name}: ${value}${CRLF}`;
  text += `Content-Length: ${blockLength}${CRLF}${CRLF}`;
  return Buffer.from(text, 'utf8');
}

export function sha1Of(parts: Uint8Array[]): string {
  const hash = createHash('sha1');
  for (const part of parts) hash.update(part);
  return formatSha1(hash.digest());
}

/** WARC 1.1 date: UTC, ISO-8601, milliseconds. Throws RangeError on an invalid Date. */
export function warcDate(date: Date): string {
  return date.toISOString();
}

/** A header value that cannot break a header line: CR/LF/NUL runs become one space, ends trimmed. */
export function sanitizeValue(value: string): string {
  return value.replace(CONTROL_RUNS, ' ').trim();
}

/** A field name reduced to RFC 9110 token characters ('' when nothing is left). */
export function sanitizeName(name: string): string {
  return name.replace(TOKEN_CHARS, '');
}

/** A URI with no whitespace or control characters (those are percent-encoded as UTF-8). */
export function sanitizeUri(uri: string): string {
  return uri.trim().replace(/[\s\p{Cc}]/gu, (char) => encodeURIComponent(char));
}

/** `start-line CRLF *(field-line CRLF) CRLF`, each line as latin1 when it fits, else UTF-8. */
export function encodeHttpHead(startLine: string, headers: Array<[string, string]>): Buffer {
  const lines = [sanitizeValue(startLine)];
  for (const [rawName, rawValue] of headers) {
    const name = sanitizeName(rawName);
    if (name !== '') lines.push(`${name}: ${sanitizeValue(rawValue)}`);
  }
  const parts = lines.map((line) => Buffer.from(`${line}${CRLF}`, isByteString(line) ? 'latin1' : 'utf8'));
  parts.push(Buffer.from(CRLF, 'latin1'));
  return Buffer.concat(parts);
}

function isByteString(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0xff) return false;
  return true;
}

/** application/warc-fields: `name: value CRLF` per field, UTF-8. */
export function encodeWarcFields(fields: Array<[string, string]>): Buffer {
  let text = '';
  for (const [rawName, rawValue] of fields) {
    const name = sanitizeName(rawName);
    if (name !== '') text += `${name}: ${sanitizeValue(rawValue)}${CRLF}`;
  }
  return Buffer.from(text, 'utf8');
}
