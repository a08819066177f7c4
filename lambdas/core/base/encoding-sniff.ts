/**
 * Which character encoding an HTML page is in, as the HTML Standard determines it ("determining the
 * character encoding", https://html.spec.whatwg.org/multipage/parsing.html#encoding-sniffing-algorithm),
 * so links on GBK, Shift_JIS or windows-1251 pages come out as the URLs a browser would follow.
 *
 * Order, first answer wins:
 * 1. A byte order mark (UTF-8, UTF-16BE, UTF-16LE). The BOM beats everything, the header included.
 * 2. The Content-Type `charset` parameter, when it is a known encoding label.
 * 3. The prescan of the first 1024 bytes: `<meta charset=...>`, `<meta http-equiv=content-type
 *    content="...; charset=...">` (only with the pragma), skipping comments and other tags exactly as
 *    the standard's byte-level algorithm does; UTF-16 from a `<meta>` means UTF-8, x-user-defined
 *    means windows-1252. Then an XML declaration's `encoding` (`<?xml ... encoding="...">`), and the
 *    UTF-16 XML declaration patterns.
 * 4. Autodetection, which the standard allows here: a body that is valid UTF-8 and not pure ASCII is
 *    UTF-8 (legacy single- and double-byte text is almost never valid UTF-8). Can be turned off.
 * 5. The default, windows-1252 (what browsers use for most locales; for ASCII it is the same as UTF-8).
 *
 * Labels are resolved by the Encoding Standard's "get an encoding" (Node's TextDecoder knows every
 * label); the labels that map to the "replacement" encoding (ISO-2022-KR and friends) decode to a
 * single U+FFFD, as in browsers. Pure: no I/O.
 */

export type EncodingSource = 'bom' | 'content-type' | 'meta' | 'xml-declaration' | 'detected' | 'default';

export interface SniffedEncoding {
  /** Canonical WHATWG encoding name, e.g. 'utf-8', 'gbk', 'shift_jis', 'windows-1251', 'replacement'. */
  encoding: string;
  source: EncodingSource;
}

export interface SniffOptions {
  /** Bytes the `<meta>` prescan looks at (the standard advises 1024). */
  prescanBytes?: number;
  /** Step 4 above: valid, non-ASCII UTF-8 without any declaration is UTF-8. Default true. */
  detectUtf8?: boolean;
}

export const PRESCAN_BYTES = 1024;
export const DEFAULT_ENCODING = 'windows-1252';

/** Labels of the "replacement" encoding (Encoding Standard, section 4.2). */
const REPLACEMENT_LABELS = new Set([
  'csiso2022kr',
  'hz-gb-2312',
  'iso-2022-cn',
  'iso-2022-cn-ext',
  'iso-2022-kr',
  'replacement',
]);

const ASCII_WHITESPACE = new Set([0x09, 0x0a, 0x0c, 0x0d, 0x20]);

/**
 * The Encoding Standard's "get an encoding": the canonical name for `label` (trimmed,
 * case-insensitive), or undefined when it is no encoding's label.
 */
export function getEncoding(label: string): string | undefined {
  const trimmed = label.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '').toLowerCase();
  if (trimmed === '') return undefined;
  if (REPLACEMENT_LABELS.has(trimmed)) return 'replacement';
  try {
    return new TextDecoder(trimmed).encoding;
  } catch {
    return undefined;
  }
}

/** The encoding a byte order mark at the start of `bytes` names, with the BOM's length. */
export function bomEncoding(bytes: Uint8Array): { encoding: string; length: number } | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { encoding: 'utf-8', length: 3 };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { encoding: 'utf-16be', length: 2 };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { encoding: 'utf-16le', length: 2 };
  return undefined;
}

/**
 * The `charset` parameter of a Content-Type value (the first one; a quoted value is unquoted, with
 * backslash escapes), or undefined: `text/html; charset="Shift_JIS"` gives `Shift_JIS`. Parameters
 * are read as the MIME Sniffing Standard's "parse a MIME type" reads them.
 */
export function contentTypeCharset(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const text = contentType;
  const isHttpSpace = (char: string | undefined): boolean =>
    char === ' ' || char === '\t' || char === '\n' || char === '\r';
  let at = text.indexOf(';');
  while (at !== -1 && at < text.length) {
    at++; // past ';'
    while (isHttpSpace(text[at])) at++;
    let stop = at;
    while (stop < text.length && text[stop] !== ';' && text[stop] !== '=') stop++;
    const name = text.slice(at, stop).toLowerCase();
    at = stop;
    if (at >= text.length) break;
    if (text[at] === ';') continue;
    at++; // past '='
    let value = '';
    if (text[at] === '"') {
      at++;
      while (at < text.length && text[at] !== '"') {
        if (text[at] === '\\' && at + 1 < text.length) at++;
        value += text[at];
        at++;
      }
      const next = text.indexOf(';', at);
      at = next === -1 ? text.length : next;
    } else {
      const next = text.indexOf(';', at);
      const end = next === -1 ? text.length : next;
      value = text.slice(at, end).replace(/[ \t\n\r]+$/, '');
      at = end;
    }
    if (name === 'charset' && value !== '') return value;
  }
  return undefined;
}

// --- the prescan (HTML Standard 13.2.3.2, "prescan a byte stream to determine its encoding") ------

interface SniffedAttribute {
  name: string;
  value: string;
}

function isSpace(byte: number | undefined): boolean {
  return byte !== undefined && ASCII_WHITESPACE.has(byte);
}

function isAsciiLetter(byte: number | undefined): boolean {
  return byte !== undefined && ((byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a));
}

function lower(byte: number): number {
  return byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte;
}

/** Reads bytes[from, to) as a string, one char per byte (the algorithm only compares ASCII). */
function latin1(bytes: Uint8Array, from: number, to: number): string {
  let text = '';
  for (let i = from; i < to; i++) text += String.fromCharCode(bytes[i] ?? 0);
  return text;
}

function startsWithAt(bytes: Uint8Array, at: number, end: number, text: string): boolean {
  if (at + text.length > end) return false;
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false;
  return true;
}

function indexOfBytes(bytes: Uint8Array, from: number, end: number, text: string): number {
  for (let at = from; at + text.length <= end; at++) if (startsWithAt(bytes, at, end, text)) return at;
  return -1;
}

function indexOfByte(bytes: Uint8Array, from: number, end: number, byte: number): number {
  for (let at = from; at < end; at++) if (bytes[at] === byte) return at;
  return -1;
}

/** Marks that the bytes ran out inside a tag: the prescan ends there. */
const EOF = 'eof';

/**
 * The standard's "get an attribute": reads one attribute at `cursor.at`, lowercasing ASCII, and
 * moves the cursor past it. Undefined when the tag ends instead (a `>`); EOF when the bytes end first.
 */
function getAttribute(
  bytes: Uint8Array,
  end: number,
  cursor: { at: number },
): SniffedAttribute | undefined | typeof EOF {
  let at = cursor.at;
  while (at < end && (isSpace(bytes[at]) || bytes[at] === 0x2f)) at++;
  if (at >= end) return EOF;
  if (bytes[at] === 0x3e) {
    cursor.at = at;
    return undefined;
  }
  let name = '';
  let value = '';
  // The name. Always takes at least one byte, so a caller looping over attributes moves on.
  for (;;) {
    if (at >= end) return EOF;
    const byte = bytes[at] as number;
    if (byte === 0x3d && name !== '') {
      at++;
      break;
    }
    if (isSpace(byte)) {
      // Spaces: a '=' after them starts the value, anything else ends a valueless attribute.
      while (at < end && isSpace(bytes[at])) at++;
      if (at >= end) return EOF;
      if (bytes[at] !== 0x3d) {
        cursor.at = at;
        return { name, value: '' };
      }
      at++;
      break;
    }
    if (byte === 0x2f || byte === 0x3e) {
      cursor.at = at;
      return { name, value: '' };
    }
    name += String.fromCharCode(lower(byte));
    at++;
  }
  // The value.
  while (at < end && isSpace(bytes[at])) at++;
  if (at >= end) return EOF;
  const first = bytes[at] as number;
  if (first === 0x22 || first === 0x27) {
    at++;
    for (;;) {
      if (at >= end) return EOF;
      const byte = bytes[at] as number;
      if (byte === first) {
        cursor.at = at + 1;
        return { name, value };
      }
      value += String.fromCharCode(lower(byte));
      at++;
    }
  }
  if (first === 0x3e) {
    cursor.at = at;
    return { name, value: '' };
  }
  for (;;) {
    if (at >= end) return EOF;
    const byte = bytes[at] as number;
    if (isSpace(byte) || byte === 0x3e) {
      cursor.at = at;
      return { name, value };
    }
    value += String.fromCharCode(lower(byte));
    at++;
  }
}

/**
 * The standard's "algorithm for extracting a character encoding from a meta element", on a
 * `content` value such as `text/html; charset=gbk`. Returns the encoding, or undefined.
 */
export function encodingFromMetaContent(content: string): string | undefined {
  const text = content;
  let position = 0;
  for (;;) {
    const found = text.toLowerCase().indexOf('charset', position);
    if (found === -1) return undefined;
    let at = found + 'charset'.length;
    while (at < text.length && /[\t\n\f\r ]/.test(text[at] ?? '')) at++;
    if (text[at] !== '=') {
      position = at;
      continue;
    }
    at++;
    while (at < text.length && /[\t\n\f\r ]/.test(text[at] ?? '')) at++;
    const next = text[at];
    if (next === undefined) return undefined;
    if (next === '"' || next === "'") {
      const close = text.indexOf(next, at + 1);
      if (close === -1) return undefined;
      return getEncoding(text.slice(at + 1, close));
    }
    let stop = at;
    while (stop < text.length && !/[\t\n\f\r ;]/.test(text[stop] ?? '')) stop++;
    return getEncoding(text.slice(at, stop));
  }
}

/** The standard's "get an XML encoding": `<?xml ... encoding="...">` at the very start. */
export function xmlDeclarationEncoding(bytes: Uint8Array, end = bytes.length): string | undefined {
  const limit = Math.min(end, bytes.length);
  if (!startsWithAt(bytes, 0, limit, '<?xml')) return undefined;
  const close = indexOfByte(bytes, 0, limit, 0x3e);
  if (close === -1) return undefined;
  let at = indexOfBytes(bytes, 0, close, 'encoding');
  if (at === -1) return undefined;
  at += 'encoding'.length;
  while (at < close && (bytes[at] as number) <= 0x20) at++;
  if (bytes[at] !== 0x3d || at >= close) return undefined;
  at++;
  while (at < close && (bytes[at] as number) <= 0x20) at++;
  const quote = bytes[at];
  if (at >= close || (quote !== 0x22 && quote !== 0x27)) return undefined;
  at++;
  const endQuote = indexOfByte(bytes, at, close, quote);
  if (endQuote === -1) return undefined;
  for (let i = at; i < endQuote; i++) if ((bytes[i] as number) <= 0x20) return undefined;
  const encoding = getEncoding(latin1(bytes, at, endQuote));
  return encoding === 'utf-16be' || encoding === 'utf-16le' ? 'utf-8' : encoding;
}

/**
 * The standard's prescan over the first `limit` bytes: the encoding a `<meta>` declares, else an
 * XML declaration's, else undefined. Bytes after `limit` are never read.
 */
export function prescanEncoding(
  bytes: Uint8Array,
  limit = PRESCAN_BYTES,
): { encoding: string; source: 'meta' | 'xml-declaration' } | undefined {
  const end = Math.min(limit, bytes.length);
  // UTF-16 XML declarations ('<?x' in UTF-16LE / UTF-16BE, no BOM).
  if (startsWithAt(bytes, 0, end, '<\0?\0x\0')) return { encoding: 'utf-16le', source: 'xml-declaration' };
  if (startsWithAt(bytes, 0, end, '\0<\0?\0x')) return { encoding: 'utf-16be', source: 'xml-declaration' };

  let position = 0;
  scan: while (position < end) {
    if (startsWithAt(bytes, position, end, '<!--')) {
      // The '-->' may share its hyphens with '<!--' ('<!-->' is a whole comment).
      const close = indexOfBytes(bytes, position + 2, end, '-->');
      if (close === -1) break;
      position = close + 2;
    } else if (isMetaStart(bytes, position, end)) {
      const cursor = { at: position + 5 };
      const seen = new Set<string>();
      let gotPragma = false;
      let needPragma: boolean | undefined;
      // null: no charset yet; undefined: a label that names no encoding (the standard's failure).
      let charset: string | null | undefined = null;
      let ended = false;
      for (;;) {
        const attribute = getAttribute(bytes, end, cursor);
        if (attribute === EOF) ended = true;
        if (attribute === undefined || attribute === EOF) break;
        if (seen.has(attribute.name)) continue;
        seen.add(attribute.name);
        if (attribute.name === 'http-equiv') {
          if (attribute.value === 'content-type') gotPragma = true;
        } else if (attribute.name === 'content') {
          const fromContent = encodingFromMetaContent(attribute.value);
          if (fromContent !== undefined && charset === null) {
            charset = fromContent;
            needPragma = true;
          }
        } else if (attribute.name === 'charset') {
          charset = getEncoding(attribute.value);
          needPragma = false;
        }
      }
      if (needPragma !== undefined && (!needPragma || gotPragma) && typeof charset === 'string') {
        let encoding = charset;
        if (encoding === 'utf-16be' || encoding === 'utf-16le') encoding = 'utf-8';
        if (encoding === 'x-user-defined') encoding = 'windows-1252';
        return { encoding, source: 'meta' };
      }
      if (ended) break;
      position = cursor.at;
    } else if (
      bytes[position] === 0x3c &&
      (isAsciiLetter(bytes[position + 1]) ||
        (bytes[position + 1] === 0x2f && isAsciiLetter(bytes[position + 2])))
    ) {
      // Any other tag: skip its name, then its attributes (a '>' in a quoted value does not end it).
      const cursor = { at: position + 1 };
      while (cursor.at < end && !isSpace(bytes[cursor.at]) && bytes[cursor.at] !== 0x3e) cursor.at++;
      for (;;) {
        const attribute = getAttribute(bytes, end, cursor);
        if (attribute === EOF) break scan;
        if (attribute === undefined) break;
      }
      position = cursor.at;
    } else if (
      bytes[position] === 0x3c &&
      (bytes[position + 1] === 0x21 || bytes[position + 1] === 0x2f || bytes[position + 1] === 0x3f)
    ) {
      const close = indexOfByte(bytes, position + 1, end, 0x3e);
      if (close === -1) break;
      position = close;
    }
    position++;
  }
  const xml = xmlDeclarationEncoding(bytes, end);
  return xml === undefined ? undefined : { encoding: xml, source: 'xml-declaration' };
}

function isMetaStart(bytes: Uint8Array, at: number, end: number): boolean {
  if (at + 6 > end || bytes[at] !== 0x3c) return false;
  const word = 'meta';
  for (let i = 0; i < 4; i++) if (lower(bytes[at + 1 + i] as number) !== word.charCodeAt(i)) return false;
  const after = bytes[at + 5];
  return isSpace(after) || after === 0x2f;
}

/**
 * True when `bytes` are valid UTF-8 holding at least one complete non-ASCII character. An incomplete
 * character at the very end is allowed (bodies get cut at a cap) but does not count as evidence.
 */
export function looksLikeUtf8(bytes: Uint8Array): boolean {
  if (!bytes.some((byte) => byte >= 0x80)) return false;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: true });
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 0x80) return true;
    return false;
  } catch {
    return false;
  }
}

/** The encoding of an HTML body with this Content-Type, by the order at the top of this file. */
export function sniffHtmlEncoding(
  bytes: Uint8Array,
  contentType: string | undefined,
  options: SniffOptions = {},
): SniffedEncoding {
  const bom = bomEncoding(bytes);
  if (bom !== undefined) return { encoding: bom.encoding, source: 'bom' };
  const label = contentTypeCharset(contentType);
  const declared = label === undefined ? undefined : getEncoding(label);
  if (declared !== undefined) return { encoding: declared, source: 'content-type' };
  const prescanned = prescanEncoding(bytes, options.prescanBytes ?? PRESCAN_BYTES);
  if (prescanned !== undefined) return prescanned;
  if ((options.detectUtf8 ?? true) && looksLikeUtf8(bytes)) return { encoding: 'utf-8', source: 'detected' };
  return { encoding: DEFAULT_ENCODING, source: 'default' };
}

/** Decodes `bytes` as `encoding` (a canonical name from this module), dropping a matching BOM. */
export function decodeAs(bytes: Uint8Array, encoding: string): string {
  if (encoding === 'replacement') return bytes.length === 0 ? '' : '\uFFFD';
  try {
    return new TextDecoder(encoding).decode(bytes);
  } catch {
    return new TextDecoder(DEFAULT_ENCODING).decode(bytes);
  }
}
