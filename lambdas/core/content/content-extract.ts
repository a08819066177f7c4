/**
 * Builds content records (content-record.ts) in the fetch function, from the decoded text of a page.
 */

import type { ContentMode } from '../crawl/index.ts';
import { type ContentRecord, MAX_TEXT_RECORD_CHARS } from '../results/index.ts';
import { extractMainContent, type MainContentOptions, type PageMetadata } from './main-content.ts';
import type { PdfExtraction } from './pdf-content.ts';

export interface ContentSource {
  crawlId: string;
  key: string;
  url: string;
  finalUrl?: string | undefined;
  fetchedAt: string;
  mime: string;
}

/**
 * The record of an HTML page, from its decoded text; `baseUrl` resolves its links. `options` (the
 * CPU budget) default to the limits of core/base/limits.ts.
 */
export function htmlContentRecord(
  source: ContentSource,
  html: string,
  baseUrl: string,
  mode: Exclude<ContentMode, 'none'>,
  options?: Pick<MainContentOptions, 'cpuBudgetMs'>,
): ContentRecord {
  const extracted = extractMainContent(html, baseUrl, options);
  return {
    ...head(source, 'html'),
    ...metadataFields(extracted.metadata),
    wordCount: extracted.metadata.wordCount,
    ...(extracted.truncated === undefined ? {} : { truncated: extracted.truncated }),
    ...(mode === 'markdown' ? { markdown: extracted.markdown } : { text: extracted.text }),
  };
}

/** The record of a text, JSON or XML body. */
export function textContentRecord(source: ContentSource, text: string): ContentRecord {
  const cut = text.length > MAX_TEXT_RECORD_CHARS;
  const kept = cut ? text.slice(0, MAX_TEXT_RECORD_CHARS) : text;
  return {
    ...head(source, 'text'),
    wordCount: countWords(kept),
    ...(cut
      ? { truncated: `text cut at ${MAX_TEXT_RECORD_CHARS} characters (the body has ${text.length})` }
      : {}),
    text: kept,
  };
}

/** The record of a PDF, from its extraction (pdf-content.ts). */
export function pdfContentRecord(
  source: ContentSource,
  pdf: PdfExtraction,
  mode: Exclude<ContentMode, 'none'>,
): ContentRecord {
  return {
    ...head(source, 'pdf'),
    ...(pdf.title === undefined ? {} : { title: pdf.title }),
    ...(pdf.subject === undefined ? {} : { description: pdf.subject }),
    ...(pdf.author === undefined ? {} : { author: pdf.author }),
    ...(pdf.language === undefined ? {} : { language: pdf.language }),
    wordCount: pdf.wordCount,
    pages: pdf.pages,
    pagesRead: pdf.pagesRead,
    ...(pdf.truncated === undefined ? {} : { truncated: pdf.truncated }),
    ...(mode === 'markdown' ? { markdown: pdf.markdown } : { text: pdf.text }),
  };
}

function head(source: ContentSource, kind: ContentRecord['kind']): Omit<ContentRecord, 'wordCount'> {
  return {
    v: 1,
    crawlId: source.crawlId,
    key: source.key,
    url: source.url,
    ...(source.finalUrl !== undefined && source.finalUrl !== source.url ? { finalUrl: source.finalUrl } : {}),
    fetchedAt: source.fetchedAt,
    mime: source.mime,
    kind,
  };
}

function metadataFields(metadata: PageMetadata): Partial<ContentRecord> {
  const fields: Partial<ContentRecord> = {};
  for (const name of [
    'title',
    'description',
    'language',
    'canonicalUrl',
    'author',
    'publishedTime',
    'modifiedTime',
    'siteName',
  ] as const) {
    const value = metadata[name];
    if (value !== undefined && value !== '') fields[name] = value;
  }
  if (Object.keys(metadata.og).length > 0) fields.og = metadata.og;
  if (metadata.jsonLdTypes.length > 0) fields.jsonLdTypes = metadata.jsonLdTypes;
  return fields;
}

function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const space = code === 32 || (code >= 9 && code <= 13) || code === 160;
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}
