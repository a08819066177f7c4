/**
 * A PDF's streams, checked in its raw bytes before pdf.js (which decodes without a size limit) reads
 * it: every `stream` … `endstream` segment's output is added up. Flate and LZW are decoded as pdf.js
 * decodes them, counted, not kept (a bomb costs its compressed size; node:zlib, stricter, may reject at
 * its first bytes a bomb pdf.js inflates); ASCII85 is decoded for the filter after it; after the
 * others FILTER_MAX_RATIO bounds the next. Image filters end the count (text extraction decodes no
 * image). BrotliDecode (PDF 2.0, unseen) and `/Encrypt` (pdf.js would decrypt, then decode) are
 * refused. A dictionary is read from the text since the previous `stream` keyword (any `stream` after
 * `>>` or first on its line, in another segment's data too, so a false one hides no real one): every
 * /Filter or /F list and /Length there, direct or referred to, is tried and the largest count kept.
 * Not covered: a JPEG as page content, a fake keyword in a string after a /Filter, a filter or length
 * in a compressed object stream.
 */
import { PDF_LIMITS } from '../base/index.ts';

const MiB = 1024 * 1024;

/** Bounds of the pre-scan. */
export const PDF_STREAM_LIMITS = {
  /** Decoded bytes of all streams together. */
  maxDecodedBytes: PDF_LIMITS.maxDecodedBytes,
  /** Distinct filter lists a segment's dictionary may name; more is refused. */
  maxFilterLists: 8,
  /** Stream data read, over the file's size: segments overlapping past it are refused. */
  maxOverlap: 2,
} as const;

/**
 * Output bytes per input byte at most, for a filter whose input is known only by its size: deflate
 * 258 per 2 bits, LZW 4,096 per 9-bit code, run length 128 per 2, ASCII85 4 per `z`, ASCIIHex 1.
 */
export const FILTER_MAX_RATIO = { flate: 1032, lzw: 3641, rl: 64, a85: 4, ahx: 1 } as const;

export type StreamScan = { ok: true; decodedBytes: number; streams: number } | { ok: false; reason: string };

const ENCRYPTED = 'the PDF is encrypted; its text is not extracted';
const OVERLAPPING = "the PDF's stream segments overlap past twice its size";

type Kind = keyof typeof FILTER_MAX_RATIO | 'brotli' | 'image';
const KINDS = new Map<string, Kind>();
for (const group of [
  'flate FlateDecode Fl|lzw LZWDecode LZW|rl RunLengthDecode RL|a85 ASCII85Decode A85|ahx ASCIIHexDecode AHx',
  'brotli BrotliDecode|image DCTDecode DCT JPXDecode JBIG2Decode CCITTFaxDecode CCF',
].flatMap((kinds) => kinds.split('|'))) {
  const [kind, ...names] = group.split(' ');
  for (const name of names) KINDS.set(name, kind as Kind);
}

// PDF white space (NUL and form feed too) and the characters of a token
const WS = '[\\0\\t\\n\\f\\r ]';
const REGULAR = '[^\\0\\t\\n\\f\\r ()<>[\\]{}/%]';
const isWs = (c: number) => c === 32 || c === 10 || c === 13 || c === 9 || c === 12 || c === 0;
const IS_REGULAR = new RegExp(`^${REGULAR}$`);
const KEY = new RegExp(`/(Filter|F|Length|Encrypt|EarlyChange)(?!${REGULAR})`, 'g');
// a name, a reference, a number, or an array of up to 128 characters
const VALUE = new RegExp(
  `${WS}*(?:/(${REGULAR}*)|(\\d+)${WS}+(\\d+)${WS}+R(?!${REGULAR})|([+-]?\\d+)|\\[([^\\]]{0,128})\\])`,
  'y',
);
const ITEM = new RegExp(`/(${REGULAR}*)|(\\d+)${WS}+(\\d+)${WS}+R(?!${REGULAR})`, 'g');
const HEADER = new RegExp(`(?<!\\d)(\\d{1,10})${WS}{1,64}(\\d{1,5})${WS}{1,64}obj(?!${REGULAR})`, 'g');
const ESCAPED_NAME = new RegExp(`/${REGULAR}*#${REGULAR}*`, 'g');

/** Checks every stream of `bytes`; `maxDecodedBytes` is their budget together. */
export function scanPdfStreams(
  bytes: Uint8Array,
  maxDecodedBytes: number = PDF_STREAM_LIMITS.maxDecodedBytes,
): StreamScan {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  const objects = objectIndex(text);
  const [nextEnd, nextEol] = [nextOf(text, /endstream/g), nextOf(text, /[\r\n]/g)];
  let [total, streams, read, from] = [0, 0, 0, 0];
  for (let k = text.indexOf('stream'); k >= 0; k = text.indexOf('stream', k + 6)) {
    if (!isKeyword(text, k, from)) continue;
    const dict = readDictionary(text.slice(from, k), objects);
    from = k + 6;
    if (dict.encrypted) return { ok: false, reason: ENCRYPTED };
    // the data starts after the line end that follows `stream`
    const eol = nextEol(k + 6);
    const start = eol < 0 ? text.length : text.startsWith('\r\n', eol) ? eol + 2 : eol + 1;
    const end = segmentEnd(text, start, nextEnd(start), dict.lengths);
    read += end - start;
    if (read > PDF_STREAM_LIMITS.maxOverlap * text.length) return { ok: false, reason: OVERLAPPING };
    const cost = segmentCost(bytes.subarray(start, end), dict, maxDecodedBytes - total);
    if (typeof cost === 'string') return { ok: false, reason: cost };
    total += cost;
    streams++;
    if (total > maxDecodedBytes) {
      return { ok: false, reason: `the PDF's streams decode past ${Math.round(maxDecodedBytes / MiB)} MiB` };
    }
  }
  if (readDictionary(text.slice(from), objects).encrypted) return { ok: false, reason: ENCRYPTED };
  return { ok: true, decodedBytes: total, streams };
}

/** The next match of `pattern` (global) at or after growing positions: a search is reused while ahead. */
function nextOf(text: string, pattern: RegExp): (at: number) => number {
  let [from, found] = [Number.POSITIVE_INFINITY, -1];
  return (at) => {
    if (at < from || (found >= 0 && found < at)) {
      pattern.lastIndex = from = at;
      found = pattern.exec(text)?.index ?? -1;
    }
    return found;
  };
}

/** Whether `stream` at `k` is a keyword: a whole token after `>>`, or first on its line (a comment above). */
function isKeyword(text: string, k: number, floor: number): boolean {
  if (IS_REGULAR.test(text[k + 6] ?? ' ')) return false;
  let j = k - 1;
  while (j >= floor && isWs(text.charCodeAt(j)) && text[j] !== '\n' && text[j] !== '\r') j--;
  return j < floor || text[j] === '\n' || text[j] === '\r' || (text[j] === '>' && text[j - 1] === '>');
}

/** A segment's end, as pdf.js: a /Length followed by `endstream`, else the first `endstream` (or none). */
function segmentEnd(text: string, start: number, first: number, lengths: number[]): number {
  let end = first < 0 ? text.length : first;
  for (const length of lengths) {
    const at = start + length;
    if (at <= end) continue;
    let p = at;
    while (p < at + 256 && isWs(text.charCodeAt(p))) p++;
    if (text.startsWith('endstream', p) && !IS_REGULAR.test(text[p + 9] ?? ' ')) end = at;
  }
  return end;
}

type Dictionary = { lists: string[][]; lengths: number[]; encrypted: boolean; earlyChange: number };

type Value = string | number;

/** The keys that matter in `region` and their values, references resolved. */
function readDictionary(region: string, objects: Objects): Dictionary {
  const dict: Dictionary = { lists: [], lengths: [], encrypted: false, earlyChange: 1 };
  // pdf.js decodes `#xx` in names: `/Fil#74er` is /Filter
  const text = region.includes('#') ? region.replace(ESCAPED_NAME, unescapeName) : region;
  for (const key of text.matchAll(KEY)) {
    const values = readValues(text, key.index + key[0].length, objects);
    if (key[1] === 'Filter' || key[1] === 'F') {
      for (const list of values) dict.lists.push(list.filter((v): v is string => typeof v === 'string'));
    } else if (key[1] === 'Length') {
      for (const [v] of values) if (typeof v === 'number' && v >= 0) dict.lengths.push(v);
    } else if (key[1] === 'Encrypt') dict.encrypted = true;
    else if (key[1] === 'EarlyChange' && values.some(([v]) => v === 0)) dict.earlyChange = 0;
  }
  return dict;
}

const unescapeName = (name: string) =>
  name.replace(/#([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/** The value at `at` as lists of items (an array, or one item); references followed one level only. */
function readValues(text: string, at: number, objects: Objects, depth = 0): Value[][] {
  VALUE.lastIndex = at;
  const m = VALUE.exec(text);
  if (m === null) return [];
  if (m[1] !== undefined) return [[m[1]]];
  if (m[4] !== undefined) return [[Number(m[4])]];
  const follow = (r: RegExpMatchArray) => (depth > 0 ? [] : objects(`${Number(r[2])} ${Number(r[3])}`, 0));
  if (m[2] !== undefined) return follow(m);
  const items = [...m[5]!.matchAll(ITEM)].flatMap((i) => (i[1] !== undefined ? [i[1]] : follow(i).flat()));
  return [items];
}

/** The values of object `ref` (`num gen`), from its last two `num gen obj` headers. */
type Objects = (ref: string, depth: number) => Value[][];

/** Objects by number, indexed on first use. */
function objectIndex(text: string): Objects {
  let headers: Map<string, number[]> | undefined;
  const values: Objects = (ref, depth) => {
    if (headers === undefined) {
      headers = new Map();
      for (const m of text.matchAll(HEADER)) {
        const list = headers.get(`${Number(m[1])} ${Number(m[2])}`) ?? [];
        if (list.push(m.index + m[0].length) > 2) list.shift();
        headers.set(`${Number(m[1])} ${Number(m[2])}`, list);
      }
    }
    return (headers.get(ref) ?? []).flatMap((at) => readValues(text, at, values, depth + 1));
  };
  return values;
}

/** What a segment's data decodes to: the most of its dictionary's filter lists, at least its size. */
function segmentCost(data: Uint8Array, dict: Dictionary, room: number): number | string {
  const lists = new Map(dict.lists.map((list) => [list.join(' '), list]));
  if (lists.size > PDF_STREAM_LIMITS.maxFilterLists) return "a PDF stream's filters are too many to try";
  const costs = [...lists.values()].map((list) => chainCost(data, list, dict.earlyChange, room));
  return costs.find((cost) => typeof cost === 'string') ?? Math.max(data.length, ...(costs as number[]));
}

/** The bytes a chain of filters makes of `data`: every filter's output added up. */
function chainCost(data: Uint8Array, names: string[], earlyChange: number, room: number): number | string {
  let input: Uint8Array | null = data;
  let [size, spent] = [data.length, 0];
  for (const kind of names.flatMap((name) => KINDS.get(name) ?? [])) {
    if (kind === 'image') break;
    if (kind === 'brotli') return 'a PDF stream uses BrotliDecode, which is not checked';
    const cap = Math.max(0, room - spent);
    if (input !== null && kind === 'a85') input = ascii85(input, cap);
    const count: number | string =
      input !== null && kind === 'a85'
        ? input.length
        : input !== null && kind === 'flate'
          ? inflate(input, cap)
          : input !== null && kind === 'lzw'
            ? lzw(input, cap, earlyChange)
            : size * FILTER_MAX_RATIO[kind];
    if (typeof count === 'string') return count;
    if (kind !== 'a85') input = null;
    spent += size = count;
    if (spent > room) return spent;
  }
  return Math.max(spent, data.length);
}

// the extra bits of deflate's length and distance codes, and the lengths' bases, as in pdf.js's
// tables (length codes 286 and 287 are 258; distance codes 30 and 31 read no bits)
const LENGTH_EXTRA = Array.from({ length: 31 }, (_, i) => (i < 8 || i > 27 ? 0 : (i - 4) >> 2));
const LENGTH_BASE: number[] = LENGTH_EXTRA.map((_, i) => (i > 27 ? 258 : 3));
for (let i = 1; i < 28; i++) LENGTH_BASE[i] = LENGTH_BASE[i - 1]! + (1 << LENGTH_EXTRA[i - 1]!);
const DISTANCE_EXTRA = Array.from({ length: 30 }, (_, i) => (i < 4 ? 0 : (i - 2) >> 1));
const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/** A canonical Huffman code (zlib's puff): codes per length, symbols in code order. */
type Code = { counts: Uint16Array; symbols: Uint16Array; longest: number };

/** The code of `lengths`; null when over-subscribed (pdf.js would overwrite codes; no encoder writes it). */
function huffman(lengths: ArrayLike<number>): Code | null {
  const counts = new Uint16Array(16);
  const [offsets, symbols] = [new Uint16Array(17), new Uint16Array(lengths.length)];
  for (let i = 0; i < lengths.length; i++) counts[lengths[i]!]!++;
  let [left, longest] = [1, 0];
  for (let len = 1; len < 16; len++) {
    left = 2 * left - counts[len]!;
    offsets[len + 1] = offsets[len]! + counts[len]!;
    if (counts[len]) longest = len;
  }
  for (let i = 0; i < lengths.length; i++) if (lengths[i]) symbols[offsets[lengths[i]!]!++] = i;
  return left < 0 ? null : { counts, symbols, longest };
}

// pdf.js's fixed table leaves distance codes 30 and 31 out, as zlib does
const FIXED_LENGTHS = Array.from({ length: 288 }, (_, i) => (i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8));
const FIXED = [huffman(FIXED_LENGTHS), huffman(new Array<number>(30).fill(5))];
const BAD = new Error('bad deflate data');

/** pdf.js's FlateStream's bit reader: bytes taken as needed, low bit first. */
type Bits = { data: Uint8Array; pos: number; buf: number; bits: number };

function fill(s: Bits, n: number): boolean {
  for (; s.bits < n; s.bits += 8) {
    if (s.pos >= s.data.length) return false;
    s.buf |= s.data[s.pos++]! << s.bits;
  }
  return true;
}

function take(s: Bits, n: number): number {
  if (!fill(s, n)) throw BAD;
  const v = s.buf & ((1 << n) - 1);
  s.buf >>>= n;
  s.bits -= n;
  return v;
}

/** A symbol of `code`, read as pdf.js does: its lookahead up to the longest code, then the code's own bits. */
function symbol(s: Bits, code: Code): number {
  fill(s, code.longest);
  const longest = Math.min(code.longest, s.bits);
  for (let len = 1, value = 0, first = 0, index = 0, buf = s.buf; len <= longest; len++, buf >>>= 1) {
    value |= buf & 1;
    const count = code.counts[len]!;
    if (value - count < first) {
      s.buf >>>= len;
      s.bits -= len;
      return code.symbols[index + value - first]!;
    }
    index += count;
    first = (first + count) << 1;
    value <<= 1;
  }
  throw BAD;
}

/** A dynamic block's codes. */
function tables(s: Bits): Array<Code | null> {
  const [literals, distances, lengthCodes] = [take(s, 5) + 257, take(s, 5) + 1, take(s, 4) + 4];
  const order = new Uint8Array(19);
  for (let i = 0; i < lengthCodes; i++) order[CODE_LENGTH_ORDER[i]!] = take(s, 3);
  const lengthCode = huffman(order);
  if (lengthCode === null) return [null, null];
  const lengths = new Uint8Array(literals + distances);
  for (let i = 0, previous = 0; i < lengths.length; ) {
    const sym = symbol(s, lengthCode);
    if (sym < 16) lengths[i++] = previous = sym;
    else {
      const [bits, base] = sym === 16 ? [2, 3] : sym === 17 ? [3, 3] : [7, 11];
      if (sym !== 16) previous = 0;
      for (let n = take(s, bits) + base; n > 0 && i < lengths.length; n--) lengths[i++] = previous;
    }
  }
  return [huffman(lengths.subarray(0, literals)), huffman(lengths.subarray(literals))];
}

/**
 * pdf.js's FlateStream, counting its output past `cap` at most: its header check, its bit reader
 * (a stored block read from the next unread byte, its whole length counted even when cut) and its
 * errors (decoding stops; what came before counts).
 */
function inflate(data: Uint8Array, cap: number): number | string {
  const [cmf = -1, flg = -1] = data;
  if ((cmf & 15) !== 8 || ((cmf << 8) + flg) % 31 !== 0 || flg & 32) return 0;
  const s: Bits = { data, pos: 2, buf: 0, bits: 0 };
  let size = 0;
  try {
    for (let last = false; !last && size <= cap && fill(s, 3); ) {
      const head = take(s, 3);
      last = (head & 1) === 1;
      if (head >> 1 === 3) break;
      if (head >> 1 === 0) {
        const p = s.pos;
        if (p + 4 > data.length) break;
        const [length, check] = [data[p]! | (data[p + 1]! << 8), data[p + 2]! | (data[p + 3]! << 8)];
        if (check !== (~length & 0xffff) && (length !== 0 || check !== 0)) break;
        [s.buf, s.bits, s.pos, size] = [0, 0, Math.min(data.length, p + 4 + length), size + length];
        last ||= s.pos < p + 4 + length || (length === 0 && s.pos === data.length);
        continue;
      }
      const [literal, distance] = head >> 1 === 1 ? FIXED : tables(s);
      if (!literal || !distance) return "a PDF stream's deflate codes are over-subscribed";
      for (let sym = symbol(s, literal); sym !== 256 && size <= cap; sym = symbol(s, literal)) {
        if (sym < 256) size++;
        else {
          size += LENGTH_BASE[sym - 257]! + take(s, LENGTH_EXTRA[sym - 257]!);
          take(s, DISTANCE_EXTRA[symbol(s, distance)] ?? 0);
        }
      }
    }
  } catch (error) {
    if (error !== BAD) throw error;
  }
  return size;
}

/** pdf.js's LZWStream, counting: 9 to 12-bit codes, a table of 4,096 entries (their lengths). */
function lzw(data: Uint8Array, cap: number, earlyChange: number): number {
  const lengths = new Uint16Array(4096).fill(1, 0, 256);
  let [next, width, last, length, cache, cached, size] = [258, 9, 0, 0, 0, 0, 0];
  for (let pos = 0; size <= cap; ) {
    for (; cached < width; cached += 8) {
      // at its end pdf.js still finishes its block of 512 codes, a byte each
      if (pos >= data.length) return size + 512;
      cache = (cache << 8) | data[pos++]!;
    }
    cached -= width;
    const code = (cache >>> cached) & ((1 << width) - 1);
    if (code === 257) break;
    const had = length > 0;
    if (code === 256) [width, next, length] = [9, 258, 0];
    else {
      // a code past the table repeats the last sequence plus one byte
      length = code < 256 ? 1 : code < next ? lengths[code]! : length + 1;
      if (had) {
        lengths[next++] = lengths[last]! + 1;
        const k = next + earlyChange;
        if ((k & (k - 1)) === 0) width = Math.min(Math.log(k) / Math.LN2 + 1, 12) | 0;
      }
      last = code;
      size += length;
    }
  }
  return size;
}

/** pdf.js's Ascii85Stream, stopped past `cap` bytes (`z` is 4 zeros; a short last group, fewer). */
function ascii85(data: Uint8Array, cap: number): Uint8Array {
  const [out, group] = [new Uint8Array(Math.min(data.length * 4, cap) + 8), new Uint8Array(5)];
  let [pos, size, i] = [0, 0, 5];
  const next = () => {
    while (data[pos] === 32 || data[pos] === 10 || data[pos] === 13 || data[pos] === 9) pos++;
    return pos < data.length ? data[pos++]! : -1;
  };
  for (let c = next(); c !== -1 && c !== 126 && size <= cap && i === 5; c = next()) {
    if (c === 122) {
      size += 4;
      continue;
    }
    group[0] = c;
    for (i = 1; i < 5 && c !== -1 && c !== 126; i++) group[i] = c = next();
    if (c === -1 || c === 126) i--;
    group.fill(117, i, 5);
    let value = 0;
    for (let j = 0; j < 5; j++) value = value * 85 + (group[j]! - 33);
    for (let j = 3; j >= 0; j--, value >>= 8) out[size + j] = value & 255;
    size += i - 1;
  }
  return out.subarray(0, size);
}
