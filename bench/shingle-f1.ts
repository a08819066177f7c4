/**
 * Shingle F1: how much of an expected text an extracted text reproduces, order-aware but tolerant
 * of whitespace, punctuation and case. Pure functions, no I/O; used by bench/content-quality.ts.
 *
 * - `tokenize`: lowercase, then split on every run of characters that are not Unicode letters or
 *   digits (`\p{L}\p{N}`); punctuation and whitespace only separate tokens. Combining marks (`\p{M}`)
 *   also separate, so text is NFC-normalised first to keep precomposed letters whole.
 * - `shingles`: the token n-grams (default 4) as a multiset (n-gram -> count), so a paragraph
 *   extracted twice is penalised and one extracted once where expected twice loses recall.
 * - `shingleScore`: precision = matched / extracted shingles, recall = matched / expected shingles,
 *   matched = sum over n-grams of min(count in extracted, count in expected); F1 their harmonic mean.
 *   If either text has fewer tokens than n, both sides fall back to unigrams (so a 2-word page can
 *   still score). Both empty: 1/1/1 (nothing expected, nothing extracted). Exactly one empty: 0/0/0.
 * - `htmlToText`: text of an HTML fragment (the fixtures' expected.html) with htmlparser2: entities
 *   decoded, block-level elements and `<br>` as line breaks, script/style/template content dropped,
 *   whitespace collapsed within lines, blank lines removed.
 */
import { Parser } from 'htmlparser2';

export const DEFAULT_SHINGLE_SIZE = 4;

export interface ShingleScore {
  precision: number;
  recall: number;
  f1: number;
  /** Shingle size actually used (n, or 1 after the short-text fallback). */
  n: number;
  /** Shingles in common (multiset intersection size). */
  matched: number;
  extractedShingles: number;
  expectedShingles: number;
}

const NON_WORD = /[^\p{L}\p{N}]+/u;

export function tokenize(text: string): string[] {
  return text
    .normalize('NFC')
    .toLowerCase()
    .split(NON_WORD)
    .filter((t) => t.length > 0);
}

/** Token n-grams of `tokens` as a multiset; empty when there are fewer than n tokens. */
export function shingles(tokens: readonly string[], n: number = DEFAULT_SHINGLE_SIZE): Map<string, number> {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`shingle size must be a positive integer: ${n}`);
  const bag = new Map<string, number>();
  for (let i = 0; i + n <= tokens.length; i++) {
    // U+0001 cannot occur inside a token (it is not \p{L}\p{N}), so the join is unambiguous.
    const key = tokens.slice(i, i + n).join('\u0001');
    bag.set(key, (bag.get(key) ?? 0) + 1);
  }
  return bag;
}

function size(bag: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const count of bag.values()) total += count;
  return total;
}

/** Size of the multiset intersection. */
export function overlap(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): number {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let matched = 0;
  for (const [key, count] of small) matched += Math.min(count, large.get(key) ?? 0);
  return matched;
}

/** Shingle precision/recall/F1 of an already tokenized extraction against the expected tokens. */
export function shingleScoreTokens(
  extracted: readonly string[],
  expected: readonly string[],
  n: number = DEFAULT_SHINGLE_SIZE,
): ShingleScore {
  const used = Math.min(extracted.length, expected.length) < n ? 1 : n;
  const got = shingles(extracted, used);
  const want = shingles(expected, used);
  const extractedShingles = size(got);
  const expectedShingles = size(want);
  if (extractedShingles === 0 && expectedShingles === 0) {
    return { precision: 1, recall: 1, f1: 1, n: used, matched: 0, extractedShingles, expectedShingles };
  }
  if (extractedShingles === 0 || expectedShingles === 0) {
    return { precision: 0, recall: 0, f1: 0, n: used, matched: 0, extractedShingles, expectedShingles };
  }
  const matched = overlap(got, want);
  const precision = matched / extractedShingles;
  const recall = matched / expectedShingles;
  const f1 = matched === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { precision, recall, f1, n: used, matched, extractedShingles, expectedShingles };
}

/** Shingle precision/recall/F1 of `extracted` text against `expected` text. */
export function shingleScore(
  extracted: string,
  expected: string,
  n: number = DEFAULT_SHINGLE_SIZE,
): ShingleScore {
  return shingleScoreTokens(tokenize(extracted), tokenize(expected), n);
}

/** Elements whose start and end break the text flow (HTML's block-level and table/list elements). */
const BLOCK = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'body',
  'caption',
  'dd',
  'details',
  'dialog',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hgroup',
  'hr',
  'html',
  'li',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'ul',
]);
const SKIP = new Set(['script', 'style', 'template', 'noscript', 'title']);

/** Plain text of an HTML document or fragment; lines are the block structure. */
export function htmlToText(html: string): string {
  const parts: string[] = [];
  let skipDepth = 0;
  const parser = new Parser(
    {
      onopentag(name) {
        if (SKIP.has(name)) skipDepth++;
        else if (name === 'br' || BLOCK.has(name)) parts.push('\n');
      },
      onclosetag(name) {
        if (SKIP.has(name)) skipDepth = Math.max(0, skipDepth - 1);
        else if (BLOCK.has(name)) parts.push('\n');
      },
      ontext(data) {
        if (skipDepth === 0) parts.push(data);
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  return parts
    .join('')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter((line) => line.length > 0)
    .join('\n');
}
