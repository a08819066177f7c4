/**
 * WARC 1.1 writer for the Common Crawl layout: one gzip file per fetch invocation, one gzip member
 * per record, so any record can be read alone with a ranged GET of `{offset, length}`.
 *
 * Decisions:
 * - Records are `WARC/1.1`; WARC-Date is UTC ISO-8601 with milliseconds (WARC 1.1 allows
 *   sub-second precision), e.g. `2024-05-01T12:00:00.123Z`.
 * - WARC-Record-ID is `<urn:uuid:…>` (random v4 UUID).
 * - WARC-Block-Digest on every record, WARC-Payload-Digest on responses (and on requests that carry a
 *   body): `sha1:` + base32, see warc-digest.ts.
 * - The response body we store is the entity body with Transfer-Encoding removed (Content-Encoding
 *   kept). A `Transfer-Encoding` header left as-is would make readers de-chunk a body that is not
 *   chunked, so it is renamed to `X-Crawler-Transfer-Encoding` (the name Common Crawl uses). Every
 *   other header, Content-Length included, is kept as received — also when the body was truncated;
 *   WARC-Truncated then says why.
 * - Header values never break the format: every run of CR, LF and NUL in a value becomes one space
 *   (we strip rather than fold: obs-fold is deprecated by RFC 9112 §5.2 and many readers mishandle
 *   it); characters that are not allowed in a field name are removed from the name, and a header whose
 *   name ends up empty is dropped. WARC-Target-URI additionally has whitespace and control
 *   characters percent-encoded, since a URI may contain none.
 * - HTTP header strings are ByteStrings (as undici and fetch hand them over: one character per byte),
 *   so a line whose characters are all ≤ U+00FF is written as latin1 and the stored bytes equal the
 *   wire bytes; a line with a wider character is written as UTF-8. WARC headers and warc-fields are
 *   UTF-8.
 * - An invalid WARC-IP-Address (not an IPv4/IPv6 literal) is left out rather than written.
 * - Pass `ip` to addRequest as well as addResponse: `warcio test` expects WARC-IP-Address on http(s)
 *   requests too. Add the warcinfo first; later records carry its id as WARC-Warcinfo-ID.
 */
import { createHash, randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { gzipSync, constants as zlibConstants } from 'node:zlib';
import { formatSha1 } from './warc-digest.ts';

export interface WarcRecordRef {
  /** `<urn:uuid:…>`, as written in WARC-Record-ID. */
  recordId: string;
  /** Byte offset of the record's gzip member within the file. */
  offset: number;
  /** Byte length of the record's gzip member. */
  length: number;
}

export interface WarcResponseRef extends WarcRecordRef {
  /** WARC-Payload-Digest of the stored body: `sha1:BASE32`. */
  payloadDigest: string;
  /** The same SHA-1 in lowercase hex (the result record's `sha1`). */
  payloadSha1Hex: string;
}

export interface WarcRequestInput {
  targetUri: string;
  date: Date;
  /** e.g. `GET /path HTTP/1.1` */
  requestLine: string;
  headers: Array<[string, string]>;
  body?: Uint8Array;
  ip?: string;
  /** Record id of the response this request belongs to. */
  concurrentTo?: string;
  /** Use this record id (from `newRecordId()`), e.g. to write the request before its response. */
  recordId?: string;
}

export interface WarcResponseInput {
  targetUri: string;
  date: Date;
  /** `1.1`, `1.0`, `2`… (without `HTTP/`). */
  httpVersion: string;
  status: number;
  statusText: string;
  /** Headers as received. A Transfer-Encoding header is renamed, see above. */
  headers: Array<[string, string]>;
  /** Entity body as stored: transfer coding removed, content coding kept. */
  body: Uint8Array;
  ip?: string;
  truncated?: 'length' | 'time';
  recordId?: string;
}

export interface WarcMetadataInput {
  targetUri: string;
  date: Date;
  /** Record id of the response this metadata describes. */
  concurrentTo: string;
  fields: Array<[string, string]>;
  recordId?: string;
}

export interface WarcFileBuilderOptions {
  /** Goes in the warcinfo record's WARC-Filename. */
  filename: string;
  /** zlib level for each member; default zlib's default (6). */
  gzipLevel?: number;
}

/** Renamed so readers do not de-chunk a body we store de-chunked (Common Crawl uses the same name). */
export const RENAMED_TRANSFER_ENCODING = 'X-Crawler-Transfer-Encoding';

const WARC_VERSION = 'WARC/1.1';
const CRLF = '\r\n';
const RECORD_END = Buffer.from('\r\n\r\n', 'latin1');
const EMPTY = new Uint8Array(0);
const TOKEN_CHARS = /[^!#$%&'*+\-.^_`|~0-9A-Za-z]/g;
const RECORD_ID = /^<[^<>\s]+>$/;
const CONTROL_RUNS = /[\r\n\0]+/g;

/** Accumulates records in memory (each gzipped once, as it is added) and returns the file bytes. */
export class WarcFileBuilder {
  readonly filename: string;
  readonly #gzipLevel: number;
  readonly #members: Buffer[] = [];
  #byteLength = 0;
  #warcinfoId: string | undefined;

  constructor(options: WarcFileBuilderOptions) {
    this.filename = sanitizeValue(options.filename);
    this.#gzipLevel = options.gzipLevel ?? zlibConstants.Z_DEFAULT_COMPRESSION;
  }

  /** A fresh `<urn:uuid:…>`, for callers that need an id before adding its record. */
  newRecordId(): string {
    return `<urn:uuid:${randomUUID()}>`;
  }

  /** Size of the file so far, in bytes (the next record's offset). */
  get byteLength(): number {
    return this.#byteLength;
  }

  get recordCount(): number {
    return this.#members.length;
  }

  /** Id of the latest warcinfo record; later records carry it as WARC-Warcinfo-ID. */
  get warcinfoId(): string | undefined {
    return this.#warcinfoId;
  }

  /**
   * Adds a warcinfo record (application/warc-fields). `format` and `conformsTo` default to WARC 1.1;
   * other fields (software, operator, robots, isPartOf, http-header-user-agent…) come from the caller.
   * Records added afterwards link to it with WARC-Warcinfo-ID; add it first.
   */
  addWarcinfo(fields: Record<string, string>, date: Date = new Date()): WarcRecordRef {
    const defaults: Array<[string, string]> = [
      ['format', 'WARC File Format 1.1'],
      ['conformsTo', 'https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/'],
    ];
    const block = encodeWarcFields([
      ...defaults.filter(([name]) => !Object.hasOwn(fields, name)),
      ...Object.entries(fields),
    ]);
    const recordId = this.newRecordId();
    const ref = this.#append(
      [
        ['WARC-Type', 'warcinfo'],
        ['WARC-Record-ID', recordId],
        ['WARC-Date', warcDate(date)],
        ['WARC-Filename', this.filename],
        ['Content-Type', 'application/warc-fields'],
        ['WARC-Block-Digest', sha1Of([block])],
      ],
      [block],
    );
    this.#warcinfoId = recordId;
    return ref;
  }

  addRequest(input: WarcRequestInput): WarcRecordRef {
    const head = encodeHttpHead(input.requestLine, input.headers);
    const body = input.body ?? EMPTY;
    const headers: Array<[string, string]> = [
      ['WARC-Type', 'request'],
      ['WARC-Record-ID', this.#recordId(input.recordId)],
      ['WARC-Date', warcDate(input.date)],
      ['WARC-Target-URI', sanitizeUri(input.targetUri)],
      ...this.#common(input.ip, input.concurrentTo),
      ['Content-Type', 'application/http; msgtype=request'],
    ];
    if (body.byteLength > 0) headers.push(['WARC-Payload-Digest', sha1Of([body])]);
    headers.push(['WARC-Block-Digest', sha1Of([head, body])]);
    return this.#append(headers, [head, body]);
  }

  addResponse(input: WarcResponseInput): WarcResponseRef {
    if (!Number.isInteger(input.status) || input.status < 100 || input.status > 999) {
      throw new RangeError(`HTTP status must be a 3-digit integer, got ${input.status}`);
    }
    const version = sanitizeValue(input.httpVersion).replace(/^HTTP\//i, '');
    const statusLine = `HTTP/${version} ${input.status} ${sanitizeValue(input.statusText)}`;
    const headers = input.headers.map(([name, value]): [string, string] =>
      name.trim().toLowerCase() === 'transfer-encoding' ? [RENAMED_TRANSFER_ENCODING, value] : [name, value],
    );
    const head = encodeHttpHead(statusLine, headers);
    const payloadSha1 = createHash('sha1').update(input.body).digest();
    const payloadDigest = formatSha1(payloadSha1);
    const warcHeaders: Array<[string, string]> = [
      ['WARC-Type', 'response'],
      ['WARC-Record-ID', this.#recordId(input.recordId)],
      ['WARC-Date', warcDate(input.date)],
      ['WARC-Target-URI', sanitizeUri(input.targetUri)],
      ...this.#common(input.ip, undefined),
    ];
    if (input.truncated) warcHeaders.push(['WARC-Truncated', input.truncated]);
    warcHeaders.push(
      ['Content-Type', 'application/http; msgtype=response'],
      ['WARC-Payload-Digest', payloadDigest],
      ['WARC-Block-Digest', sha1Of([head, input.body])],
    );
    const ref = this.#append(warcHeaders, [head, input.body]);
    return { ...ref, payloadDigest, payloadSha1Hex: payloadSha1.toString('hex') };
  }

  /** Adds a metadata record (application/warc-fields) about the response `concurrentTo`. */
  addMetadata(input: WarcMetadataInput): WarcRecordRef {
    const block = encodeWarcFields(input.fields);
    return this.#append(
      [
        ['WARC-Type', 'metadata'],
        ['WARC-Record-ID', this.#recordId(input.recordId)],
        ['WARC-Date', warcDate(input.date)],
        ['WARC-Target-URI', sanitizeUri(input.targetUri)],
        ...this.#common(undefined, input.concurrentTo),
        ['Content-Type', 'application/warc-fields'],
        ['WARC-Block-Digest', sha1Of([block])],
      ],
      [block],
    );
  }

  /** The whole file: the gzip members, concatenated in the order the records were added. */
  toBytes(): Uint8Array {
    return Buffer.concat(this.#members, this.#byteLength);
  }

  #recordId(given: string | undefined): string {
    if (given === undefined) return this.newRecordId();
    if (!RECORD_ID.test(given))
      throw new RangeError(`WARC record id must look like <urn:uuid:…>, got ${given}`);
    return given;
  }

  #common(ip: string | undefined, concurrentTo: string | undefined): Array<[string, string]> {
    const headers: Array<[string, string]> = [];
    if (ip !== undefined && isIP(ip) !== 0) headers.push(['WARC-IP-Address', ip]);
    if (this.#warcinfoId) headers.push(['WARC-Warcinfo-ID', this.#warcinfoId]);
    if (concurrentTo !== undefined) {
      if (!RECORD_ID.test(concurrentTo)) {
        throw new RangeError(`WARC-Concurrent-To must be a record id like <urn:uuid:…>, got ${concurrentTo}`);
      }
      headers.push(['WARC-Concurrent-To', concurrentTo]);
    }
    return headers;
  }

  /** Serializes one record (headers + block + CRLFCRLF) into its own gzip member. */
  #append(headers: Array<[string, string]>, block: Uint8Array[]): WarcRecordRef {
    const blockLength = block.reduce((sum, part) => sum + part.byteLength, 0);
    let text = `${WARC_VERSION}${CRLF}`;
    for (const [name, value] of headers) text += `${name}: ${value}${CRLF}`;
    text += `Content-Length: ${blockLength}${CRLF}${CRLF}`;
    const warcHead = Buffer.from(text, 'utf8');
    const record = Buffer.concat([warcHead, ...block, RECORD_END], warcHead.byteLength + blockLength + 4);
    const member = gzipSync(record, { level: this.#gzipLevel });
    const ref: WarcRecordRef = {
      recordId: headers.find(([name]) => name === 'WARC-Record-ID')![1],
      offset: this.#byteLength,
      length: member.byteLength,
    };
    this.#members.push(member);
    this.#byteLength += member.byteLength;
    return ref;
  }
}

function sha1Of(parts: Uint8Array[]): string {
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
function sanitizeUri(uri: string): string {
  return uri.trim().replace(/[\s\p{Cc}]/gu, (char) => encodeURIComponent(char));
}

/** `start-line CRLF *(field-line CRLF) CRLF`, each line as latin1 when it fits, else UTF-8. */
function encodeHttpHead(startLine: string, headers: Array<[string, string]>): Buffer {
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
function encodeWarcFields(fields: Array<[string, string]>): Buffer {
  let text = '';
  for (const [rawName, rawValue] of fields) {
    const name = sanitizeName(rawName);
    if (name !== '') text += `${name}: ${sanitizeValue(rawValue)}${CRLF}`;
  }
  return Buffer.from(text, 'utf8');
}
