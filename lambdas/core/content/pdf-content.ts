/**
 * The text of a PDF response for its content record: Markdown with the headings and paragraphs its
 * layout shows, the same as plain text, and its metadata. pdf.js (unpdf's serverless build) runs in
 * this thread, so the document is bounded first: pdf-streams.ts checks the raw bytes (pdf.js decodes
 * streams without a size limit), then pages past `maxPages` are not read, reading stops at `maxChars`
 * characters and at the wall-clock budget. pdf.js yields to microtasks only, so no timer fires inside
 * its work: a page's text is read as a stream whose next chunk is asked for on a later macrotask,
 * which gives the clock a turn at every chunk (100 items at most, every form XObject). A page with no
 * text runs to its end between checks, bounded by its decoded size. A bad, foreign or encrypted
 * document never throws: the text is empty and `truncated` says why, in one line naming the bound.
 * Text from a PDF is hostile: it reaches the Markdown through escapeMarkdownText only.
 */
import { setImmediate as nextMacrotask, setTimeout as sleep } from 'node:timers/promises';
import { getResolvedPDFJS } from 'unpdf';
import type { PDFDocumentProxy, PDFPageProxy } from 'unpdf/pdfjs';
import { CONTENT_LIMITS, escapeMarkdownText, PDF_LIMITS } from '../base/index.ts';
import { MAX_TEXT_RECORD_CHARS } from '../results/index.ts';
import { scanPdfStreams } from './pdf-streams.ts';

/** Bounds of a PDF's extraction (the options' defaults): limits.ts's, and the text bounds of the other records. */
export const PDF_BOUNDS = {
  ...PDF_LIMITS,
  /** Characters of text kept, as for a text body's record. */
  maxChars: MAX_TEXT_RECORD_CHARS,
  /** Characters of a metadata string (title, author, subject, keywords), as an HTML page's title. */
  metadataChars: CONTENT_LIMITS.titleChars,
} as const;

/** Bounds of one extraction; each defaults to PDF_BOUNDS'. */
export type PdfOptions = Partial<Record<PdfBound, number>>;
type PdfBound = 'maxPages' | 'maxDecodedBytes' | 'timeBudgetMs' | 'maxChars';

export interface PdfExtraction {
  markdown: string;
  text: string;
  title?: string;
  author?: string;
  subject?: string;
  keywords?: string;
  /** The document's /Lang, when it is a language tag. */
  language?: string;
  /** Pages in the document. */
  pages: number;
  /** Pages whose text was read to its end. */
  pagesRead: number;
  wordCount: number;
  /** Why the text holds less than the document, in one line. */
  truncated?: string;
}

/** pdf.js, told to fetch nothing, run no font or image code it needs not, and log only errors. */
const DOCUMENT_OPTIONS = {
  verbosity: 0,
  disableFontFace: true,
  useSystemFonts: false,
  useWorkerFetch: false,
  useWasm: false,
  isOffscreenCanvasSupported: false,
  isImageDecoderSupported: false,
  enableXfa: false,
  disableAutoFetch: true,
  disableStream: true,
  disableRange: true,
} as const;

/** A line's font size over the body's that makes it a heading; longer lines are never headings. */
const HEADING_RATIO = 1.2;
const HEADING_CHARS = 200;
/** Lines further apart than this many font sizes are different paragraphs; sizes over 15% apart too. */
const PARAGRAPH_GAP = 1.6;
const SAME_SIZE = 1.15;
/** Work between two macrotask turns while a page's text is read. */
const SLICE_MS = 10;

const TIMEOUT = Symbol('timeout');
/** Control characters and line separators: white space in the text. */
const CONTROLS = /[\p{Cc}\u2028\u2029]/gu;
type TextItem = { str: string; transform: number[]; width: number; height: number; hasEOL: boolean };

/** The text and metadata of the PDF `bytes`; never throws for a bad document. */
export async function extractPdf(bytes: Uint8Array, options: PdfOptions = {}): Promise<PdfExtraction> {
  const limits = { ...PDF_BOUNDS, ...defined(options) };
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 1024));
  if (!head.toString('latin1').includes('%PDF-')) return empty('not a PDF: no %PDF- header');
  try {
    const scan = scanPdfStreams(bytes, limits.maxDecodedBytes);
    return scan.ok ? await readDocument(bytes, limits) : empty(scan.reason);
  } catch (error) {
    return empty(readFailure(error));
  }
}

/** The document read by pdf.js within `limits`, destroyed after. */
async function readDocument(bytes: Uint8Array, limits: Record<PdfBound, number>): Promise<PdfExtraction> {
  const { getDocument } = await getResolvedPDFJS();
  const clock = new Clock(limits.timeBudgetMs);
  // pdf.js takes the bytes over (its message port detaches them): it gets a copy, never a view
  const task = getDocument({ ...DOCUMENT_OPTIONS, data: new Uint8Array(bytes) });
  try {
    const doc = await clock.race(task.promise);
    if (doc === TIMEOUT) return empty(`time: stopped after ${clock.elapsed()} ms opening the document`);
    const metadata = await clock.race(doc.getMetadata()).catch(() => undefined);
    const layout = new Layout(limits.maxChars);
    const read = await readPages(doc, layout, clock, limits.maxPages);
    return {
      ...render(layout.finish(), limits.maxChars),
      ...(metadata === undefined || metadata === TIMEOUT ? {} : metadataFields(metadata)),
      pages: doc.numPages,
      pagesRead: read.pagesRead,
      ...(read.truncated === undefined ? {} : { truncated: read.truncated }),
    };
  } finally {
    // never waits on a document pdf.js cannot let go of
    await Promise.race([task.destroy().catch(() => undefined), sleep(1_000, undefined, { ref: false })]);
  }
}

/** Reads pages 1 to `maxPages` into `layout`, until a bound stops it. */
async function readPages(doc: PDFDocumentProxy, layout: Layout, clock: Clock, maxPages: number) {
  const last = Math.min(doc.numPages, maxPages);
  let truncated: string | undefined;
  let pagesRead = 0;
  for (let n = 1; n <= last && truncated === undefined; n++) {
    const page = await clock.race(doc.getPage(n)).catch((error: unknown) => ({ error }));
    if (page === TIMEOUT) truncated = `time: stopped after ${clock.elapsed()} ms at page ${n}`;
    else if ('error' in page) truncated = `page ${n} could not be read: ${oneLine(page.error)}`;
    else {
      const stop = await readPage(page, layout, clock);
      layout.endPage();
      page.cleanup();
      if (stop === 'time') truncated = `time: stopped after ${clock.elapsed()} ms at page ${n}`;
      else if (stop === 'chars') truncated = `text cut at ${layout.maxChars} characters at page ${n}`;
      else pagesRead++;
    }
  }
  if (doc.numPages > last) truncated ??= `read ${last} of ${doc.numPages} pages (the page bound)`;
  return { pagesRead, truncated };
}

/** What stopped a page's reading before its end. */
type Stop = 'time' | 'chars' | undefined;

/** One page's text items into `layout`. */
async function readPage(page: PDFPageProxy, layout: Layout, clock: Clock): Promise<Stop> {
  const reader = page.streamTextContent().getReader();
  let slice = performance.now();
  try {
    for (;;) {
      const chunk = await clock.race(reader.read());
      if (chunk === TIMEOUT) return 'time';
      if (chunk.done) return undefined;
      for (const item of chunk.value.items as Array<TextItem | { type: string }>) {
        if ('str' in item) layout.add(item);
      }
      if (layout.full) return 'chars';
      if (clock.expired) return 'time';
      // pdf.js continues on microtasks only: the next chunk is asked for on a later macrotask
      if (performance.now() - slice > SLICE_MS) {
        await nextMacrotask();
        slice = performance.now();
      }
    }
  } finally {
    reader.cancel(new Error('stopped')).catch(() => undefined);
  }
}

/** A wall-clock budget: its end, and races of promises against it. */
class Clock {
  private readonly start = performance.now();
  private readonly end: number;
  constructor(budgetMs: number) {
    this.end = this.start + budgetMs;
  }
  get expired(): boolean {
    return performance.now() >= this.end;
  }
  elapsed(): number {
    return Math.round(performance.now() - this.start);
  }
  /** `promise`, or TIMEOUT at the end of the budget (its timer keeps no process alive). */
  async race<T>(promise: Promise<T>): Promise<T | typeof TIMEOUT> {
    if (this.expired) return TIMEOUT;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<typeof TIMEOUT>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, this.end - performance.now()), TIMEOUT).unref();
    });
    try {
      return await Promise.race([promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A line being gathered from the items on one baseline: their text, its font size, where it ends. */
type Line = { parts: string[]; y: number; size: number; end: number };
/** A paragraph: its lines, its largest font size, its characters. */
type Block = { lines: string[]; size: number; chars: number };

/**
 * Text items into lines (one baseline, within half a font size, until an item ends its line) and
 * lines into paragraphs (the next line below within PARAGRAPH_GAP font sizes, in a size within
 * SAME_SIZE; an empty line or a new page ends one). Linear: every item is looked at once.
 */
class Layout {
  readonly maxChars: number;
  private readonly blocks: Block[] = [];
  private line: Line | null = null;
  private block: (Block & { y: number }) | null = null;
  private chars = 0;
  constructor(maxChars: number) {
    this.maxChars = maxChars;
  }
  get full(): boolean {
    return this.chars > this.maxChars;
  }

  add(item: TextItem): void {
    const str = item.str.replace(CONTROLS, ' ');
    if (this.full) return;
    if (str.trim() === '') {
      // pdf.js's own spaces between words
      if (str !== '' && this.line !== null) this.line.parts.push(' ');
    } else {
      const [, , c = 0, d = 0, x = 0, y = 0] = item.transform;
      const size = Math.abs(item.height) || Math.hypot(c, d) || 1;
      // another baseline (past half a font size: not a superscript) is another line
      if (this.line && Math.abs(y - this.line.y) > 0.5 * Math.max(size, this.line.size)) this.endLine();
      const line = this.line ?? { parts: [], y, size: 0, end: x };
      // items apart on the line, neither with a space at the join: words
      const joined = /\s$/.test(line.parts.at(-1)?.at(-1) ?? ' ') || /^\s/.test(str);
      if (x - line.end > 0.15 * size && !joined) line.parts.push(' ');
      line.parts.push(str);
      line.size = Math.max(line.size, size);
      line.end = x + item.width;
      this.line = line;
      this.chars += str.length;
    }
    if (item.hasEOL) this.endLine();
  }

  endPage(): void {
    this.endLine();
    this.block = null;
  }

  finish(): Block[] {
    this.endPage();
    return this.blocks;
  }

  private endLine(): void {
    const line = this.line;
    this.line = null;
    if (line === null) return;
    const text = line.parts.join('').replace(/\s+/g, ' ').trim();
    const block = this.block;
    if (text === '') this.block = null;
    else if (block !== null && continues(block, line)) {
      block.lines.push(text);
      block.chars += text.length;
      block.size = Math.max(block.size, line.size);
      block.y = line.y;
    } else {
      this.block = { lines: [text], size: line.size, chars: text.length, y: line.y };
      this.blocks.push(this.block);
    }
  }
}

/** Whether `line` continues the paragraph `block` (whose last line is at `block.y`). */
function continues(block: Block & { y: number }, line: Line): boolean {
  const [small, large] = [Math.min(block.size, line.size), Math.max(block.size, line.size)];
  const drop = block.y - line.y;
  return large <= small * SAME_SIZE && drop > -0.5 * large && drop <= PARAGRAPH_GAP * large;
}

/** The paragraphs as Markdown (headings by size rank) and as text, each at most `maxChars` long. */
function render(blocks: Block[], maxChars: number): Pick<PdfExtraction, 'markdown' | 'text' | 'wordCount'> {
  const body = bodySize(blocks);
  // heading levels by size rank, sizes to a tenth of a point: #, ## and ### for all smaller
  const sizes = [...new Set(blocks.filter((b) => isHeading(b, body)).map((b) => Math.round(b.size * 10)))];
  const levels = new Map(sizes.sort((a, b) => b - a).map((size, rank) => [size, Math.min(rank + 1, 3)]));
  const markdown: string[] = [];
  const text: string[] = [];
  for (const block of blocks) {
    const paragraph = joinLines(block.lines);
    const level = isHeading(block, body) ? (levels.get(Math.round(block.size * 10)) ?? 3) : 0;
    const escaped = escapeMarkdownText(paragraph, true);
    markdown.push(level === 0 ? escaped : `${'#'.repeat(level)} ${escaped}`);
    text.push(paragraph);
  }
  const plain = cut(text.join('\n\n'), maxChars);
  return { markdown: cut(markdown.join('\n\n'), maxChars, true), text: plain, wordCount: countWords(plain) };
}

function isHeading(block: Block, body: number): boolean {
  return block.size >= body * HEADING_RATIO && block.chars + block.lines.length <= HEADING_CHARS;
}

/** The body's font size: the median of the paragraphs' sizes, weighted by their characters. */
function bodySize(blocks: Block[]): number {
  const sorted = [...blocks].sort((a, b) => a.size - b.size);
  const half = sorted.reduce((sum, b) => sum + b.chars, 0) / 2;
  let seen = 0;
  for (const block of sorted) {
    seen += block.chars;
    if (seen >= half) return block.size;
  }
  return 0;
}

/** A paragraph's lines as one: a word hyphenated at a line's end is joined ("exam-", "ple"). */
function joinLines(lines: string[]): string {
  const parts: string[] = [lines[0] ?? ''];
  for (let i = 1; i < lines.length; i++) {
    const [previous, line] = [parts.at(-1)!, lines[i]!];
    const hyphenated = /\p{L}-$/u.test(previous.slice(-2)) && /^\p{Ll}/u.test(line);
    if (hyphenated) parts[parts.length - 1] = previous.slice(0, -1);
    else parts.push(' ');
    parts.push(line);
  }
  return parts.join('');
}

/** `text` cut to `max` characters, not inside a surrogate pair (nor, in Markdown, after half an escape). */
function cut(text: string, max: number, markdown = false): string {
  if (text.length <= max) return text;
  let end = /[\uD800-\uDBFF]/.test(text[max - 1] ?? '') ? max - 1 : max;
  let backslashes = 0;
  while (markdown && text[end - 1 - backslashes] === '\\') backslashes++;
  if (backslashes % 2 === 1) end--;
  return text.slice(0, end);
}

function countWords(text: string): number {
  return text.split(/[\s\u00a0]+/).filter((word) => word !== '').length;
}

/** The Info dictionary's strings (the XMP title when Info has none), cleaned and capped. */
function metadataFields(meta: { info: object; metadata: { get(name: string): unknown } | null }) {
  const info = meta.info as Record<string, unknown>;
  const language = clean(info.Language);
  const fields: Partial<PdfExtraction> = {
    title: clean(info.Title) ?? clean(meta.metadata?.get('dc:title')),
    author: clean(info.Author),
    subject: clean(info.Subject),
    keywords: clean(info.Keywords),
    language:
      language !== undefined && /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8}){0,3}$/.test(language)
        ? language
        : undefined,
  };
  return defined(fields);
}

/** A metadata string without control characters or runs of white space, at most metadataChars long. */
function clean(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  // a hostile megabyte title costs at most a few times the cap
  const text = cut(value, PDF_BOUNDS.metadataChars * 4).replace(CONTROLS, ' ');
  const collapsed = text.replace(/\s+/g, ' ').trim();
  return collapsed === '' ? undefined : cut(collapsed, PDF_BOUNDS.metadataChars);
}

/** Why pdf.js could not open the document, in one line. */
function readFailure(error: unknown): string {
  if (error instanceof Error && error.name === 'PasswordException') {
    return 'the PDF is encrypted; its text is not extracted';
  }
  return `the PDF could not be read: ${oneLine(error)}`;
}

/** The first line of an error's message, without control characters, at most 200 characters. */
function oneLine(error: unknown): string {
  const line = (error instanceof Error ? error.message : String(error)).slice(0, 1_000).split(/[\r\n]/)[0];
  return cut((line ?? '').replace(CONTROLS, ' ').trim(), 200);
}

function empty(truncated: string): PdfExtraction {
  return { markdown: '', text: '', pages: 0, pagesRead: 0, wordCount: 0, truncated };
}

/** `fields` without its undefined ones (an option left undefined takes its default; a record has no such key). */
function defined<T extends object>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;
}
