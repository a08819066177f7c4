/**
 * WARC 1.1 writer for the Common Crawl layout: gzip files of one gzip member per record, so any
 * record can be read alone with a ranged GET of `{offset, length}`.
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
 * - A response member is built from raw deflate segments (WARC head, HTTP head, body, closing CRLFs;
 *   each but the last ending on a sync flush) under one gzip header and trailer: the body
 *   is compressed without being copied into a record buffer, and only once even when the record must
 *   move to another file (prepareResponse, addPreparedResponse), since only its WARC head depends on
 *   the file (WARC-Warcinfo-ID). It is still one gzip member; the segments cost a few bytes.
 * - Pass `ip` to addRequest as well as addResponse: `warcio test` expects WARC-IP-Address on http(s)
 *   requests too. Add the warcinfo first; later records carry its id as WARC-Warcinfo-ID.
 */
import { isIP } from 'node:net';
import { crc32, deflateRawSync, gzipSync, constants as zlibConstants } from 'node:zlib';
import {
  checkRecordId,
  encodeHttpHead,
  encodeWarcFields,
  encodeWarcHead,
  httpHeadersOf,
  newRecordId,
  type PreparedResponse,
  prepareResponse,
  RECORD_END,
  RECORD_ID,
  sanitizeUri,
  sanitizeValue,
  sha1Of,
  statusLineOf,
  type WarcResponseInput,
  warcDate,
} from './warc-record.ts';

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

export interface WarcConversionInput {
  targetUri: string;
  date: Date;
  /** Record id of the response the content was converted from (WARC-Refers-To). */
  refersTo: string;
  /** `text/markdown; charset=utf-8`, `text/plain; charset=utf-8`. */
  contentType: string;
  block: Uint8Array;
}

/** The two WARC 1.1 revisit profiles a re-crawl writes (WARC 1.1 §6.7.2, §6.7.3). */
export const REVISIT_PROFILES = {
  'server-not-modified': 'http://netpreserve.org/warc/1.1/revisit/server-not-modified',
  'identical-payload-digest': 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
} as const;
export type RevisitProfile = keyof typeof REVISIT_PROFILES;

/**
 * A revisit: this capture confirms an earlier one (`refersTo*`) instead of storing its payload again.
 * `server-not-modified` (the server answered 304) has no block, as Heritrix writes it: a stored 304
 * would replay in pywb as a bodiless 304 (its 3xx shortcut). `identical-payload-digest` keeps the
 * response's status line and headers as a block truncated for length (§6.7.2).
 */
export interface WarcRevisitInput {
  profile: RevisitProfile;
  targetUri: string;
  date: Date;
  /** WARC-Target-URI and WARC-Date of the capture this one confirms: pywb finds it by these. */
  refersToTargetUri: string;
  refersToDate: Date;
  /** WARC-Payload-Digest of that capture's payload (`sha1:BASE32`). */
  payloadDigest: string;
  /** identical-payload-digest: the response head kept as the block. */
  response?: Pick<WarcResponseInput, 'httpVersion' | 'status' | 'statusText' | 'headers'>;
  ip?: string;
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

const EMPTY = new Uint8Array(0);
/** gzip member header: deflate, no flags, mtime 0, OS Unix (what zlib writes on Linux). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03]);

/** Accumulates records in memory (each gzipped once, as it is added) and returns the file bytes. */
export class WarcFileBuilder {
  readonly filename: string;
  readonly #gzipLevel: number;
  /** One entry per record: the parts of its gzip member. */
  readonly #members: Buffer[][] = [];
  #byteLength = 0;
  #warcinfoId: string | undefined;
  /** Index of the record that set #warcinfoId. */
  #warcinfoIndex = -1;

  constructor(options: WarcFileBuilderOptions) {
    this.filename = sanitizeValue(options.filename);
    this.#gzipLevel = options.gzipLevel ?? zlibConstants.Z_DEFAULT_COMPRESSION;
  }

  /** A fresh `<urn:uuid:…>`, for callers that need an id before adding its record. */
  newRecordId(): string {
    return newRecordId();
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
    this.#warcinfoIndex = this.#members.length - 1;
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
    return this.addPreparedResponse(prepareResponse(input, { gzipLevel: this.#gzipLevel }));
  }

  /**
   * Adds a response record prepared with prepareResponse: compressed once, so a caller can add it to
   * another file after a rollback without compressing the body again.
   */
  addPreparedResponse(prepared: PreparedResponse): WarcResponseRef {
    const warcHead = encodeWarcHead(
      [...prepared.warcHeadersBefore, ...this.#common(prepared.ip, undefined), ...prepared.warcHeadersAfter],
      prepared.contentLength,
    );
    // One gzip member from deflate segments: the WARC head (the only file-specific part) compressed
    // here, the rest as prepared. Each segment but the last ends on a sync flush, so together they
    // are one valid deflate stream; the trailer's CRC and size cover the whole record.
    const head = deflateRawSync(warcHead, {
      level: prepared.gzipLevel,
      finishFlush: zlibConstants.Z_SYNC_FLUSH,
    });
    let crc = crc32(warcHead);
    let size = warcHead.byteLength;
    for (const part of prepared.tail) {
      crc = crc32(part, crc);
      size += part.byteLength;
    }
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(crc >>> 0, 0);
    trailer.writeUInt32LE(size % 2 ** 32, 4);
    const ref = this.#push(prepared.recordId, [GZIP_HEADER, head, ...prepared.deflated, trailer]);
    return { ...ref, payloadDigest: prepared.payloadDigest, payloadSha1Hex: prepared.payloadSha1Hex };
  }

  /** Adds a revisit record (WarcRevisitInput says which profile keeps what). */
  addRevisit(input: WarcRevisitInput): WarcRecordRef {
    const headers: Array<[string, string]> = [
      ['WARC-Type', 'revisit'],
      ['WARC-Record-ID', this.#recordId(input.recordId)],
      ['WARC-Date', warcDate(input.date)],
      ['WARC-Target-URI', sanitizeUri(input.targetUri)],
      ...this.#common(input.ip, undefined),
      ['WARC-Profile', REVISIT_PROFILES[input.profile]],
      ['WARC-Refers-To-Target-URI', sanitizeUri(input.refersToTargetUri)],
      ['WARC-Refers-To-Date', warcDate(input.refersToDate)],
      ['WARC-Payload-Digest', sanitizeValue(input.payloadDigest)],
      // Even on an empty block: `warcio test` requires it on every revisit, as warcio writes them.
      ['Content-Type', 'application/http; msgtype=response'],
    ];
    if (input.profile === 'server-not-modified' || input.response === undefined)
      return this.#append(headers, []);
    const head = encodeHttpHead(statusLineOf(input.response), httpHeadersOf(input.response.headers));
    headers.push(['WARC-Truncated', 'length'], ['WARC-Block-Digest', sha1Of([head])]);
    return this.#append(headers, [head]);
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

  /**
   * Adds a conversion record: content derived from the response `refersTo` (as Common Crawl's WET
   * files hold a page's text), here its Markdown or plain text.
   */
  addConversion(input: WarcConversionInput): WarcRecordRef {
    if (!RECORD_ID.test(input.refersTo)) {
      throw new RangeError(`WARC-Refers-To must be a record id like <urn:uuid:…>, got ${input.refersTo}`);
    }
    return this.#append(
      [
        ['WARC-Type', 'conversion'],
        ['WARC-Record-ID', newRecordId()],
        ['WARC-Date', warcDate(input.date)],
        ['WARC-Target-URI', sanitizeUri(input.targetUri)],
        ...this.#common(undefined, undefined),
        ['WARC-Refers-To', input.refersTo],
        ['Content-Type', sanitizeValue(input.contentType)],
        ['WARC-Block-Digest', sha1Of([input.block])],
      ],
      [input.block],
    );
  }

  /**
   * Drops every record after the first `recordCount` (e.g. a page that turned out not to fit the file).
   * The latest warcinfo record cannot be dropped: the records kept refer to it.
   */
  rollback(recordCount: number): void {
    if (!Number.isInteger(recordCount) || recordCount < 0 || recordCount > this.#members.length) {
      throw new RangeError(`rollback: recordCount must be 0..${this.#members.length}, got ${recordCount}`);
    }
    if (recordCount <= this.#warcinfoIndex) throw new RangeError('rollback would drop the warcinfo record');
    for (const parts of this.#members.splice(recordCount)) {
      for (const part of parts) this.#byteLength -= part.byteLength;
    }
  }

  /** The whole file: the gzip members, concatenated in the order the records were added. */
  toBytes(): Uint8Array {
    return Buffer.concat(this.#members.flat(), this.#byteLength);
  }

  #recordId(given: string | undefined): string {
    return given === undefined ? newRecordId() : checkRecordId(given);
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
    const warcHead = encodeWarcHead(headers, blockLength);
    const record = Buffer.concat([warcHead, ...block, RECORD_END], warcHead.byteLength + blockLength + 4);
    const member = gzipSync(record, { level: this.#gzipLevel });
    return this.#push(headers.find(([name]) => name === 'WARC-Record-ID')![1], [member]);
  }

  #push(recordId: string, parts: Buffer[]): WarcRecordRef {
    const length = parts.reduce((sum, part) => sum + part.byteLength, 0);
    const ref: WarcRecordRef = { recordId, offset: this.#byteLength, length };
    this.#members.push(parts);
    this.#byteLength += length;
    return ref;
  }
}
