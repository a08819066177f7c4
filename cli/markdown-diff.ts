/**
 * A unified diff of two versions of a page's Markdown (`crawler diff`). Myers' diff costs O(N·D): two
 * large pages that share nothing would take minutes, so the search stops at a bound of line edits and
 * the diff then shows every old line removed and every new line added (linear), and says so.
 */
import { createTwoFilesPatch } from 'diff';

/** Line edits searched for at most; past it the pages are shown as replaced whole. */
export const MAX_DIFF_EDITS = 1_000;

export interface MarkdownDiff {
  patch: string;
  /** The pages differ too much for a line diff: the patch replaces the whole page. */
  replacedWhole: boolean;
}

export function markdownDiff(
  before: { label: string; text: string },
  after: { label: string; text: string },
  maxEdits = MAX_DIFF_EDITS,
): MarkdownDiff {
  const patch = createTwoFilesPatch(before.label, after.label, before.text, after.text, '', '', {
    context: 3,
    maxEditLength: maxEdits,
  });
  if (patch !== undefined) return { patch, replacedWhole: false };
  return { patch: wholeReplacement(before, after), replacedWhole: true };
}

/** One hunk: every line of `before` removed, every line of `after` added. */
function wholeReplacement(
  before: { label: string; text: string },
  after: { label: string; text: string },
): string {
  const lines = (text: string) => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));
  const old = lines(before.text);
  const fresh = lines(after.text);
  const out = [
    '===================================================================',
    `--- ${before.label}`,
    `+++ ${after.label}`,
    `@@ -${old.length === 0 ? 0 : 1},${old.length} +${fresh.length === 0 ? 0 : 1},${fresh.length} @@`,
  ];
  for (const line of old) out.push(`-${line}`);
  for (const line of fresh) out.push(`+${line}`);
  return `${out.join('\n')}\n`;
}
