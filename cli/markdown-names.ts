/**
 * The file each page's Markdown goes to under `--markdown-dir` (docs/output.md, "Markdown files"):
 * `<host>[_<port>]/<path>.md`, a name valid on Linux, macOS and Windows, and never one another page
 * of the crawl has (MarkdownNames tracks them, as case-insensitive file systems compare them).
 *
 * - A path ending in `/` (or empty) is `<path>/index.md`; the last segment's `.html`, `.htm`, `.php`,
 *   `.asp`, `.aspx` or `.md` extension is dropped; a query adds `_<8 hex of its sha256>`.
 * - Files always end in `.md` and directories never do (one that would gets `_`), so a file and a
 *   directory never want one name (`/a` and `/a.md/x`).
 * - In a name: `<>:"/\|?*` and control characters become `_`; an empty, `.` or `..` segment is `_`;
 *   a trailing dot or space becomes `_`; a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9,
 *   whatever follows its first dot) gets a leading `_`.
 * - A name longer than `MARKDOWN_NAME_LIMITS.segmentBytes` is cut there and ends `_<8 hex of the
 *   whole>`; directories past `pathBytes` are folded into one `_<8 hex of them>`.
 * - A name another page took (compared case- and normalization-insensitively) gets
 *   `_<8 hex of the URL>` before `.md`, and further hashes until it is free.
 */
import { createHash } from 'node:crypto';
import { MARKDOWN_NAME_LIMITS } from '../lambdas/core/base/index.ts';

const DROPPED_EXTENSION = /\.(html?|php|aspx?|md)$/i;
/** Characters Windows refuses in a name, and the path separators. */
const FORBIDDEN = new Set(['<', '>', ':', '"', '/', '\\', '|', '?', '*']);
/** Windows device names: refused with any extension, and with spaces before it (`NUL .txt`). */
const DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)$/i;
const EXTENSION = '.md';
/** A hash suffix: `_` and 8 hex digits. */
const SUFFIX_BYTES = 9;

/** A page's path relative to the Markdown directory, `/`-separated, before any collision suffix. */
export function markdownPath(url: string): string {
  const parsed = new URL(url);
  const host = parsed.port ? `${parsed.hostname}_${parsed.port}` : parsed.hostname;
  const raw = parsed.pathname.split('/').slice(1);
  const last = decodeSegment(raw.pop() ?? '');
  if (last.whole) last.text = last.text.replace(DROPPED_EXTENSION, '') || 'index';
  let file = safeName(last);
  if (parsed.search) file = `${file}_${hex(parsed.search)}`;
  const directories = raw.map((segment) => directoryName(decodeSegment(segment)));
  return fitPath(
    directoryName({ text: host, whole: true, raw: host }),
    directories,
    `${file}${EXTENSION}`,
  ).join('/');
}

/** The names pages took under one directory: each page gets one no other page has. */
export class MarkdownNames {
  readonly #used = new Set<string>();

  /** A free path for `url` (relative, `/`-separated), now taken. Throws when `url` is not a URL. */
  claim(url: string): string {
    const path = markdownPath(url);
    let candidate = path;
    for (let round = 0; this.#used.has(fold(candidate)); round++) {
      candidate = `${path.slice(0, -EXTENSION.length)}_${hex(round === 0 ? url : `${url}\n${round}`)}${EXTENSION}`;
    }
    this.#used.add(fold(candidate));
    return candidate;
  }
}

/**
 * What a case-insensitive file system (NTFS, APFS, HFS+) compares: both cases folded (`ſ` is `S` on
 * NTFS) after canonical composition (APFS and HFS+ ignore NFC versus NFD). Folding more than a file
 * system does only adds a suffix; folding less would let two pages share a file.
 */
export function fold(path: string): string {
  return path.normalize('NFC').toUpperCase().toLowerCase();
}

/** A directory's name: a safe name that never ends in `.md`, so no page's file can have it. */
function directoryName(segment: Segment): string {
  const name = safeName(segment);
  return fold(name).endsWith(EXTENSION) ? `${name}_` : name;
}

/** A segment of the URL's path, decoded. */
interface Segment {
  /** The decoded segment, or its start when it is longer than a name can be. */
  text: string;
  /** Whether `text` is all of it. */
  whole: boolean;
  /** The segment as the URL has it. */
  raw: string;
}

/**
 * A segment percent-decoded, but only as much of it as a name can hold: a longer one is cut anyway,
 * and a huge one costs no more than that.
 */
function decodeSegment(raw: string): Segment {
  // A decoded byte takes 1 to 3 characters of the URL: this many hold more bytes than a name, even
  // without a character cut short at the end (up to 3 escapes).
  let end = Math.min(raw.length, 3 * (MARKDOWN_NAME_LIMITS.segmentBytes + 4));
  if (raw[end - 1] === '%') end -= 1;
  else if (raw[end - 2] === '%') end -= 2;
  if (end < raw.length) end = beforeCutCharacter(raw, end);
  return { text: percentDecode(raw.slice(0, end)), whole: end === raw.length, raw };
}

/** `end`, or where the UTF-8 character that `end` cuts short starts (so decoding it takes the fast way). */
function beforeCutCharacter(raw: string, end: number): number {
  const byteAt = (at: number) => (raw[at] === '%' ? Number.parseInt(raw.slice(at + 1, at + 3), 16) : 0);
  let continuations = 0;
  while (continuations < 3 && (byteAt(end - 3 * (continuations + 1)) & 0xc0) === 0x80) continuations++;
  const lead = byteAt(end - 3 * (continuations + 1));
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return length > continuations + 1 ? end - 3 * (continuations + 1) : end;
}

/** `%XX` escapes as UTF-8; bytes that are not UTF-8 (or a character cut short) become U+FFFD. */
function percentDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    // Not UTF-8: byte by byte, below.
  }
  const bytes: number[] = [];
  for (let i = 0; i < text.length; ) {
    const hexDigits = text.slice(i + 1, i + 3);
    if (text[i] === '%' && /^[0-9a-f]{2}$/i.test(hexDigits)) {
      bytes.push(Number.parseInt(hexDigits, 16));
      i += 3;
    } else {
      // The URL parser escapes what is not ASCII, but a record's URL may still hold some.
      const char = String.fromCodePoint(text.codePointAt(i)!);
      bytes.push(...Buffer.from(char));
      i += char.length;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A segment as a name every file system takes, at most `segmentBytes` long. */
function safeName(segment: Segment): string {
  let name = '';
  let cost = 0;
  let cutAt = -1;
  for (const char of segment.text.toWellFormed()) {
    const code = char.charCodeAt(0);
    const safe = code < 0x20 || code === 0x7f || FORBIDDEN.has(char) ? '_' : char;
    cost += charCost(safe);
    if (cutAt < 0 && cost > MARKDOWN_NAME_LIMITS.segmentBytes - SUFFIX_BYTES) cutAt = name.length;
    name += safe;
  }
  // A long name keeps its start and the hash of the whole segment.
  if (cost > MARKDOWN_NAME_LIMITS.segmentBytes || !segment.whole) {
    name = `${name.slice(0, cutAt < 0 ? name.length : cutAt)}_${hex(segment.raw)}`;
  }
  if (name === '' || name === '.' || name === '..') name = '_';
  if (name.endsWith('.') || name.endsWith(' ')) name = `${name.slice(0, -1)}_`;
  const base = name.split('.', 1)[0]!.trimEnd();
  return DEVICE.test(base) ? `_${name}` : name;
}

/**
 * Bytes a character takes in a name: its UTF-8 bytes (Linux, APFS count those), or its UTF-16
 * units once decomposed (HFS+ stores NFD and counts units; Windows counts units), the larger.
 */
function charCost(char: string): number {
  const code = char.codePointAt(0)!;
  if (code < 0x80) return 1;
  const utf8 = code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  return Math.max(utf8, char.normalize('NFD').length);
}

/**
 * The path within `pathBytes` (macOS refuses paths over 1,024 bytes), with room for a collision
 * suffix: directories past it are folded into one `_<8 hex of them>`.
 */
function fitPath(host: string, directories: string[], file: string): string[] {
  const bytes = (name: string) => Buffer.byteLength(name) + 1; // with its separator
  const room = MARKDOWN_NAME_LIMITS.pathBytes - bytes(host) - bytes(file) - SUFFIX_BYTES;
  let used = 0;
  for (const directory of directories) used += bytes(directory);
  if (used <= room) return [host, ...directories, file];
  const foldedBytes = SUFFIX_BYTES + 1;
  let kept = 0;
  for (used = 0; used + bytes(directories[kept]!) <= room - foldedBytes; kept++)
    used += bytes(directories[kept]!);
  return [host, ...directories.slice(0, kept), `_${hex(directories.slice(kept).join('/'))}`, file];
}

function hex(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8);
}
