/**
 * IDNA 2003 ToASCII of a host name (RFC 3490 with the RFC 3491 nameprep profile), as Python's `idna`
 * codec (`host.encode('idna')`) computes it. Pure: no I/O.
 *
 * Used by the SURT key (surt.ts): the Python `surt` library, and so pywb, puts non-ASCII hosts
 * through this codec, not through WHATWG's UTS 46 (`straße.de` → `strasse.de` here, `xn--strae-oqa.de`
 * there). URLs the crawler stores already have ASCII hosts, so only raw input typed by a person gets
 * here.
 *
 * Exact: the label separators, the prohibited tables (RFC 3454 C.1.2, C.2.2, C.3-C.9), the
 * R/AL table (D.1), the ACE prefix and length checks, and Punycode (RFC 3492). Approximated: the B.2
 * case folding and NFKC use this runtime's Unicode tables instead of Unicode 3.2's, and the L table
 * (D.2) is "a letter, spacing mark or non-ASCII digit outside the right-to-left scripts". They differ
 * only for characters whose case or compatibility mapping changed since Unicode 3.2 (such as Cherokee)
 * mixed into right-to-left labels.
 */

/** `undefined` where the Python codec raises (a prohibited character, an empty or too long label...). */
export function idna2003ToAscii(name: string): string | undefined {
  if (name === '') return '';
  if (isAscii(name)) {
    // The codec's fast path: ASCII names are only checked for label length.
    const labels = name.split('.');
    const last = labels.pop() ?? '';
    if (labels.some((label) => label.length === 0 || label.length > 63) || last.length > 63) return undefined;
    return name;
  }
  const labels = name.split(/[.\u3002\uff0e\uff61]/);
  let trailingDot = '';
  if (labels.length > 0 && labels[labels.length - 1] === '') {
    labels.pop();
    trailingDot = '.';
  }
  const out: string[] = [];
  for (const label of labels) {
    const ascii = labelToAscii(label);
    if (ascii === undefined) return undefined;
    out.push(ascii);
  }
  return out.join('.') + trailingDot;
}

function labelToAscii(label: string): string | undefined {
  let result = label;
  if (!isAscii(result)) {
    const prepped = nameprep(result);
    if (prepped === undefined) return undefined;
    result = prepped;
    if (!isAscii(result)) {
      if (result.startsWith('xn--')) return undefined;
      result = `xn--${punycodeEncode(result)}`;
    }
  }
  return result.length > 0 && result.length < 64 ? result : undefined;
}

function isAscii(text: string): boolean {
  return !/[\u0080-\uffff]/.test(text);
}

/** RFC 3491: map (B.1, B.2), normalize (NFKC), prohibit (C.*), check bidi (D.1, D.2). */
function nameprep(label: string): string | undefined {
  // B.2 is full case folding plus the extra mappings that keep NFKC's output case-folded; folding again
  // after NFKC stands in for those extras (℡ → TEL → tel).
  const mapped = fold(fold(removeB1(label)).normalize('NFKC')).normalize('NFKC');
  const chars = [...mapped];
  if (chars.some((char) => isProhibited(char.codePointAt(0) ?? 0))) return undefined;
  const randAl = chars.map((char) => isRandAl(char.codePointAt(0) ?? 0));
  if (randAl.some(Boolean)) {
    if (chars.some((char, i) => !randAl[i] && isLeftToRight(char))) return undefined;
    if (!randAl[0] || !randAl[randAl.length - 1]) return undefined;
  }
  return mapped;
}

// RFC 3454 B.1: characters mapped to nothing (and U+FE00-FE0F).
const B1 = new Set([0x00ad, 0x034f, 0x1806, 0x180b, 0x180c, 0x180d, 0x200b, 0x200c, 0x200d, 0x2060, 0xfeff]);

function removeB1(text: string): string {
  let out = '';
  for (const char of text) {
    const cp = char.codePointAt(0) ?? 0;
    if (!B1.has(cp) && !(cp >= 0xfe00 && cp <= 0xfe0f)) out += char;
  }
  return out;
}

/** Full case folding, approximated: upper- then lower-casing, except dotless ı, which folding keeps. */
function fold(text: string): string {
  if (isAscii(text)) return text.toLowerCase();
  let out = '';
  for (const char of text) out += char === '\u0131' ? char : char.toUpperCase().toLowerCase();
  return out;
}

/** `[from, to]` code point ranges, inclusive. */
type Ranges = ReadonlyArray<readonly [number, number]>;

// RFC 3454 C.1.2, C.2.2, C.3, C.5, C.6, C.7, C.8, C.9 (C.4 non-characters are tested arithmetically).
const PROHIBITED: Ranges = [
  [0x0080, 0x00a0],
  [0x0340, 0x0341],
  [0x06dd, 0x06dd],
  [0x070f, 0x070f],
  [0x1680, 0x1680],
  [0x180e, 0x180e],
  [0x2000, 0x200f],
  [0x2028, 0x202f],
  [0x205f, 0x2063],
  [0x206a, 0x206f],
  [0x2ff0, 0x2ffb],
  [0x3000, 0x3000],
  [0xd800, 0xf8ff],
  [0xfdd0, 0xfdef],
  [0xfeff, 0xfeff],
  [0xfff9, 0xfffd],
  [0x1d173, 0x1d17a],
  [0xe0001, 0xe0001],
  [0xe0020, 0xe007f],
  [0xf0000, 0x10ffff],
];

function isProhibited(cp: number): boolean {
  return (cp & 0xfffe) === 0xfffe || inRanges(cp, PROHIBITED);
}

// RFC 3454 D.1: characters with bidi property R or AL (Unicode 3.2).
const RAND_AL: Ranges = [
  [0x05be, 0x05be],
  [0x05c0, 0x05c0],
  [0x05c3, 0x05c3],
  [0x05d0, 0x05ea],
  [0x05f0, 0x05f4],
  [0x061b, 0x061b],
  [0x061f, 0x061f],
  [0x0621, 0x063a],
  [0x0640, 0x064a],
  [0x066d, 0x066f],
  [0x0671, 0x06d5],
  [0x06dd, 0x06dd],
  [0x06e5, 0x06e6],
  [0x06fa, 0x06fe],
  [0x0700, 0x070d],
  [0x0710, 0x0710],
  [0x0712, 0x072c],
  [0x0780, 0x07a5],
  [0x07b1, 0x07b1],
  [0x200f, 0x200f],
  [0xfb1d, 0xfb1d],
  [0xfb1f, 0xfb28],
  [0xfb2a, 0xfb36],
  [0xfb38, 0xfb3c],
  [0xfb3e, 0xfb3e],
  [0xfb40, 0xfb41],
  [0xfb43, 0xfb44],
  [0xfb46, 0xfbb1],
  [0xfbd3, 0xfd3d],
  [0xfd50, 0xfd8f],
  [0xfd92, 0xfdc7],
  [0xfdf0, 0xfdfc],
  [0xfe70, 0xfe74],
  [0xfe76, 0xfefc],
];

function isRandAl(cp: number): boolean {
  return inRanges(cp, RAND_AL);
}

const RTL_SCRIPT =
  /[\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}\p{Script=Samaritan}\p{Script=Mandaic}\p{Script=Adlam}\p{Script=Hanifi_Rohingya}]/u;

/** D.2 (bidi property L), approximated: letters, spacing marks and digits but ASCII and RTL ones. */
function isLeftToRight(char: string): boolean {
  return /[\p{L}\p{Mc}\p{Nd}]/u.test(char) && !/[0-9]/.test(char) && !RTL_SCRIPT.test(char);
}

function inRanges(cp: number, ranges: Ranges): boolean {
  for (const [from, to] of ranges) {
    if (cp < from) return false;
    if (cp <= to) return true;
  }
  return false;
}

// RFC 3492 parameters.
const BASE = 36;
const T_MIN = 1;
const T_MAX = 26;
const SKEW = 38;
const DAMP = 700;
const INITIAL_BIAS = 72;
const INITIAL_N = 128;

/** RFC 3492 Punycode of `text` (without the `xn--` prefix). */
export function punycodeEncode(text: string): string {
  const input = [...text].map((char) => char.codePointAt(0) ?? 0);
  let output = input
    .filter((cp) => cp < 0x80)
    .map((cp) => String.fromCharCode(cp))
    .join('');
  const basic = output.length;
  if (basic > 0) output += '-';
  let n = INITIAL_N;
  let delta = 0;
  let bias = INITIAL_BIAS;
  for (let handled = basic; handled < input.length; ) {
    let next = Number.MAX_SAFE_INTEGER;
    for (const cp of input) if (cp >= n && cp < next) next = cp;
    delta += (next - n) * (handled + 1);
    n = next;
    for (const cp of input) {
      if (cp < n) delta += 1;
      if (cp !== n) continue;
      let q = delta;
      for (let k = BASE; ; k += BASE) {
        const t = k <= bias ? T_MIN : k >= bias + T_MAX ? T_MAX : k - bias;
        if (q < t) break;
        output += digit(t + ((q - t) % (BASE - t)));
        q = Math.floor((q - t) / (BASE - t));
      }
      output += digit(q);
      bias = adapt(delta, handled + 1, handled === basic);
      delta = 0;
      handled += 1;
    }
    delta += 1;
    n += 1;
  }
  return output;
}

function digit(d: number): string {
  return String.fromCharCode(d < 26 ? 97 + d : 22 + d);
}

function adapt(delta: number, points: number, first: boolean): number {
  let d = first ? Math.floor(delta / DAMP) : delta >> 1;
  d += Math.floor(d / points);
  let k = 0;
  while (d > ((BASE - T_MIN) * T_MAX) >> 1) {
    d = Math.floor(d / (BASE - T_MIN));
    k += BASE;
  }
  return k + Math.floor(((BASE - T_MIN + 1) * d) / (d + SKEW));
}
