/**
 * Page text written into Markdown as literal text (CommonMark, and GFM's tables and strikethrough):
 * only the extractor's own constructs may be Markdown, so a page cannot write links, images or raw
 * HTML into the output (issue 22). One pass, linear; an ASCII punctuation character is
 * backslash-escaped only where it could start or end a construct, so ordinary text stays readable
 * and the output grows by at most one backslash per escaped character.
 *
 * - Everywhere: `\` `` ` `` `*` `[` `]` `<` `|` `~` (emphasis, code spans, links and images, raw
 *   HTML and autolinks, table cells, strikethrough).
 * - `&` before a letter, a digit or `#`, or at the end of the text (an entity reference).
 * - `_` unless between two ASCII letters or digits (intraword `_` is never emphasis: snake_case).
 * - `#` at the start of the text or after a space or tab (an ATX heading, or a heading's closing
 *   sequence).
 * - At the start of a line (the text's start when `lineStart`, and after a newline), after any
 *   leading white space: `#`, `>`, `-`, `+`, `=` (headings, quotes, list items, thematic breaks,
 *   setext underlines) and the `.` or `)` after up to 9 digits (an ordered list item).
 */

/** Escaped wherever they are. */
const ALWAYS = new Uint8Array(128);
for (const c of '\\`*[]<|~') ALWAYS[c.charCodeAt(0)] = 1;
/** Escaped as the first character of a line. */
const LINE_START = new Uint8Array(128);
for (const c of '#>-+=') LINE_START[c.charCodeAt(0)] = 1;

function isAsciiAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** White space that String.prototype.trim removes (paragraphs are trimmed) and Markdown indents with. */
function isTrimmed(c: number): boolean {
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/**
 * `text` as Markdown that renders as exactly that text. `lineStart`: the text begins a line of the
 * output (a paragraph, a list item, a cell, a heading's content, or the text after a hard break).
 */
export function escapeMarkdownText(text: string, lineStart: boolean): string {
  // pieces joined once: `out +=` per escape made a rope as deep as the escapes, slow to flatten
  const parts: string[] = [];
  let last = 0;
  let atLineStart = lineStart;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    let needed = false;
    if (atLineStart) {
      if (c === 10 || isTrimmed(c)) continue;
      atLineStart = false;
      if (c < 128 && LINE_START[c] === 1) needed = true;
      else if (isDigit(c)) {
        // an ordered list marker: up to 9 digits then `.` or `)`
        let j = i + 1;
        while (j < length && j - i < 10 && isDigit(text.charCodeAt(j))) j++;
        const next = text.charCodeAt(j);
        if (j - i <= 9 && (next === 46 || next === 41)) {
          parts.push(text.slice(last, j), '\\');
          last = j;
        }
        i = j - 1;
        continue;
      }
    }
    if (c === 10 || c === 13) {
      atLineStart = true;
      continue;
    }
    if (c >= 128) continue;
    if (ALWAYS[c] === 1) needed = true;
    else if (c === 95) {
      // `_`
      needed = !(
        i > 0 &&
        i + 1 < length &&
        isAsciiAlnum(text.charCodeAt(i - 1)) &&
        isAsciiAlnum(text.charCodeAt(i + 1))
      );
    } else if (c === 38) {
      // `&`
      const next = i + 1 < length ? text.charCodeAt(i + 1) : 35;
      needed = next === 35 || isAsciiAlnum(next);
    } else if (c === 35) {
      // `#`
      const before = i === 0 ? 32 : text.charCodeAt(i - 1);
      needed = before === 32 || before === 9;
    }
    if (needed) {
      parts.push(text.slice(last, i), '\\');
      last = i;
    }
  }
  if (parts.length === 0) return text;
  parts.push(text.slice(last));
  return parts.join('');
}

/** The longest run of backticks in `text`: a code fence or span must be longer. */
export function longestBacktickRun(text: string): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 96) {
      run++;
      if (run > longest) longest = run;
    } else run = 0;
  }
  return longest;
}

/**
 * An http(s) or mailto URL as a link destination: the characters that would end it early or be read
 * as escapes or code-span fences are percent-encoded (the URL means the same).
 */
export function markdownDestination(url: string): string {
  return /[()\s<>\\`]/.test(url)
    ? url.replace(/[()\s<>\\`]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
    : url;
}
