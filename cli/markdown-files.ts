/**
 * `--markdown-dir DIR`: one Markdown file per page that has Markdown, named from its URL
 * (markdown-names.ts), with the page's metadata as YAML front matter (docs/output.md, "Markdown
 * files"). A page whose file cannot be written is handed back, and the others are still written.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type ContentRecord, contentMetadata } from '../lambdas/core/results/index.ts';
import { yamlValue } from './front-matter.ts';
import { MarkdownNames } from './markdown-names.ts';

/**
 * A page's Markdown file: front matter (the page's metadata fields, as YAML values safe to render as
 * Markdown (front-matter.ts); not the record's bookkeeping: v, crawlId, key, kind), then the Markdown.
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

/** A page whose Markdown file was not written, and why (the file system's error, or a URL that is none). */
export interface UnwrittenPage {
  url: string;
  reason: string;
}

/** Writes each record with Markdown under `dir`, each to a file of its own; counts the files written. */
export class MarkdownDirWriter {
  readonly #dir: string;
  readonly #names = new MarkdownNames();
  files = 0;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async write(record: ContentRecord): Promise<UnwrittenPage | undefined> {
    if (record.markdown === undefined) return undefined;
    try {
      const file = join(this.#dir, ...this.#names.claim(record.url).split('/'));
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, markdownDocument(record));
    } catch (error) {
      return { url: record.url, reason: error instanceof Error ? error.message : String(error) };
    }
    this.files++;
    return undefined;
  }
}
