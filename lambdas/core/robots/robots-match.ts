/**
 * robots.txt path patterns (RFC 9309 section 2.2.2 and 2.2.3): percent-encoding normalisation and a
 * precompiled, linear-time wildcard matcher. Pure code, no I/O.
 *
 * Both sides of a comparison (the rule's pattern and the URL's path + query) go through the same
 * canonical form, {@link canonicalizePath}:
 * - `%xx` of an unreserved character (A-Z a-z 0-9 - . _ ~) is decoded (`/%62az` equals `/baz`);
 * - any other `%xx` keeps its encoding, with the hex digits upper-cased (`%e3` equals `%E3`);
 * - non-ASCII characters are UTF-8 percent-encoded (`ツ` equals `%E3%83%84`);
 * - ASCII characters that RFC 3986 does not allow in a URI (controls, space, `"<>\^`{|}`) and the
 *   apostrophe (which WHATWG URL serialisation encodes in queries) are always percent-encoded, so a
 *   literal and its encoding compare equal;
 * - `*` and `$` of the URL are percent-encoded (`%2A`, `%24`), so a pattern matches them literally
 *   only when it spells them encoded (RFC 9309 figure 6); in a pattern `*` is the wildcard and a
 *   final `$` the end anchor;
 * - in the query (after the first `?`), `%3A %2F %3F %40` are decoded to `: / ? @`, which have no
 *   delimiting role there (RFC 9309 figure 4: `?baz=https://foo.bar` equals `?baz=https%3A%2F%2Ffoo.bar`);
 * - other reserved characters and their encodings stay distinct, as RFC 3986 says: `/a%2Fb` is not
 *   `/a/b`, `?a=1%26b=2` is not `?a=1&b=2`. A `%` not followed by two hex digits stays a literal `%`.
 */

const HEX = '0123456789ABCDEF';

/** ASCII code points that are always written percent-encoded in the canonical form. */
const ALWAYS_ENCODE: readonly boolean[] = (() => {
  const table: boolean[] = [];
  for (let c = 0; c < 128; c++) table.push(c < 0x20 || c === 0x7f);
  for (const ch of ' "<>\\^`{|}\'$*') table[ch.charCodeAt(0)] = true;
  return table;
})();

function isUnreserved(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) || // A-Z
    (c >= 0x61 && c <= 0x7a) || // a-z
    (c >= 0x30 && c <= 0x39) || // 0-9
    c === 0x2d || // -
    c === 0x2e || // .
    c === 0x5f || // _
    c === 0x7e // ~
  );
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
}

function pctByte(b: number): string {
  return `%${HEX[b >> 4]}${HEX[b & 15]}`;
}

const utf8 = new TextEncoder();

/** In the query these reserved characters carry no delimiting role: `:` `/` `?` `@`. */
function isQueryData(b: number): boolean {
  return b === 0x3a || b === 0x2f || b === 0x3f || b === 0x40;
}

/**
 * The canonical, pure-ASCII form of a URL's path + query (see the module comment). With
 * `pattern: true` the input is a rule's pattern (its final `$` already removed): `*` stays a literal
 * `*`, the wildcard, while `$` is encoded like any other literal.
 */
export function canonicalizePath(input: string, options?: { pattern?: boolean }): string {
  const keepStar = options?.pattern === true;
  let out = '';
  let inQuery = false;
  const n = input.length;
  for (let i = 0; i < n; i++) {
    const c = input.charCodeAt(i);
    if (c === 0x25 /* % */ && i + 2 < n) {
      const hi = hexValue(input.charCodeAt(i + 1));
      const lo = hexValue(input.charCodeAt(i + 2));
      if (hi >= 0 && lo >= 0) {
        const b = (hi << 4) | lo;
        out += isUnreserved(b) || (inQuery && isQueryData(b)) ? String.fromCharCode(b) : pctByte(b);
        i += 2;
        continue;
      }
      out += '%';
    } else if (c < 0x80) {
      if (c === 0x3f /* ? */) inQuery = true;
      out += ALWAYS_ENCODE[c] && !(keepStar && c === 0x2a) ? pctByte(c) : input[i];
    } else {
      // One code point (a surrogate pair, or a lone surrogate that TextEncoder turns into U+FFFD).
      const cp = input.codePointAt(i) ?? c;
      if (cp > 0xffff) i++;
      for (const b of utf8.encode(String.fromCodePoint(cp))) out += pctByte(b);
    }
  }
  return out;
}

/** A compiled path pattern: literal pieces separated by `*`, optionally anchored at the end by `$`. */
export interface CompiledPattern {
  /** Priority per RFC 9309 2.2.2: octets of the canonical pattern, counting each `*` and a final `$`. */
  readonly length: number;
  /** Literal pieces (canonical form) between `*` wildcards; at least one element. */
  readonly pieces: readonly string[];
  /** True when the pattern ended with `$`: the match must reach the end of the path. */
  readonly anchored: boolean;
}

/**
 * Compiles a rule's path pattern. `*` matches any run of characters (also none); a `$` as the last
 * character anchors the match at the end of the path; a `$` anywhere else is a literal `$`.
 * Returns undefined for an empty pattern, which matches nothing (`Disallow:` allows everything).
 */
export function compilePattern(raw: string): CompiledPattern | undefined {
  if (raw === '') return undefined;
  const anchored = raw.endsWith('$');
  const body = canonicalizePath(anchored ? raw.slice(0, -1) : raw, { pattern: true });
  // Consecutive wildcards act as one; the priority still counts the pattern as written.
  const pieces = body.split('*').filter((piece, i, all) => piece !== '' || i === 0 || i === all.length - 1);
  return { length: body.length + (anchored ? 1 : 0), pieces, anchored };
}

/**
 * True when the pattern matches the canonical path from its start. Greedy leftmost matching of the
 * literal pieces is exact for `*`-only globs, so this runs in O(path × pattern) at worst (indexOf)
 * and never backtracks.
 */
export function matchesPattern(pattern: CompiledPattern, path: string): boolean {
  const { pieces, anchored } = pattern;
  const first = pieces[0] ?? '';
  if (pieces.length === 1) return anchored ? path === first : path.startsWith(first);
  if (!path.startsWith(first)) return false;
  let pos = first.length;
  const lastIndex = pieces.length - 1;
  for (let i = 1; i < lastIndex; i++) {
    const piece = pieces[i] ?? '';
    const at = path.indexOf(piece, pos);
    if (at < 0) return false;
    pos = at + piece.length;
  }
  const last = pieces[lastIndex] ?? '';
  if (!anchored) return path.indexOf(last, pos) >= 0;
  // Anchored: the last piece must end the path and must not overlap what the earlier pieces used.
  return path.length - last.length >= pos && path.endsWith(last);
}
