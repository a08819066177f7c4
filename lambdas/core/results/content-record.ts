/**
 * The content record of a stored page (docs/output.md, "Content records"): what a language-model or
 * search pipeline reads instead of the WARC. Built in the fetch function from the decoded text that
 * link extraction already has, so no second fetch and no second decode.
 *
 * - HTML (text/html, application/xhtml+xml): the main content as Markdown (`content: 'markdown'`) or as
 *   plain text (`content: 'text'`), and the page's metadata (main-content.ts). One form only: both
 *   doubled the record, and its JSON and gzip cost more than the extraction (docs/performance.md);
 *   `crawler get` renders the other form from the stored page.
 * - Text, JSON and XML (text/*, application/json, application/xml, `+json`, `+xml`): the decoded text,
 *   at most MAX_TEXT_RECORD_CHARS characters. Never through the HTML path.
 * - PDF (application/pdf): its text as Markdown (headings and paragraphs from its layout) or as plain
 *   text, with its title, author, language and pages (pdf-content.ts), bounded in pages, decoded
 *   bytes and time.
 * - Anything else (images, archives...): no record.
 *
 * `truncated` says why a record holds less than the page (a bound of main-content.ts, `time` when its
 * CPU budget ran out, or the text cap).
 * The records are built by content-extract.ts; this module is only their shape, for the readers too.
 */
import { z } from 'zod';

/** Characters of a text, JSON or XML body kept in its record: the main-content path's text bound. */
export const MAX_TEXT_RECORD_CHARS = 2_000_000;

export const ContentRecordSchema = z.object({
  v: z.literal(1),
  crawlId: z.string(),
  /** Frontier key of the URL (the results index line's `key`). */
  key: z.string(),
  url: z.string(),
  /** The URL the content came from, when redirects led elsewhere. */
  finalUrl: z.string().optional(),
  fetchedAt: z.string(),
  /** Media type of the response, without parameters. */
  mime: z.string(),
  /** `html`: main content and metadata; `text`: the whole body as text; `pdf`: a document's text. */
  kind: z.enum(['html', 'text', 'pdf']),
  title: z.string().optional(),
  description: z.string().optional(),
  language: z.string().optional(),
  canonicalUrl: z.string().optional(),
  author: z.string().optional(),
  publishedTime: z.string().optional(),
  modifiedTime: z.string().optional(),
  siteName: z.string().optional(),
  og: z.record(z.string(), z.string()).optional(),
  jsonLdTypes: z.array(z.string()).optional(),
  wordCount: z.number().int().min(0),
  /** A PDF's pages, and how many of them were read (PDF_LIMITS.maxPages). */
  pages: z.number().int().min(0).optional(),
  pagesRead: z.number().int().min(0).optional(),
  truncated: z.string().optional(),
  /** HTML with `content: markdown` (the default). */
  markdown: z.string().optional(),
  /** HTML with `content: text`; a text, JSON or XML page always. */
  text: z.string().optional(),
});

export type ContentRecord = z.infer<typeof ContentRecordSchema>;

/** The record without its content: what `crawler get --meta` prints and front matter holds. */
export type ContentMetadata = Omit<ContentRecord, 'markdown' | 'text'>;

export function contentMetadata(record: ContentRecord): ContentMetadata {
  const { markdown: _markdown, text: _text, ...metadata } = record;
  return metadata;
}

const TEXT_TYPES = /^(text\/[^;]+|application\/(json|xml|[^;]+\+json|[^;]+\+xml))$/;

/** Which path a media type takes: `html`, `text`, `pdf`, or none. */
export function contentKind(mime: string | undefined): ContentRecord['kind'] | undefined {
  if (mime === undefined) return undefined;
  if (mime === 'text/html' || mime === 'application/xhtml+xml') return 'html';
  if (mime === 'application/pdf') return 'pdf';
  return TEXT_TYPES.test(mime) ? 'text' : undefined;
}
