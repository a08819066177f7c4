/**
 * WARC reading: one record from a ranged GET (`readWarcRecord`), the HTTP message inside a
 * request/response block (`parseHttpMessage`), and every record of a whole file with its offset
 * (`iterateWarcFile`). Pure: no I/O.
 *
 * Lenient where it costs nothing (LF-only line ends, header continuation lines, WARC/1.0 files, extra
 * blank lines between records), strict where data would be wrong: a missing or non-numeric
 * Content-Length, a block shorter than its Content-Length, a bad gzip CRC or a record split across
 * gzip members all throw WarcFormatError.
 */
import { crc32, gunzipSync, inflateRawSync } from 'node:zlib';
import { isGzip } from '../base/index.ts';

export class WarcFormatError extends Error {
  readonly code = 'warc_format';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WarcFormatError';
  }
}

export interface WarcRecord {
  /** The first line, e.g. `WARC/1.1`. */
  version: string;
  /** WARC header fields in file order, names as written. */
  headers: Array<[string, string]>;
  /** First value of a header, by case-insensitive name. */
  header(name: string): string | undefined;
  /** The record block (Content-Length bytes). */
  block: Uint8Array;
}

export interface HttpMessage {
  /** `HTTP/1.1 200 OK` or `GET / HTTP/1.1`. */
  startLine: string;
  /** Header fields in order; values decoded as latin1, so each character is one byte as received. */
  headers: Array<[string, string]>;
  header(name: string): string | undefined;
  /** Everything after the blank line that ends the header section. */
  body: Uint8Array;
}

export interface WarcFileEntry {
  /** Offset of the record's gzip member (or of the record itself in an uncompressed file). */
  offset: number;
  /** Length of that member (or of the record, its trailing blank lines included). */
  length: number;
  record: WarcRecord;
}

/**
 * Reads the one record in `member`: a gzip member as returned by a ranged GET of a record's
 * `{offset, length}`, or an uncompressed record.
 */
export function readWarcRecord(member: Uint8Array): WarcRecord {
  let data: Uint8Array = member;
  if (isGzip(member)) {
    try {
      data = gunzipSync(member);
    } catch (error) {
      throw new WarcFormatError(`cannot gunzip WARC record: ${(error as Error).message}`, { cause: error });
    }
  }
  return parseRecordAt(data, 0).record;
}

/** Splits an HTTP/1.x request or response message (a WARC request/response block). */
export function parseHttpMessage(block: Uint8Array): HttpMessage {
  const head = readHeaderSection(block, 0, 'latin1');
  if (!head) throw new WarcFormatError('HTTP message has no end of header section (CRLF CRLF)');
  const headers = head.fields;
  return {
    startLine: head.firstLine,
    headers,
    header: (name) => findHeader(headers, name),
    body: block.subarray(head.end),
  };
}

/**
 * Every record of a WARC file, with the offset and length a ranged GET would use. A gzip file is read
 * member by member (a member may hold several whole records; a record may not span members).
 */
export function* iterateWarcFile(bytes: Uint8Array): Generator<WarcFileEntry> {
  if (isGzip(bytes)) {
    let offset = 0;
    while (offset < bytes.length) {
      const { data, end } = readGzipMember(bytes, offset);
      let position = 0;
      while (position < data.length) {
        const { record, end: recordEnd } = parseRecordAt(data, position);
        yield { offset, length: end - offset, record };
        position = recordEnd;
      }
      offset = end;
    }
    return;
  }
  let offset = skipNewlines(bytes, 0);
  while (offset < bytes.length) {
    const { record, end } = parseRecordAt(bytes, offset);
    yield { offset, length: end - offset, record };
    offset = end;
  }
}

function findHeader(headers: Array<[string, string]>, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [key, value] of headers) if (key.toLowerCase() === lower) return value;
  return undefined;
}

/** One record starting at `start`; `end` is past its block and the blank lines that follow it. */
function parseRecordAt(data: Uint8Array, start: number): { record: WarcRecord; end: number } {
  const head = readHeaderSection(data, start, 'utf8');
  if (!head) throw new WarcFormatError(`WARC record at byte ${start} has no end of header section`);
  if (!/^WARC\/\d+\.\d+$/.test(head.firstLine)) {
    throw new WarcFormatError(
      `not a WARC record at byte ${start}: ${JSON.stringify(head.firstLine.slice(0, 40))}`,
    );
  }
  const headers = head.fields;
  const lengthText = findHeader(headers, 'Content-Length');
  if (lengthText === undefined || !/^\d+$/.test(lengthText)) {
    throw new WarcFormatError(`WARC record at byte ${start} has no valid Content-Length: ${lengthText}`);
  }
  const blockEnd = head.end + Number(lengthText);
  if (blockEnd > data.length) {
    throw new WarcFormatError(
      `WARC record at byte ${start} is truncated: Content-Length ${lengthText}, ${data.length - head.end} bytes present`,
    );
  }
  const block = data.subarray(head.end, blockEnd);
  return {
    record: { version: head.firstLine, headers, header: (name) => findHeader(headers, name), block },
    end: skipNewlines(data, blockEnd),
  };
}

function skipNewlines(data: Uint8Array, position: number): number {
  let at = position;
  while (at < data.length && (data[at] === 0x0d || data[at] === 0x0a)) at++;
  return at;
}

/**
 * Start line and header fields from `start` up to the first empty line (CRLF or bare LF line ends).
 * Continuation lines (leading SP/HT) are joined to the previous value with one space. Undefined when
 * there is no empty line.
 */
function readHeaderSection(
  data: Uint8Array,
  start: number,
  encoding: 'utf8' | 'latin1',
): { firstLine: string; fields: Array<[string, string]>; end: number } | undefined {
  const lines: string[] = [];
  let position = start;
  for (;;) {
    const newline = data.indexOf(0x0a, position);
    if (newline < 0) return undefined;
    const lineEnd = newline > position && data[newline - 1] === 0x0d ? newline - 1 : newline;
    if (lineEnd === position && lines.length > 0) {
      position = newline + 1;
      break;
    }
    lines.push(Buffer.from(data.buffer, data.byteOffset + position, lineEnd - position).toString(encoding));
    position = newline + 1;
  }
  const [firstLine = '', ...rest] = lines;
  const fields: Array<[string, string]> = [];
  for (const line of rest) {
    const last = fields.at(-1);
    if ((line.startsWith(' ') || line.startsWith('\t')) && last) {
      last[1] = `${last[1]} ${line.trim()}`.trim();
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw new WarcFormatError(`malformed header line: ${JSON.stringify(line.slice(0, 80))}`);
    fields.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return { firstLine, fields, end: position };
}

/** Decompresses the gzip member at `offset` (RFC 1952) and returns where it ends. */
function readGzipMember(bytes: Uint8Array, offset: number): { data: Buffer; end: number } {
  const fail = (why: string, cause?: unknown): never => {
    throw new WarcFormatError(`bad gzip member at byte ${offset}: ${why}`, cause ? { cause } : undefined);
  };
  if (bytes[offset] !== 0x1f || bytes[offset + 1] !== 0x8b || bytes[offset + 2] !== 8) {
    fail('not a gzip member (a file must be all gzip members or none)');
  }
  const flags = bytes[offset + 3] ?? 0;
  let position = offset + 10;
  if (flags & 4) position += 2 + (bytes[position] ?? 0) + ((bytes[position + 1] ?? 0) << 8);
  for (const flag of [8, 16]) {
    if (flags & flag) {
      const zero = bytes.indexOf(0, position);
      if (zero < 0) fail('unterminated header field');
      position = zero + 1;
    }
  }
  if (flags & 2) position += 2;
  if (position > bytes.length) fail('truncated header');
  let data: Buffer;
  let consumed: number;
  try {
    const result = inflateRawSync(bytes.subarray(position), { info: true }) as unknown as {
      buffer: Buffer;
      engine: { bytesWritten: number };
    };
    data = result.buffer;
    consumed = result.engine.bytesWritten;
  } catch (error) {
    return fail((error as Error).message, error);
  }
  const trailer = position + consumed;
  if (trailer + 8 > bytes.length) fail('truncated trailer');
  const view = new DataView(bytes.buffer, bytes.byteOffset + trailer, 8);
  if (view.getUint32(0, true) !== crc32(data)) fail('CRC32 mismatch');
  if (view.getUint32(4, true) !== data.length % 2 ** 32) fail('ISIZE mismatch');
  return { data, end: trailer + 8 };
}
