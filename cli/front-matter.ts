/**
 * YAML front matter values of the `.md` files (`--markdown-dir`): page metadata is page text, so a
 * value must read back as exactly itself in any YAML parser (1.1 or 1.2), and must not become Markdown
 * or HTML when a renderer that knows no front matter shows the block as text.
 *
 * Each value is a double-quoted scalar (JSON's string syntax, which YAML reads), a flow sequence or
 * a flow mapping of them, on one line. Beyond JSON's escapes: characters YAML refuses or reads as line
 * breaks (DEL, C1 controls, U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF) and `<`, `>`, `&`, `[`, `]`, `` ` ``
 * (HTML, links and code spans) are written as `\uXXXX`; a lone surrogate becomes U+FFFD.
 */

const ESCAPED = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff<>&[\]`]/g;

function quoted(text: string): string {
  return JSON.stringify(text.toWellFormed()).replace(
    ESCAPED,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** One metadata value as YAML: a string, a number, a list of strings or a map of strings. */
export function yamlValue(value: unknown): string {
  if (typeof value === 'string') return quoted(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(yamlValue).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([key, item]) => `${quoted(key)}: ${yamlValue(item)}`);
    return `{${entries.join(', ')}}`;
  }
  return 'null';
}
