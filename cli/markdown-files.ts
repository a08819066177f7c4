/**
 * `--markdown-dir DIR`: one Markdown file per page that has Markdown, named from its URL, with the
 * page's metadata as YAML front matter (docs/output.md, "Markdown files").
 *
 * Names: `DIR/<host>[_<port>]/<path>.md`. A path ending in `/` (or empty) is `<path>/index.md`; a
 * last segment's `.html`, `.htm`, `.php`, `.asp`, `.aspx` or `.md` extension is dropped; a query adds
 * `_<8 hex of its sha256>`. Characters that are unsafe in file names become `_`, `.` and `..`
 * segments too, and a segment is cut to 120 characters. Two URLs that would share a name (`/a` and
 * `/a.html`) keep it apart with `_<8 hex of the URL's sha256>`.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type ContentRecord, contentMetadata } from '../lambdas/core/content-record.ts';
import { yamlValue } from './front-matter.ts';

const DROPPED_EXTENSION = /\.(html?|php|aspx?|md)$/i;
/** Characters some file system refuses in a name (Windows' set, and the path separators). */
const UNSAFE = new Set(['<', '>', ':', '"', '/', '\\', '|', '?', '*']);
const MAX_SEGMENT = 120;

/** The file's path relative to DIR, without the collision suffix. */
export function markdownPath(url: string): string {
  const parsed = new URL(url);
  const host = safeSegment(parsed.port ? `${parsed.hostname}_${parsed.port}` : parsed.hostname);
  const segments = parsed.pathname
    .split('/')
    .slice(1)
    .map((segment) => safeSegment(decodeSegment(segment)));
  if (segments.length === 0 || segments.at(-1) === '') segments[Math.max(0, segments.length - 1)] = 'index';
  let last = segments.at(-1)!;
  last = last.replace(DROPPED_EXTENSION, '') || 'index';
  if (parsed.search) last = `${last}_${hex(parsed.search)}`;
  segments[segments.length - 1] = last;
  return `${join(host, ...segments.map((segment) => segment || '_'))}.md`;
}

/**
 * A page's Markdown file: front matter (the page's metadata fields, as JSON values, which YAML
 * reads; not the record's bookkeeping: v, crawlId, key, kind), then the Markdown.
 */
export function markdownDocument(record: ContentRecord): string {
  const lines = ['---'];
  const { v: _v, crawlId: _crawlId, key: _key, kind: _kind, ...metadata } = contentMetadata(record);
  for (const [name, value] of Object.entries(metadata)) {
    if (value !== undefined) lines.push(`${name}: ${yamlValue(value)}`);
  }
  lines.push('---', '', record.markdown ?? record.text ?? '');
  return `${lines.join('\n').trimEnd()}\n`;
}

/** Writes each record with Markdown under `dir`; returns how many files were written. */
export class MarkdownDirWriter {
  readonly #dir: string;
  readonly #used = new Set<string>();
  files = 0;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async write(record: ContentRecord): Promise<void> {
    if (record.markdown === undefined) return;
    let path = markdownPath(record.url);
    if (this.#used.has(path.toLowerCase())) path = path.replace(/\.md$/, `_${hex(record.url)}.md`);
    this.#used.add(path.toLowerCase());
    const file = join(this.#dir, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, markdownDocument(record));
    this.files++;
  }
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function safeSegment(segment: string): string {
  let safe = '';
  for (const char of segment) {
    const code = char.charCodeAt(0);
    safe += code < 0x20 || code === 0x7f || UNSAFE.has(char) ? '_' : char;
  }
  if (safe === '.' || safe === '..') safe = '_';
  return safe.length > MAX_SEGMENT ? `${safe.slice(0, MAX_SEGMENT - 9)}_${hex(safe)}` : safe;
}

function hex(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8);
}
