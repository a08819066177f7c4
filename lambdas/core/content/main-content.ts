/**
 * Main-content extraction (issue 15): the article of a page as Markdown and plain text, plus the
 * page's metadata, without a DOM.
 *
 * One streaming pass of htmlparser2's Tokenizer (main-content-html.ts gives Parser's element events
 * without its per-element costs) builds a compact tree of the elements that matter for the output
 * (headings, paragraphs, lists, tables, code, quotes, links, images, emphasis and the block
 * containers); every other element is transparent (its text goes to the nearest kept ancestor).
 * Content of script, style, noscript, template, svg, math, iframe, object, form controls and the
 * like is never read; <title>, <meta>, <link rel=canonical>, <base href>, <html lang>, <time> and
 * JSON-LD blocks feed the metadata. While the tree is built each element accumulates its text
 * length, link text length, comma and paragraph counts, so the scoring needs no second walk.
 *
 * Choosing the content follows Readability.js: paragraphs (p, pre, td, headings, and the loose
 * text of containers) of 25+ characters give 1 + commas + min(len/100, 3) points to their
 * container, half to the grandparent, and score/(3·level) further up (5 levels); containers start
 * from a tag bonus and a class/id hint weight (±25), and the final score is scaled by 1 - link
 * density. The best candidate moves up to an ancestor that scores better, and its siblings join
 * when they score well or are link-poor paragraphs. An <article>, <main> or role=main holding at
 * least half of the page's text wins outright. Elements that are unlikely content (nav, aside,
 * footer, header outside an article, hidden elements, navigation/complementary roles, negative
 * class/id hints such as sidebar, cookie, comment) count for nothing and are not rendered; within
 * the content, forms, negative-hint headings and link-dense containers are dropped. When that leaves
 * no text, the whole page is rendered without cleaning (a page of one short <p> still has text).
 * A listing page (a section or docs index, search results, a product grid: see
 * main-content-listing.ts) is rendered instead from its main region, its groups of cards and link
 * lists as lists of links.
 *
 * Bounds for hostile HTML: elements nested deeper than `maxDepth` are flattened into their
 * ancestor, and reading stops (the rest of the input is ignored) past 4 × maxDepth open elements
 * (at least 2,000; all open elements are tracked, kept or not), at `maxTableCells` table cells, or at
 * `maxTextChars` characters of text; `truncated` then says why. Every step is linear in the page
 * (test/unit/content-adversarial.test.ts times each hostile construct at n and 4n), and the whole
 * extraction has a CPU budget (`cpuBudgetMs`, CONTENT_LIMITS.extractionCpuMs) as a backstop: past it
 * reading stops, what was read gets as much time again to be rendered (else the output is empty), and
 * `truncated` is `'time'`. The function does not throw.
 *
 * Page text is escaped as it goes into the Markdown (markdown-escape.ts): only the constructs made
 * here are Markdown, links are http(s) or mailto, and code fences outgrow their content.
 *
 * The pipeline: main-content-tree.ts builds the tree (over main-content-element.ts's vocabulary, with
 * main-content-metadata.ts reading the metadata), main-content-choice.ts chooses the content,
 * main-content-listing.ts tells a listing page, and main-content-render.ts (over
 * main-content-inline.ts) renders it; this module runs them and makes the result.
 */
import { CONTENT_LIMITS, CpuBudget } from '../base/index.ts';
import { chooseContent } from './main-content-choice.ts';
import { OutOfTime } from './main-content-inline.ts';
import { listingRegion } from './main-content-listing.ts';
import { applyJsonLd, countWords, type RawMeta } from './main-content-metadata.ts';
import { Renderer, renderAll } from './main-content-render.ts';
import { type Parsed, parse, type TreeLimits } from './main-content-tree.ts';

export interface PageMetadata {
  title?: string;
  description?: string;
  language?: string;
  canonicalUrl?: string;
  author?: string;
  publishedTime?: string;
  modifiedTime?: string;
  siteName?: string;
  /** og:* properties (without the og: prefix); the first value of a repeated property. */
  og: Record<string, string>;
  /** @type values of the JSON-LD blocks (also of their @graph members), in document order. */
  jsonLdTypes: string[];
  /** Words of the main content text. */
  wordCount: number;
}

export interface MainContent {
  markdown: string;
  text: string;
  metadata: PageMetadata;
  /** Why a bound was hit (one line); absent when the whole page was read. */
  truncated?: string;
}

export interface MainContentOptions {
  /** Render images as `![alt](url)` (default false). */
  images?: boolean;
  /** Elements nested deeper than this are flattened into their ancestor (default 500). */
  maxDepth?: number;
  /** Table cells read before reading stops (default 10,000). */
  maxTableCells?: number;
  /** Characters of text read before reading stops (default 2,000,000). */
  maxTextChars?: number;
  /** CPU time for the whole extraction (default CONTENT_LIMITS.extractionCpuMs); see `truncated: 'time'`. */
  cpuBudgetMs?: number;
  /** The CPU clock in ms (default: this thread's CPU time); tests drive it. */
  cpuClock?: () => number;
}

export const DEFAULT_MAX_DEPTH = 500;
export const DEFAULT_MAX_TABLE_CELLS = 10_000;
export const DEFAULT_MAX_TEXT_CHARS = 2_000_000;

/** A caller's bound: a non-negative number (Infinity allowed), else the default. */
function bound(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && value >= 0 ? value : fallback;
}

function treeLimits(options: MainContentOptions | undefined): TreeLimits {
  return {
    maxDepth: Math.max(1, bound(options?.maxDepth, DEFAULT_MAX_DEPTH)),
    maxCells: bound(options?.maxTableCells, DEFAULT_MAX_TABLE_CELLS),
    maxText: bound(options?.maxTextChars, DEFAULT_MAX_TEXT_CHARS),
    images: options?.images === true,
  };
}

function metadataOf(meta: RawMeta, base: string, wordCount: number): PageMetadata {
  const jsonLdTypes: string[] = [];
  for (const block of meta.ld) applyJsonLd(meta, jsonLdTypes, block, 0);
  const out: PageMetadata = { og: meta.og, jsonLdTypes, wordCount };
  const title = meta.title ?? meta.ogTitle;
  if (title !== undefined) out.title = title;
  const description = meta.description ?? meta.ogDescription;
  if (description !== undefined) out.description = description;
  if (meta.language !== undefined) out.language = meta.language;
  if (meta.canonical !== undefined) {
    const url = URL.parse(meta.canonical.trim(), base);
    if (url !== null && (url.protocol === 'http:' || url.protocol === 'https:')) out.canonicalUrl = url.href;
  }
  if (meta.author !== undefined) out.author = meta.author;
  const published = meta.publishedTime ?? meta.timeTag;
  if (published !== undefined) out.publishedTime = published;
  if (meta.modifiedTime !== undefined) out.modifiedTime = meta.modifiedTime;
  if (meta.siteName !== undefined) out.siteName = meta.siteName;
  return out;
}

/**
 * Extracts the main content of an HTML page as Markdown and text, with the page's metadata (see the
 * top of this file). Links and images are made absolute against `baseUrl` and the page's <base href>.
 */
export function extractMainContent(html: string, baseUrl: string, options?: MainContentOptions): MainContent {
  const images = options?.images === true;
  const source = typeof html === 'string' ? html : String(html);
  const budget = new CpuBudget(
    bound(options?.cpuBudgetMs, CONTENT_LIMITS.extractionCpuMs),
    options?.cpuClock,
  );
  let parsed: Parsed;
  try {
    parsed = parse(source, treeLimits(options), true, budget);
  } catch (error) {
    return {
      markdown: '',
      text: '',
      metadata: { og: {}, jsonLdTypes: [], wordCount: 0 },
      truncated: `the page could not be parsed: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  let base = URL.parse(baseUrl)?.href ?? 'about:blank';
  if (parsed.meta.base !== undefined) {
    const resolved = URL.parse(parsed.meta.base.trim(), base);
    if (resolved !== null && (resolved.protocol === 'http:' || resolved.protocol === 'https:')) {
      base = resolved.href;
    }
  }
  let content: { markdown: string; text: string };
  // Reading cut by the budget: what was read gets as much time again to be rendered.
  if (parsed.truncated === 'time') budget.renew();
  try {
    const renderer = new Renderer(base, images, true, budget);
    const chosen = chooseContent(parsed);
    const listing = listingRegion(parsed, chosen);
    renderer.listing = listing !== null;
    content = renderAll(listing === null ? chosen : [listing], renderer);
    if (content.text.trim() === '' && parsed.truncated !== 'time') {
      renderer.listing = false;
      // Everything was unlikely (an ad-wrapper around the page): read it again without that rule,
      // and if even that leaves nothing, take the whole page uncleaned.
      parsed = parse(source, treeLimits(options), false, budget);
      if (parsed.truncated === 'time') budget.renew();
      content = renderAll(chooseContent(parsed), renderer);
      if (content.text.trim() === '') {
        renderer.clean = false;
        content = renderAll([parsed.root], renderer);
      }
    }
  } catch (error) {
    content = { markdown: '', text: '' };
    if (error instanceof OutOfTime) parsed.truncated = 'time';
    // not expected; the output stays well-formed rather than throwing at the caller
    else parsed.truncated ??= `rendering failed: ${error instanceof Error ? error.message : String(error)}`;
  }
  const result: MainContent = {
    markdown: content.markdown,
    text: content.text,
    metadata: metadataOf(parsed.meta, base, countWords(content.text)),
  };
  if (parsed.truncated !== undefined) result.truncated = parsed.truncated;
  return result;
}
