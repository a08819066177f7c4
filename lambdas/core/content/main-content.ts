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
 * A listing page (a section or docs index, search results, a product grid: see "listings") is
 * rendered instead from its main region, its groups of cards and link lists as lists of links.
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
 */
import {
  CONTENT_LIMITS,
  CpuBudget,
  escapeMarkdownText,
  longestBacktickRun,
  markdownDestination,
} from '../base/index.ts';
import { type Attributes, type HtmlHandler, HtmlReader } from './main-content-html.ts';

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

// --- element kinds --------------------------------------------------------------------------------

const K_NONE = -1; // transparent: not kept, text goes to the nearest kept ancestor
const K_SKIP = -2; // content never read
const K_ROOT = 0;
const K_BOX = 1;
const K_HEADING = 2;
const K_P = 3;
const K_UL = 4;
const K_OL = 5;
const K_LI = 6;
const K_TABLE = 7;
const K_TR = 8;
const K_CELL = 9;
const K_PRE = 10;
const K_BQ = 11;
const K_HR = 12;
// inline kinds (>= K_A)
const K_A = 13;
const K_IMG = 14;
const K_BR = 15;
const K_STRONG = 16;
const K_EM = 17;
const K_CODE = 18;

const TAG_KIND = new Map<string, number>();
for (const tag of [
  'div',
  'section',
  'article',
  'main',
  'aside',
  'nav',
  'header',
  'footer',
  'form',
  'body',
  'figure',
  'center',
  'details',
  'address',
  'fieldset',
  'dl',
  'hgroup',
  'search',
]) {
  TAG_KIND.set(tag, K_BOX);
}
for (const tag of ['h1', 'h2', 'h3', 'h4', 'h5', 'h6']) TAG_KIND.set(tag, K_HEADING);
for (const tag of ['p', 'dt', 'dd', 'figcaption', 'caption', 'summary', 'legend']) TAG_KIND.set(tag, K_P);
for (const tag of [
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'iframe',
  'object',
  'embed',
  'canvas',
  'select',
  'textarea',
  'button',
  'option',
  'datalist',
  'dialog',
  'video',
  'audio',
  'map',
  'title',
  'xmp',
  'noembed',
  'noframes',
]) {
  TAG_KIND.set(tag, K_SKIP);
}
TAG_KIND.set('ul', K_UL);
TAG_KIND.set('menu', K_UL);
TAG_KIND.set('ol', K_OL);
TAG_KIND.set('li', K_LI);
TAG_KIND.set('table', K_TABLE);
TAG_KIND.set('tr', K_TR);
TAG_KIND.set('td', K_CELL);
TAG_KIND.set('th', K_CELL);
TAG_KIND.set('pre', K_PRE);
TAG_KIND.set('listing', K_PRE);
TAG_KIND.set('plaintext', K_PRE);
TAG_KIND.set('blockquote', K_BQ);
TAG_KIND.set('hr', K_HR);
TAG_KIND.set('a', K_A);
TAG_KIND.set('img', K_IMG);
TAG_KIND.set('br', K_BR);
TAG_KIND.set('strong', K_STRONG);
TAG_KIND.set('b', K_STRONG);
TAG_KIND.set('em', K_EM);
TAG_KIND.set('i', K_EM);
TAG_KIND.set('code', K_CODE);
TAG_KIND.set('kbd', K_CODE);
TAG_KIND.set('samp', K_CODE);
TAG_KIND.set('tt', K_CODE);

// flags
const F_UNLIKELY = 1;
const F_LANDMARK = 2;
const F_LAYOUT = 4; // table: layout table (nested table, one column, role=presentation)
const F_HAS_BLOCK = 8;
const F_SCORED = 16;
const F_TH = 32;
/** An ancestor is unlikely: set when the element is made, so no walk up the tree asks it again. */
const F_UNDER_UNLIKELY = 64;
/** <main> or role=main: the main region of a listing page. */
const F_MAIN = 128;
/** Listing pages (see "listings"): a container of items, an item, an ancestor of a container. */
const F_GROUP = 256;
const F_ITEM = 512;
const F_HAS_GROUP = 1024;

const POSITIVE_HINT = /article|body|content|entry|main|page|post|text|blog|story/;
const NEGATIVE_HINT =
  /comment|footer|footnote|masthead|meta|nav|sidebar|sponsor|share|social|related|cookie|banner|promo|(?:^|[\s_-])ads?(?:$|[\s_-])|advert|menu|breadcrumb|subscribe|newsletter|popup|gdpr|consent|disqus/;
/** Class/id hints of elements dropped before scoring (Readability's unlikelyCandidates, and more). */
const UNLIKELY_HINT =
  /-ad-|ad-break|banner|breadcrumb|combx|comment|community|cookie|consent|disqus|extra|footer|gdpr|header|legends|menu|related|remark|replies|rss|shoutbox|sidebar|skyscraper|social|sponsor|share|subscribe|newsletter|supplemental|agegate|pagination|pager|popup|promo/;
/** Unlikely-hint elements that are kept anyway (Readability's okMaybeItsACandidate). */
const MAYBE_CANDIDATE = /article|body|column|content|main|shadow/;
const UNLIKELY_ROLES = new Set([
  'navigation',
  'complementary',
  'contentinfo',
  'banner',
  'search',
  'dialog',
  'alertdialog',
  'menu',
  'menubar',
  'toolbar',
]);
const WS_RUN = /[\t\n\f\r ]+/g;
const NEEDS_COLLAPSE = /[\t\n\f\r]| {2}/;

class El {
  kind: number;
  tag: string;
  parent: El | null;
  kids: (El | string)[] | null = null;
  depth: number;
  flags = 0;
  /** Class/id hint weight (+25 positive, -25 negative). */
  weight = 0;
  cls: string;
  /** a: href; img: src. */
  url: string | undefined = undefined;
  /** img: alt; pre/code: language. */
  extra: string | undefined = undefined;
  /** Heading level, cell colspan, list start. */
  n = 0;
  /** The nearest table ancestor (a nested table makes it a layout table without a walk up). */
  table: El | null = null;
  textLen = 0;
  linkLen = 0;
  commas = 0;
  inlineLen = 0;
  inlineCommas = 0;
  pCount = 0;
  score = 0;
  /** Links (a with an href) in the subtree, and the first of them. */
  links = 0;
  firstLink: El | null = null;
  /** The first heading or link with text in the subtree, and the characters of text before it. */
  title: El | null = null;
  titleAt = 0;
  /** Text of the listing items in the subtree, and its paragraphs of prose outside them (markGroups). */
  itemText = 0;
  prose = 0;

  constructor(kind: number, tag: string, parent: El | null, depth: number, cls: string) {
    this.kind = kind;
    this.tag = tag;
    this.parent = parent;
    this.depth = depth;
    this.cls = cls;
  }

  add(kid: El | string): void {
    if (this.kids === null) this.kids = [kid];
    else this.kids.push(kid);
  }
}

const H_NEGATIVE = 1;
const H_POSITIVE = 2;
const H_UNLIKELY = 4;
const H_MAYBE = 8;
/** Hint bits by class or id value; pages (and sites) repeat the same few values. */
const hintCache = new Map<string, number>();

function hintsOf(value: string): number {
  let hints = hintCache.get(value);
  if (hints !== undefined) return hints;
  const lower = value.toLowerCase();
  hints =
    (NEGATIVE_HINT.test(lower) ? H_NEGATIVE : 0) |
    (POSITIVE_HINT.test(lower) ? H_POSITIVE : 0) |
    (UNLIKELY_HINT.test(lower) ? H_UNLIKELY : 0) |
    (MAYBE_CANDIDATE.test(lower) ? H_MAYBE : 0);
  if (hintCache.size >= 20_000) hintCache.clear();
  if (value.length <= 200) hintCache.set(value, hints);
  return hints;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13 || c === 12;
}

function collapse(text: string): string {
  return text.replace(WS_RUN, ' ').trim();
}

function tagBonus(el: El): number {
  switch (el.kind) {
    case K_BOX:
      if (el.tag === 'div') return 5;
      if (el.tag === 'form' || el.tag === 'address' || el.tag === 'dl') return -3;
      return 0;
    case K_PRE:
    case K_BQ:
      return 3;
    case K_CELL:
      return el.flags & F_TH ? -5 : 3;
    case K_UL:
    case K_OL:
    case K_LI:
      return -3;
    case K_HEADING:
      return -5;
    default:
      return 0;
  }
}

function contentScore(len: number, commas: number): number {
  return 1 + commas + Math.min(Math.floor(len / 100), 3);
}

function linkDensity(el: El): number {
  return el.textLen === 0 ? 0 : el.linkLen / el.textLen;
}

function finalScore(el: El): number {
  return el.score * (1 - linkDensity(el));
}

function insideUnlikely(el: El): boolean {
  return (el.flags & (F_UNLIKELY | F_UNDER_UNLIKELY)) !== 0;
}

// --- metadata -------------------------------------------------------------------------------------

interface RawMeta {
  title?: string;
  ogTitle?: string;
  description?: string;
  ogDescription?: string;
  language?: string;
  canonical?: string;
  base?: string;
  author?: string;
  publishedTime?: string;
  modifiedTime?: string;
  timeTag?: string;
  siteName?: string;
  og: Record<string, string>;
  ld: unknown[];
}

function readMeta(meta: RawMeta, attribs: Attributes): void {
  const content = attribs.get(A_CONTENT);
  if (content === undefined) return;
  const value = collapse(content);
  if (value === '') return;
  const key = (
    attribs.get(A_PROPERTY) ??
    attribs.get(A_NAME) ??
    attribs.get(A_ITEMPROP) ??
    attribs.get(A_HTTP_EQUIV)
  )?.toLowerCase();
  if (key === undefined) return;
  if (key.startsWith('og:')) {
    const prop = key.slice(3);
    if (!Object.hasOwn(meta.og, prop)) meta.og[prop] = value;
    if (prop === 'title') meta.ogTitle ??= value;
    else if (prop === 'description') meta.ogDescription ??= value;
    else if (prop === 'site_name') meta.siteName ??= value;
    else if (prop === 'published_time') meta.publishedTime ??= value;
    else if (prop === 'updated_time' || prop === 'modified_time') meta.modifiedTime ??= value;
    return;
  }
  switch (key) {
    case 'description':
      meta.description ??= value;
      return;
    case 'twitter:description':
      meta.ogDescription ??= value;
      return;
    case 'twitter:title':
      meta.ogTitle ??= value;
      return;
    case 'author':
    case 'article:author':
    case 'dc.creator':
    case 'parsely-author':
    case 'sailthru.author':
      // article:author is often a profile URL; a name is more useful when there is one.
      if (meta.author === undefined || /^https?:/.test(meta.author)) meta.author = value;
      return;
    case 'article:published_time':
    case 'datepublished':
    case 'date':
    case 'dc.date':
    case 'dc.date.issued':
    case 'parsely-pub-date':
    case 'sailthru.date':
      meta.publishedTime ??= value;
      return;
    case 'article:modified_time':
    case 'datemodified':
    case 'last-modified':
      meta.modifiedTime ??= value;
      return;
    case 'application-name':
      meta.siteName ??= value;
      return;
    case 'content-language':
      meta.language ??= value;
      return;
  }
}

/** A name, an object's `name`, or a list of those (one level: nested lists are not names). */
function ldName(value: unknown, nested = false): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    if (nested) return undefined;
    const names = value.map((item) => ldName(item, true)).filter((n): n is string => n !== undefined);
    return names.length > 0 ? names.join(', ') : undefined;
  }
  if (value !== null && typeof value === 'object') {
    const name = (value as Record<string, unknown>).name;
    return typeof name === 'string' ? name : undefined;
  }
  return undefined;
}

/**
 * JSON-LD is read a few levels deep (applyJsonLd); a block nested deeper than this is not parsed at
 * all: parsing builds every level (a hostile page's 500,000 nested arrays, whose garbage made the
 * parse grow faster than its input) for nothing that is read.
 */
const MAX_JSON_LD_NESTING = 64;

/** Whether `json`'s arrays and objects nest at most `limit` deep: one pass, strings skipped. */
function nestedWithin(json: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return false;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return true;
}

function applyJsonLd(meta: RawMeta, types: string[], node: unknown, depth: number): void {
  if (depth > 4 || node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const item of node) applyJsonLd(meta, types, item, depth + 1);
    return;
  }
  const obj = node as Record<string, unknown>;
  const type = obj['@type'];
  if (typeof type === 'string') types.push(type);
  else if (Array.isArray(type)) for (const t of type) if (typeof t === 'string') types.push(t);
  if (typeof obj.datePublished === 'string') meta.publishedTime ??= obj.datePublished;
  if (typeof obj.dateModified === 'string') meta.modifiedTime ??= obj.dateModified;
  if (obj.author !== undefined && meta.author === undefined) meta.author = ldName(obj.author);
  if (typeof obj.headline === 'string') meta.ogTitle ??= obj.headline;
  if (typeof obj.description === 'string') meta.ogDescription ??= obj.description;
  if (obj.publisher !== undefined && meta.siteName === undefined) meta.siteName = ldName(obj.publisher);
  if (obj['@graph'] !== undefined) applyJsonLd(meta, types, obj['@graph'], depth + 1);
}

function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 32) inWord = false;
    else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  return words;
}

// --- parsing --------------------------------------------------------------------------------------

/** A caller's bound: a non-negative number (Infinity allowed), else the default. */
function bound(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && value >= 0 ? value : fallback;
}

interface Parsed {
  root: El;
  candidates: El[];
  landmarks: El[];
  meta: RawMeta;
  truncated: string | undefined;
}

// The attributes the tree builder reads (the reader slices no others), by index.
const A_CLASS = 0;
const A_ID = 1;
const A_ROLE = 2;
const A_HIDDEN = 3;
const A_ARIA_HIDDEN = 4;
const A_STYLE = 5;
const A_HREF = 6;
const A_SRC = 7;
const A_DATA_SRC = 8;
const A_DATA_ORIGINAL = 9;
const A_ALT = 10;
const A_COLSPAN = 11;
const A_START = 12;
const A_LANG = 13;
const A_CONTENT = 14;
const A_PROPERTY = 15;
const A_NAME = 16;
const A_ITEMPROP = 17;
const A_HTTP_EQUIV = 18;
const A_REL = 19;
const A_DATETIME = 20;
const A_PUBDATE = 21;
const A_TYPE = 22;
const WANTED_ATTRIBUTES: ReadonlyMap<string, number> = new Map(
  [
    'class',
    'id',
    'role',
    'hidden',
    'aria-hidden',
    'style',
    'href',
    'src',
    'data-src',
    'data-original',
    'alt',
    'colspan',
    'start',
    'lang',
    'content',
    'property',
    'name',
    'itemprop',
    'http-equiv',
    'rel',
    'datetime',
    'pubdate',
    'type',
  ].map((name, i) => [name, i]),
);

/** Builds the kept-element tree and the metadata from the reader's element events. */
class TreeBuilder implements HtmlHandler {
  readonly root = new El(K_ROOT, '', null, 0, '');
  readonly candidates: El[] = [];
  readonly landmarks: El[] = [];
  readonly meta: RawMeta = { og: {}, ld: [] };
  truncated: string | undefined = undefined;
  reading = true;
  reader: HtmlReader | null = null;

  private readonly maxDepth: number;
  private readonly stopDepth: number;
  private readonly maxCells: number;
  private readonly maxText: number;
  private readonly images: boolean;
  private readonly stripUnlikely: boolean;
  private readonly budget: CpuBudget;
  private stopped = false;
  private cur: El;
  private depth = 0;
  private skipDepth = 0;
  private capture = 0; // 1: <title>, 2: JSON-LD
  private captured = '';
  private preDepth = 0;
  private aDepth = 0;
  private unlikelyDepth = 0;
  private landmarkDepth = 0;
  private cells = 0;
  private textChars = 0;
  /** The kind of the element whose start tag is being read. */
  private kind = K_NONE;

  constructor(options: MainContentOptions | undefined, stripUnlikely: boolean, budget: CpuBudget) {
    this.budget = budget;
    this.maxDepth = Math.max(1, bound(options?.maxDepth, DEFAULT_MAX_DEPTH));
    this.stopDepth = Math.max(this.maxDepth * 4, 2000);
    this.maxCells = bound(options?.maxTableCells, DEFAULT_MAX_TABLE_CELLS);
    this.maxText = bound(options?.maxTextChars, DEFAULT_MAX_TEXT_CHARS);
    this.images = options?.images === true;
    this.stripUnlikely = stripUnlikely;
    this.cur = this.root;
  }

  private addScore(from: El, score: number): void {
    let node: El | null = from;
    for (let level = 0; level < 5 && node !== null && node.kind !== K_ROOT; level++, node = node.parent) {
      if ((node.flags & F_SCORED) === 0) {
        node.flags |= F_SCORED;
        node.score = tagBonus(node) + node.weight;
        this.candidates.push(node);
      }
      node.score += level === 0 ? score : level === 1 ? score / 2 : score / (level * 3);
    }
  }

  closeEl(el: El): void {
    const parent = el.parent!;
    const kind = el.kind;
    if (kind === K_PRE) this.preDepth--;
    else if (kind === K_A) this.aDepth--;
    if (el.flags & F_LANDMARK) this.landmarkDepth--;
    const unlikely = (el.flags & F_UNLIKELY) !== 0;
    if (unlikely) this.unlikelyDepth--;
    else if (this.unlikelyDepth === 0) {
      if (
        (kind === K_P || kind === K_PRE || kind === K_CELL || kind === K_HEADING) &&
        el.textLen >= 25 &&
        el.textLen > el.linkLen
      ) {
        this.addScore(parent, contentScore(el.textLen, el.commas));
      } else if ((kind === K_BOX || kind === K_LI || kind === K_BQ) && el.inlineLen >= 25) {
        this.addScore(el, contentScore(el.inlineLen, el.inlineCommas));
      }
      // listing shape (see "listings"): a link with text is a title, and so is a heading that links
      // or is in a link; a link within the page (`#...`: tabs, "next") leads to no other page
      if (kind === K_A && el.url !== undefined && !isInPageLink(el.url)) {
        el.links++;
        el.firstLink = el;
        if (el.title === null && el.textLen > 0) el.title = el;
      } else if (kind === K_HEADING && el.textLen > 0 && (el.links > 0 || this.aDepth > 0)) {
        el.title = el;
        el.titleAt = 0;
      }
      parent.links += el.links;
      if (parent.firstLink === null) parent.firstLink = el.firstLink;
      if (parent.title === null && el.title !== null) {
        parent.title = el.title;
        parent.titleAt = parent.textLen + el.titleAt;
      }
      parent.textLen += el.textLen;
      parent.linkLen += el.linkLen;
      parent.commas += el.commas;
      parent.pCount += kind === K_P ? el.pCount + 1 : el.pCount;
      if (kind >= K_A) {
        parent.inlineLen += el.textLen;
        parent.inlineCommas += el.commas;
      } else {
        parent.flags |= F_HAS_BLOCK;
      }
    }
    this.cur = parent;
  }

  /** Closes the elements still open after the input. */
  finish(): void {
    while (this.cur !== this.root) this.closeEl(this.cur);
  }

  private stop(reason: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.reading = false;
    this.truncated = reason;
    this.reader?.pause();
  }

  onopentagname(name: string): boolean {
    if (this.stopped || this.skipDepth > 0) return false;
    const kind = TAG_KIND.get(name) ?? K_NONE;
    this.kind = kind;
    if (kind === K_SKIP) return name === 'script';
    if (kind === K_NONE) {
      return name === 'meta' || name === 'link' || name === 'html' || name === 'base' || name === 'time';
    }
    return true;
  }

  onopentag(name: string, attribs: Attributes): void {
    if (this.stopped) return;
    if (this.budget.spent()) {
      this.stop('time');
      return;
    }
    if (this.skipDepth > 0) {
      if (++this.skipDepth + this.depth > this.stopDepth) {
        this.stop(`elements nested deeper than ${this.stopDepth} levels: the rest of the page was not read`);
      }
      return;
    }
    const kind = this.kind;
    const meta = this.meta;
    if (kind === K_SKIP) {
      this.skipDepth = 1;
      if (name === 'title') {
        if (meta.title === undefined) {
          this.capture = 1;
          this.captured = '';
        }
      } else if (name === 'script' && attribs.get(A_TYPE)?.toLowerCase().includes('ld+json')) {
        this.capture = 2;
        this.captured = '';
      }
      this.reading = this.capture !== 0;
      return;
    }
    this.depth++;
    if (this.depth > this.stopDepth) {
      this.stop(`elements nested deeper than ${this.stopDepth} levels: the rest of the page was not read`);
      return;
    }
    if (kind === K_NONE) {
      switch (name) {
        case 'html': {
          const lang = attribs.get(A_LANG);
          if (lang !== undefined && lang.trim() !== '') meta.language = lang.trim();
          break;
        }
        case 'meta':
          readMeta(meta, attribs);
          break;
        case 'link': {
          const href = attribs.get(A_HREF);
          if (
            meta.canonical === undefined &&
            href !== undefined &&
            attribs.get(A_REL)?.toLowerCase().split(/\s+/).includes('canonical')
          ) {
            meta.canonical = href;
          }
          break;
        }
        case 'base': {
          const href = attribs.get(A_HREF);
          if (meta.base === undefined && href !== undefined) meta.base = href;
          break;
        }
        case 'time': {
          const datetime = attribs.get(A_DATETIME);
          if (datetime !== undefined) {
            const itemprop = attribs.get(A_ITEMPROP);
            if (itemprop === 'dateModified') meta.modifiedTime ??= datetime;
            else if (itemprop === 'datePublished' || attribs.get(A_PUBDATE) !== undefined) {
              meta.publishedTime ??= datetime;
            } else meta.timeTag ??= datetime;
          }
          break;
        }
      }
      return;
    }
    if (this.depth > this.maxDepth) {
      this.truncated ??= `elements nested deeper than ${this.maxDepth} levels were flattened`;
      return;
    }
    const cls = attribs.get(A_CLASS);
    const id = attribs.get(A_ID);
    const parent = this.cur;
    const el = new El(kind, name, parent, this.depth, cls ?? '');
    if (parent.flags & (F_UNLIKELY | F_UNDER_UNLIKELY)) el.flags |= F_UNDER_UNLIKELY;
    el.table = parent.kind === K_TABLE ? parent : parent.table;
    parent.add(el);
    this.cur = el;
    const stripUnlikely = this.stripUnlikely;
    if (cls !== undefined || id !== undefined) {
      const hints = (cls === undefined ? 0 : hintsOf(cls)) | (id === undefined ? 0 : hintsOf(id));
      if (hints & H_NEGATIVE) el.weight -= 25;
      if (hints & H_POSITIVE) el.weight += 25;
      if (
        (hints & (H_UNLIKELY | H_MAYBE)) === H_UNLIKELY &&
        stripUnlikely &&
        kind <= K_BQ &&
        name !== 'body' &&
        name !== 'article' &&
        name !== 'main'
      ) {
        el.flags |= F_UNLIKELY;
      }
    }
    if (kind < K_A && (el.flags & F_UNLIKELY) === 0) {
      const role = attribs.get(A_ROLE);
      if (!stripUnlikely) {
        if (name === 'article' || name === 'main' || role === 'main') {
          el.flags |= F_LANDMARK;
          this.landmarkDepth++;
          this.landmarks.push(el);
        }
      } else if (
        name === 'nav' ||
        name === 'aside' ||
        name === 'footer' ||
        (name === 'header' && this.landmarkDepth === 0) ||
        attribs.get(A_HIDDEN) !== undefined ||
        attribs.get(A_ARIA_HIDDEN) === 'true' ||
        (role !== undefined && UNLIKELY_ROLES.has(role)) ||
        hiddenByStyle(attribs.get(A_STYLE))
      ) {
        el.flags |= F_UNLIKELY;
      } else if (name === 'article' || name === 'main' || role === 'main') {
        el.flags |= F_LANDMARK;
        if (name === 'main' || role === 'main') el.flags |= F_MAIN;
        this.landmarkDepth++;
        this.landmarks.push(el);
      }
    }
    if (el.flags & F_UNLIKELY) this.unlikelyDepth++;
    switch (kind) {
      case K_A:
        this.aDepth++;
        el.url = attribs.get(A_HREF);
        break;
      case K_IMG:
        if (this.images) {
          let src = attribs.get(A_SRC);
          if (src === undefined || src === '' || src.startsWith('data:')) {
            src = attribs.get(A_DATA_SRC) ?? attribs.get(A_DATA_ORIGINAL) ?? src;
          }
          el.url = src;
          el.extra = attribs.get(A_ALT);
        }
        break;
      case K_HEADING:
        el.n = name.charCodeAt(1) - 48;
        break;
      case K_OL: {
        const value = attribs.get(A_START);
        const start = value === undefined ? Number.NaN : Number.parseInt(value, 10);
        el.n = Number.isFinite(start) ? start : 1;
        break;
      }
      case K_CELL: {
        if (name === 'th') el.flags |= F_TH;
        const value = attribs.get(A_COLSPAN);
        const span = value === undefined ? 1 : Number.parseInt(value, 10);
        el.n = Number.isFinite(span) && span > 1 ? Math.min(span, 100) : 1;
        if (++this.cells > this.maxCells) {
          this.stop(`more than ${this.maxCells} table cells: the rest of the page was not read`);
        }
        break;
      }
      case K_TABLE: {
        if (attribs.get(A_ROLE) === 'presentation') el.flags |= F_LAYOUT;
        if (el.table !== null) el.table.flags |= F_LAYOUT;
        break;
      }
      case K_PRE:
      case K_CODE: {
        if (kind === K_PRE) this.preDepth++;
        const lang = cls === undefined ? undefined : /(?:^|\s)lang(?:uage)?-([\w+#.-]+)/.exec(cls)?.[1];
        if (lang !== undefined) el.extra = lang;
        break;
      }
    }
  }

  onclosetag(): void {
    if (this.stopped) return;
    if (this.skipDepth > 0) {
      if (--this.skipDepth === 0) {
        const capture = this.capture;
        if (capture !== 0) {
          const meta = this.meta;
          if (capture === 1) {
            const title = collapse(this.captured);
            if (title !== '') meta.title = title;
          } else if (meta.ld.length < 20 && nestedWithin(this.captured, MAX_JSON_LD_NESTING)) {
            try {
              meta.ld.push(JSON.parse(this.captured));
            } catch {
              // invalid JSON-LD is ignored
            }
          }
          this.capture = 0;
          this.captured = '';
        }
        this.reading = true;
      }
      return;
    }
    if (this.cur.depth === this.depth) this.closeEl(this.cur);
    this.depth--;
  }

  ontext(source: string, start: number, end: number): void {
    if (this.stopped || start >= end) return;
    if (this.budget.spent()) {
      this.stop('time');
      return;
    }
    if (this.skipDepth > 0) {
      if (this.capture !== 0) {
        const room =
          (this.capture === 1 ? CONTENT_LIMITS.titleChars : CONTENT_LIMITS.jsonLdChars) -
          this.captured.length;
        if (room > 0) this.captured += source.slice(start, Math.min(end, start + room));
      }
      return;
    }
    const cur = this.cur;
    let value: string;
    let len = 0;
    let commas = 0;
    if (this.preDepth > 0) {
      value = source.slice(start, end);
      len = value.length;
      for (let j = value.indexOf(','); j !== -1; j = value.indexOf(',', j + 1)) commas++;
    } else {
      // whitespace between elements is the most common text: one space keeps inline neighbours apart
      let i = start;
      while (i < end && isSpace(source.charCodeAt(i))) i++;
      if (i === end) {
        // only after inline content: between blocks (indentation) a space means nothing
        const kids = cur.kids;
        if (kids === null) {
          if (cur.kind >= K_A) cur.add(' ');
          return;
        }
        const last = kids[kids.length - 1]!;
        if (typeof last !== 'string') {
          if (last.kind >= K_A) cur.add(' ');
        } else if (last.charCodeAt(last.length - 1) !== 32) kids[kids.length - 1] = `${last} `;
        return;
      }
      value = source.slice(start, end);
      if (NEEDS_COLLAPSE.test(value)) value = value.replace(WS_RUN, ' ');
      len = value.length;
      for (let j = value.indexOf(','); j !== -1; j = value.indexOf(',', j + 1)) commas++;
    }
    if (this.textChars + value.length > this.maxText) {
      value = value.slice(0, Math.max(0, this.maxText - this.textChars));
      this.stop(`more than ${this.maxText} characters of text: the rest of the page was not read`);
    }
    this.textChars += value.length;
    // One string per run of text: the tokenizer splits text at entities (`&amp;lt;` is `&` then
    // `lt;`), and the Markdown escaping must see the run whole.
    const kids = cur.kids;
    const last = kids === null ? undefined : kids[kids.length - 1];
    if (typeof last === 'string') kids![kids!.length - 1] = last + value;
    else cur.add(value);
    cur.textLen += len;
    cur.inlineLen += len;
    cur.commas += commas;
    cur.inlineCommas += commas;
    if (this.aDepth > 0) cur.linkLen += len;
  }
}

const HIDDEN_STYLE = /display\s*:\s*none|visibility\s*:\s*hidden/i;

function hiddenByStyle(style: string | undefined): boolean {
  return style !== undefined && HIDDEN_STYLE.test(style);
}

function parse(
  html: string,
  options: MainContentOptions | undefined,
  stripUnlikely: boolean,
  budget: CpuBudget,
): Parsed {
  const builder = new TreeBuilder(options, stripUnlikely, budget);
  const reader = new HtmlReader(html, builder, WANTED_ATTRIBUTES);
  builder.reader = reader;
  reader.run();
  builder.finish();
  const { root, candidates, landmarks, meta, truncated } = builder;
  return { root, candidates, landmarks, meta, truncated };
}

// --- choosing the content -------------------------------------------------------------------------

function chooseContent(parsed: Parsed): El[] {
  const { root, candidates, landmarks } = parsed;
  let landmark: El | undefined;
  for (const el of landmarks) {
    if ((landmark === undefined || el.textLen > landmark.textLen) && !insideUnlikely(el)) landmark = el;
  }
  if (landmark !== undefined && landmark.textLen > 0 && landmark.textLen * 2 >= root.textLen)
    return [landmark];

  // the 5 best candidates, best first
  const best: El[] = [];
  const bestScores: number[] = [];
  for (const el of candidates) {
    const score = finalScore(el);
    if (best.length === 5 && score <= bestScores[4]!) continue;
    if (insideUnlikely(el)) continue;
    let i = best.length < 5 ? best.length : 4;
    while (i > 0 && bestScores[i - 1]! < score) {
      best[i] = best[i - 1]!;
      bestScores[i] = bestScores[i - 1]!;
      i--;
    }
    best[i] = el;
    bestScores[i] = score;
  }
  let top = best[0];
  if (top === undefined) return [root];
  const topScore = bestScores[0]!;

  // Readability: when 3+ of the other good candidates (75% of the top score) share an ancestor of
  // the top candidate, that ancestor holds the article (its parts are split in sections).
  const shared = new Map<El, number>();
  for (let i = 1; i < best.length; i++) {
    if (bestScores[i]! < topScore * 0.75) continue;
    for (let p = best[i]!.parent; p !== null && p.kind !== K_ROOT; p = p.parent) {
      shared.set(p, (shared.get(p) ?? 0) + 1);
    }
  }
  if (shared.size > 0) {
    for (let p = top.parent; p !== null && p.kind !== K_ROOT && p.tag !== 'body'; p = p.parent) {
      if ((shared.get(p) ?? 0) >= 3) {
        top = p;
        break;
      }
    }
  }

  // Readability: move up while the parent scores better (not too much lower), then past only-children.
  let lastScore = finalScore(top);
  const threshold = lastScore / 3;
  for (let p = top.parent; p !== null && p.kind !== K_ROOT && p.tag !== 'body'; p = p.parent) {
    if ((p.flags & F_SCORED) === 0) continue;
    const score = finalScore(p);
    if (score < threshold) break;
    if (score > lastScore) {
      top = p;
      break;
    }
    lastScore = score;
  }
  for (let p = top.parent; p !== null && p.kind !== K_ROOT && p.tag !== 'body'; p = p.parent) {
    let elements = 0;
    for (const kid of p.kids ?? []) if (typeof kid !== 'string') elements++;
    if (elements !== 1) break;
    top = p;
  }

  const parent = top.parent;
  if (parent === null || parent.kind === K_ROOT) return [top];
  const score = finalScore(top);
  const siblingThreshold = Math.max(10, score * 0.2);
  const chosen: El[] = [];
  for (const kid of parent.kids ?? []) {
    if (typeof kid === 'string') continue;
    if (kid === top) {
      chosen.push(kid);
      continue;
    }
    if (kid.flags & F_UNLIKELY) continue;
    let append = false;
    const bonus = kid.cls !== '' && kid.cls === top.cls ? score * 0.2 : 0;
    if ((kid.flags & F_SCORED) !== 0 && finalScore(kid) + bonus >= siblingThreshold) append = true;
    else if (kid.kind === K_P) {
      const density = linkDensity(kid);
      if (kid.textLen > 80 && density < 0.25) append = true;
      else if (kid.textLen > 0 && kid.textLen <= 80 && density === 0 && endsWithPeriod(kid)) append = true;
    }
    if (append) chosen.push(kid);
  }
  return chosen;
}

function endsWithPeriod(el: El): boolean {
  const kids = el.kids;
  if (kids === null) return false;
  for (let i = kids.length - 1; i >= 0; i--) {
    const kid = kids[i]!;
    if (typeof kid !== 'string') return false;
    const t = kid.trimEnd();
    if (t !== '') return t.endsWith('.');
  }
  return false;
}

// --- listings -------------------------------------------------------------------------------------

/*
 * A listing page (a section index, docs index, category or tag page, search results, a product grid)
 * is mostly link lists and cards, which the article rules drop as link-dense. Its main region is the
 * <main> (or the landmark chosen), else the page; in it a group is a container with at least
 * LISTING_MIN_ITEMS items of one tag making up at least half of its blocks, an item a block that
 * starts with its title (a heading or a link with text, within ITEM_LEAD_CHARS characters), has a
 * link and at most ITEM_MAX_LINKS, and holds no group itself. When the groups' items hold at least
 * LISTING_SHARE of the region's text, the region is rendered with each group as a Markdown list of
 * `- [Title](url) — description`. Otherwise nothing changes, and neither does it when the region
 * has ARTICLE_PARAGRAPHS paragraphs of prose outside the groups, or the content chosen by the
 * article rules has that many or ARTICLE_PROSE_CHARS of text outside them (a story with boxes of
 * links around it).
 * Navigation, footers, share bars and pagination stay out as before (unlikely elements are never
 * looked at). One walk over the region, each item's text read once: linear.
 */
const LISTING_MIN_ITEMS = 3;
const ITEM_LEAD_CHARS = 80;
const ITEM_MAX_LINKS = 4;
const LISTING_SHARE = 0.5;
const ARTICLE_PROSE_CHARS = 500;
const ARTICLE_PARAGRAPHS = 3;
const PROSE_PARAGRAPH_CHARS = 80;

/** Paragraphs of prose (not link text) in `el` and its subtree, outside listing items. */
function proseIn(el: El): number {
  const own = el.kind === K_P && el.textLen >= PROSE_PARAGRAPH_CHARS && el.linkLen * 2 < el.textLen ? 1 : 0;
  return el.prose + own;
}

function isInPageLink(href: string): boolean {
  const trimmed = href.trim();
  return trimmed === '' || trimmed.charCodeAt(0) === 35; // '#'
}

function isItem(el: El): boolean {
  const kind = el.kind;
  if (kind !== K_LI && kind !== K_BOX && kind !== K_P && !(kind === K_A && el.flags & F_HAS_BLOCK))
    return false;
  return (
    (el.flags & (F_UNLIKELY | F_HAS_GROUP | F_MAIN)) === 0 &&
    el.title !== null &&
    // a paragraph is an item only when it starts with its link (a <dt>), not prose with a link in it
    el.titleAt <= (kind === K_P ? 0 : ITEM_LEAD_CHARS) &&
    el.links > 0 &&
    el.links <= ITEM_MAX_LINKS
  );
}

/** Marks the groups under `el` and their items (post-order); returns the text of their items. */
function markGroups(el: El): number {
  const kids = el.kids;
  if (kids === null) return 0;
  let text = 0;
  let items = 0;
  let blocks = 0;
  let prose = 0;
  for (const kid of kids) {
    if (typeof kid === 'string' || kid.flags & F_UNLIKELY) continue;
    if (kid.kind < K_A || kid.flags & F_HAS_BLOCK) {
      const inner = markGroups(kid);
      prose += proseIn(kid);
      if (inner > 0 || kid.flags & F_GROUP) {
        kid.flags |= F_HAS_GROUP;
        text += inner;
      }
      if (kid.kind !== K_HEADING) blocks++;
      if (isItem(kid)) items++;
    }
  }
  el.itemText = text;
  el.prose = prose;
  if (items < LISTING_MIN_ITEMS || items * 2 < blocks) return text;
  // the items of the most common tag: a group is one kind of card
  const byTag = new Map<string, number>();
  let tag = '';
  let most = 0;
  for (const kid of kids) {
    if (typeof kid === 'string' || !isItem(kid)) continue;
    const n = (byTag.get(kid.tag) ?? 0) + 1;
    byTag.set(kid.tag, n);
    if (n > most) {
      most = n;
      tag = kid.tag;
    }
  }
  if (most < LISTING_MIN_ITEMS || most * 2 < blocks) return text;
  el.flags |= F_GROUP;
  for (const kid of kids) {
    if (typeof kid === 'string' || kid.tag !== tag || !isItem(kid)) continue;
    prose -= proseIn(kid);
    kid.flags |= F_ITEM;
    kid.itemText = kid.textLen;
    text += kid.textLen;
  }
  el.itemText = text;
  el.prose = prose;
  return text;
}

/** The region to render as a listing page, or null when the page is not one (see above). */
function listingRegion(parsed: Parsed, chosen: El[]): El | null {
  let region: El = parsed.root;
  if (chosen.length === 1 && chosen[0]!.flags & F_LANDMARK) region = chosen[0]!;
  else {
    for (const el of parsed.landmarks) {
      if (
        el.flags & F_MAIN &&
        !insideUnlikely(el) &&
        (region === parsed.root || el.textLen > region.textLen)
      ) {
        region = el;
      }
    }
  }
  const itemText = markGroups(region);
  if (itemText === 0 || itemText < region.textLen * LISTING_SHARE) return null;
  // a story (link boxes around it, or links in its lists) stays an article
  if (proseIn(region) >= ARTICLE_PARAGRAPHS) return null;
  if (chosen.length === 1 && chosen[0] === region) return region;
  let chars = 0;
  let paragraphs = 0;
  for (const el of chosen) {
    chars += el.textLen - el.itemText;
    if ((el.flags & F_ITEM) === 0) paragraphs += proseIn(el);
  }
  return chars < ARTICLE_PROSE_CHARS && paragraphs < ARTICLE_PARAGRAPHS ? region : null;
}

/**
 * The text of `el` without the subtree `skip`, as one line, reading no further than `cap`
 * characters (a megabyte card costs what its first `cap` characters do, plus its elements).
 */
function lineText(el: El, skip: El | null, cap: number): string {
  const parts: string[] = [];
  let length = 0;
  const walk = (node: El): boolean => {
    for (const kid of node.kids ?? []) {
      if (typeof kid === 'string') {
        const room = cap - length + 1;
        parts.push(kid.length > room ? kid.slice(0, room) : kid);
        length += kid.length;
      } else if (kid !== skip && (kid.flags & F_UNLIKELY) === 0) {
        if (kid.kind < K_A || kid.kind === K_BR) {
          parts.push(' ');
          length++;
        }
        if (kid.kind !== K_BR && !walk(kid)) return false;
        if (kid.kind < K_A) parts.push(' ');
      }
      if (length > cap) return false;
    }
    return true;
  };
  const whole = walk(el);
  let line = collapse(parts.join(''));
  if (!whole || line.length > cap) {
    let end = cap;
    // not between the halves of a surrogate pair
    if (end > 0 && (line.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
    line = `${line.slice(0, end).trimEnd()}…`;
  }
  return line;
}

// --- rendering ------------------------------------------------------------------------------------

/**
 * Quotes and lists nested deeper than this render as plain blocks: each level re-indents its whole
 * content, so deep nesting would cost depth × size.
 */
const MAX_RENDER_NEST = 32;

class Inline {
  md: string[] = [];
  tx = '';
  /** The output is empty or ends with whitespace: a leading space of the next text is dropped. */
  ws = true;
  /** Nothing but white space since the start or the last hard break: text there is escaped as a line start. */
  lineStart = true;
}

/** Thrown by the renderer when the CPU budget is spent (extractMainContent catches it). */
class OutOfTime extends Error {}

class Renderer {
  readonly base: string;
  readonly images: boolean;
  clean: boolean;
  /** Render groups as link lists (a listing page; see "listings"). */
  listing = false;
  /** Quotes and lists being rendered around the current element (their prefixes re-indent text). */
  private nest = 0;
  private strong = 0;
  private em = 0;
  private code = 0;
  private link = 0;
  private readonly budget: CpuBudget;

  constructor(base: string, images: boolean, clean: boolean, budget: CpuBudget) {
    this.base = base;
    this.images = images;
    this.clean = clean;
    this.budget = budget;
  }

  private tick(): void {
    if (this.budget.spent()) throw new OutOfTime();
  }

  resolve(href: string | undefined, image: boolean): string | undefined {
    if (href === undefined) return undefined;
    const trimmed = href.trim();
    if (trimmed === '' && image) return undefined;
    const url = URL.parse(trimmed, this.base);
    if (url === null) return undefined;
    const protocol = url.protocol;
    if (protocol !== 'http:' && protocol !== 'https:' && (image || protocol !== 'mailto:')) return undefined;
    return markdownDestination(url.href);
  }

  /** Whether a kept element inside the content is dropped. */
  dropped(el: El): boolean {
    if (!this.clean) return false;
    if (el.flags & F_UNLIKELY) return true;
    if (this.listing && el.flags & (F_GROUP | F_HAS_GROUP)) return false;
    const kind = el.kind;
    if (kind === K_HEADING) return el.weight < 0;
    if (kind === K_BOX || kind === K_UL || kind === K_OL || kind === K_BQ) {
      if (el.tag === 'form') return true;
      if (el.commas >= 10) return false;
      const density = linkDensity(el);
      return density > 0.5 || (el.weight < 0 && density > 0.2);
    }
    return false;
  }

  /** Renders the children of `el` as blocks; runs of inline content become paragraphs. */
  flow(el: El, md: string[], tx: string[]): void {
    const kids = el.kids;
    if (kids === null) return;
    let inline: Inline | null = null;
    for (const kid of kids) {
      if (typeof kid === 'string' || kid.kind >= K_A) {
        if (inline === null) {
          if (typeof kid === 'string' && kid === ' ') continue;
          inline = new Inline();
        }
        if (typeof kid === 'string') this.text(inline, kid);
        else this.inline(kid, inline);
        continue;
      }
      if (inline !== null) {
        this.flushParagraph(inline, md, tx);
        inline = null;
      }
      if (!this.dropped(kid)) this.block(kid, md, tx);
    }
    if (inline !== null) this.flushParagraph(inline, md, tx);
  }

  flushParagraph(inline: Inline, md: string[], tx: string[]): void {
    const m = inline.md.join('').trim();
    if (m === '') return;
    md.push(m);
    tx.push(inline.tx.trim());
  }

  block(el: El, md: string[], tx: string[]): void {
    this.tick();
    if (this.listing && el.flags & F_GROUP) {
      this.group(el, md, tx);
      return;
    }
    switch (el.kind) {
      case K_HEADING: {
        const inline = this.inlineOf(el);
        let m = inline.md.join('').trim();
        if (m === '') return;
        if (m.includes('\n')) m = collapse(m);
        md.push(`${'#'.repeat(el.n)} ${m}`);
        tx.push(collapse(inline.tx));
        return;
      }
      case K_UL:
      case K_OL:
        this.list(el, md, tx);
        return;
      case K_TABLE:
        this.table(el, md, tx);
        return;
      case K_PRE: {
        const raw = rawText(el);
        // trimEnd, not /\s+$/: that regex is quadratic in a long run of spaces followed by text
        const body = (raw.startsWith('\n') ? raw.slice(1) : raw).trimEnd();
        if (body.trim() === '') return;
        // a fence longer than any run of backticks in the body (found in one pass)
        const fence = '`'.repeat(Math.max(3, longestBacktickRun(body) + 1));
        const lang = el.extra ?? firstCodeLanguage(el) ?? '';
        md.push(`${fence}${lang}\n${body}\n${fence}`);
        tx.push(body);
        return;
      }
      case K_BQ: {
        if (this.nest >= MAX_RENDER_NEST) {
          this.flow(el, md, tx);
          return;
        }
        const subMd: string[] = [];
        const subTx: string[] = [];
        this.nest++;
        this.flow(el, subMd, subTx);
        this.nest--;
        if (subMd.length === 0) return;
        md.push(
          subMd
            .join('\n\n')
            .split('\n')
            .map((line) => (line === '' ? '>' : `> ${line}`))
            .join('\n'),
        );
        tx.push(subTx.join('\n\n'));
        return;
      }
      case K_HR:
        md.push('---');
        return;
      default:
        // containers, list items and rows outside their usual parents
        this.flow(el, md, tx);
    }
  }

  /** A group of a listing page: its items as one list, its other blocks as they are. */
  group(el: El, md: string[], tx: string[]): void {
    const kids = el.kids ?? [];
    let entries: string[] = [];
    let texts: string[] = [];
    const flush = (): void => {
      if (entries.length === 0) return;
      md.push(entries.join('\n'));
      tx.push(texts.join('\n'));
      entries = [];
      texts = [];
    };
    for (let i = 0; i < kids.length; i++) {
      const kid = kids[i]!;
      if (typeof kid === 'string') continue; // separators between cards
      if (kid.flags & F_ITEM) {
        // a <dd> after its <dt> describes it
        let next = kids[i + 1];
        if (typeof next === 'string' && next.trim() === '') next = kids[i + 2];
        const dd = typeof next !== 'string' && next?.tag === 'dd' && !(next.flags & F_ITEM) ? next : null;
        if (dd !== null) i = kids.indexOf(dd, i);
        this.entry(kid, dd, entries, texts);
        continue;
      }
      flush();
      if (kid.kind >= K_A) {
        const inline = new Inline();
        this.inline(kid, inline);
        this.flushParagraph(inline, md, tx);
      } else if (!this.dropped(kid)) this.block(kid, md, tx);
    }
    flush();
  }

  /** One item: `- [Title](url) — description`, page text escaped, the link http(s) only. */
  entry(item: El, more: El | null, entries: string[], texts: string[]): void {
    this.tick();
    const title = item.title!;
    const anchor = title.kind === K_A ? title : (title.firstLink ?? item.firstLink);
    const resolved = anchor === null ? undefined : this.resolve(anchor.url, false);
    const url = resolved?.startsWith('http') ? resolved : undefined;
    const name = lineText(title, null, CONTENT_LIMITS.titleChars);
    const cap = CONTENT_LIMITS.itemDescriptionChars;
    let about = lineText(item, title, cap);
    if (more !== null && about.length < cap) {
      const added = lineText(more, null, cap - about.length);
      if (added !== '') about = about === '' ? added : `${about} ${added}`;
    }
    if (name === '' && about === '') return;
    const head = name === '' ? '' : escapeMarkdownText(name, false);
    const linked = url === undefined || head === '' ? head : `[${head}](${url})`;
    const tail = about === '' ? '' : `${linked === '' ? '' : ' — '}${escapeMarkdownText(about, false)}`;
    entries.push(`- ${linked}${tail}`);
    texts.push(`${name}${about === '' ? '' : `${name === '' ? '' : ' — '}${about}`}`);
  }

  list(el: El, md: string[], tx: string[]): void {
    const kids = el.kids;
    if (kids === null) return;
    if (this.nest >= MAX_RENDER_NEST) {
      this.flow(el, md, tx);
      return;
    }
    this.nest++;
    try {
      this.listItems(el, kids, md, tx);
    } finally {
      this.nest--;
    }
  }

  listItems(el: El, kids: (El | string)[], md: string[], tx: string[]): void {
    const ordered = el.kind === K_OL;
    let number = ordered ? el.n : 0;
    const items: string[] = [];
    const texts: string[] = [];
    let loose: El | null = null;
    const flushLoose = (): void => {
      if (loose === null) return;
      this.item(loose, ordered ? `${number++}. ` : '- ', items, texts);
      loose = null;
    };
    for (const kid of kids) {
      if (typeof kid === 'string' || kid.kind >= K_A) {
        // stray inline content directly in the list: an item of its own
        if (typeof kid === 'string' && kid.trim() === '') continue;
        loose ??= new El(K_LI, 'li', el, el.depth + 1, '');
        loose.add(kid);
        continue;
      }
      flushLoose();
      if (this.dropped(kid)) continue;
      if (kid.kind === K_LI) {
        this.item(kid, ordered ? `${number++}. ` : '- ', items, texts);
      } else {
        // a list or block directly in a list (invalid, common): part of the previous item
        const subMd: string[] = [];
        const subTx: string[] = [];
        this.block(kid, subMd, subTx);
        if (subMd.length === 0) continue;
        const indent = ordered ? '   ' : '  ';
        const body = indent + subMd.join('\n').replaceAll('\n', `\n${indent}`);
        items.push(body);
        texts.push(subTx.join('\n'));
      }
    }
    flushLoose();
    if (items.length === 0) return;
    md.push(items.join('\n'));
    tx.push(texts.join('\n'));
  }

  item(li: El, marker: string, items: string[], texts: string[]): void {
    const subMd: string[] = [];
    const subTx: string[] = [];
    this.flow(li, subMd, subTx);
    if (subMd.length === 0) return;
    const indent = ' '.repeat(marker.length);
    items.push(marker + subMd.join('\n').replaceAll('\n', `\n${indent}`));
    texts.push(subTx.join('\n'));
  }

  table(el: El, md: string[], tx: string[]): void {
    const rows: El[] = [];
    const before: El[] = [];
    let columns = 0;
    for (const kid of el.kids ?? []) {
      if (typeof kid === 'string') continue;
      if (kid.kind === K_TR) {
        rows.push(kid);
        let width = 0;
        for (const cell of kid.kids ?? [])
          if (typeof cell !== 'string' && cell.kind === K_CELL) width += cell.n;
        if (width > columns) columns = width;
      } else before.push(kid);
    }
    if (el.flags & F_LAYOUT || columns < 2) {
      this.flow(el, md, tx);
      return;
    }
    for (const kid of before) if (!this.dropped(kid)) this.block(kid, md, tx);
    const lines: string[] = [];
    const textRows: string[] = [];
    for (const row of rows) {
      const cells: string[] = [];
      const cellTexts: string[] = [];
      for (const cell of row.kids ?? []) {
        if (typeof cell === 'string' || cell.kind !== K_CELL) continue;
        const subMd: string[] = [];
        const subTx: string[] = [];
        this.flow(cell, subMd, subTx);
        let m = subMd.join(' ');
        if (m.includes('\n')) m = collapse(m);
        // text has its `|` escaped already; those of link URLs and code spans would end the cell
        if (m.includes('|')) m = escapeCellPipes(m);
        cells.push(m);
        cellTexts.push(collapse(subTx.join(' ')));
        for (let i = 1; i < cell.n; i++) {
          cells.push('');
          cellTexts.push('');
        }
      }
      if (cells.length === 0) continue;
      // only the header row needs every column (GFM pads shorter rows): padding each row would cost
      // rows × columns, quadratic in the cells of a table with one wide row
      if (lines.length === 0) while (cells.length < columns) cells.push('');
      lines.push(`| ${cells.join(' | ')} |`);
      textRows.push(cellTexts.join('\t').trimEnd());
      if (lines.length === 1) lines.push(`|${' --- |'.repeat(columns)}`);
    }
    if (lines.length === 0) return;
    md.push(lines.join('\n'));
    tx.push(textRows.join('\n'));
  }

  inlineOf(el: El): Inline {
    const inline = new Inline();
    for (const kid of el.kids ?? []) {
      if (typeof kid === 'string') this.text(inline, kid);
      else this.inline(kid, inline);
    }
    return inline;
  }

  text(inline: Inline, value: string): void {
    let v = value;
    if (inline.ws && v.charCodeAt(0) === 32) v = v.slice(1);
    if (v === '') return;
    this.tick();
    // code span content is literal; other text is escaped so that only our constructs are Markdown
    inline.md.push(this.code > 0 ? v : escapeMarkdownText(v, inline.lineStart));
    inline.tx += v;
    inline.ws = v.charCodeAt(v.length - 1) === 32;
    if (inline.lineStart && v.trim() !== '') inline.lineStart = false;
  }

  /** Renders `el` and its subtree into the current paragraph. */
  inline(el: El, inline: Inline): void {
    this.tick();
    switch (el.kind) {
      case K_BR:
        inline.md.push('  \n');
        inline.tx += '\n';
        inline.ws = true;
        inline.lineStart = true;
        return;
      case K_IMG: {
        if (!this.images) return;
        const url = this.resolve(el.url, true);
        if (url === undefined) return;
        const alt = el.extra === undefined ? '' : escapeMarkdownText(collapse(el.extra), false);
        inline.md.push(`![${alt}](${url})`);
        inline.ws = false;
        return;
      }
      case K_A: {
        const url = this.link === 0 ? this.resolve(el.url, false) : undefined;
        if (url === undefined) {
          this.children(el, inline);
          return;
        }
        this.link++;
        this.wrap(el, inline, '[', `](${url})`);
        this.link--;
        return;
      }
      case K_STRONG:
        if (this.strong > 0) this.children(el, inline);
        else {
          this.strong++;
          this.wrap(el, inline, '**', '**');
          this.strong--;
        }
        return;
      case K_EM:
        if (this.em > 0) this.children(el, inline);
        else {
          this.em++;
          this.wrap(el, inline, '*', '*');
          this.em--;
        }
        return;
      case K_CODE:
        if (this.code > 0) this.children(el, inline);
        else {
          this.code++;
          const start = inline.md.length;
          this.children(el, inline);
          const inner = inline.md.splice(start).join('');
          const fence = '`'.repeat(longestBacktickRun(inner) + 1);
          const pad = fence.length > 1 ? ' ' : '';
          this.put(inline, inner, `${fence}${pad}`, `${pad}${fence}`);
          this.code--;
        }
        return;
      default: {
        // a block inside inline content (<a><div>...</div></a>): its text, set apart by spaces
        if (this.clean && this.dropped(el)) return;
        this.text(inline, ' ');
        if (el.kind === K_PRE) this.text(inline, collapse(rawText(el)));
        else this.children(el, inline);
        this.text(inline, ' ');
      }
    }
  }

  children(el: El, inline: Inline): void {
    for (const kid of el.kids ?? []) {
      if (typeof kid === 'string') this.text(inline, kid);
      else this.inline(kid, inline);
    }
  }

  wrap(el: El, inline: Inline, open: string, close: string): void {
    const start = inline.md.length;
    this.children(el, inline);
    this.put(inline, inline.md.splice(start).join(''), open, close);
  }

  /** Puts `inner` back wrapped in open/close, with its edge spaces outside the markers. */
  put(inline: Inline, inner: string, open: string, close: string): void {
    const trimmed = inner.trim();
    if (trimmed === '') {
      if (inner !== '') inline.md.push(inner);
      return;
    }
    const lead = trimmed.length < inner.length && inner.charCodeAt(0) !== trimmed.charCodeAt(0) ? ' ' : '';
    const trail = inner.charCodeAt(inner.length - 1) !== trimmed.charCodeAt(trimmed.length - 1) ? ' ' : '';
    inline.md.push(`${lead}${open}${trimmed}${close}${trail}`);
  }
}

/** A backslash before each `|` that is not escaped yet (an odd run of backslashes escapes it). */
function escapeCellPipes(md: string): string {
  const parts: string[] = [];
  let last = 0;
  let backslashes = 0;
  for (let i = 0; i < md.length; i++) {
    const c = md.charCodeAt(i);
    if (c === 124 && backslashes % 2 === 0) {
      parts.push(md.slice(last, i), '\\');
      last = i;
    }
    backslashes = c === 92 ? backslashes + 1 : 0;
  }
  parts.push(md.slice(last));
  return parts.join('');
}

function rawText(el: El): string {
  let out = '';
  for (const kid of el.kids ?? []) {
    if (typeof kid === 'string') out += kid;
    else if (kid.kind === K_BR) out += '\n';
    else out += rawText(kid);
  }
  return out;
}

function firstCodeLanguage(el: El): string | undefined {
  for (const kid of el.kids ?? []) if (typeof kid !== 'string' && kid.kind === K_CODE) return kid.extra;
  return undefined;
}

// --- entry point ----------------------------------------------------------------------------------

function renderAll(roots: El[], renderer: Renderer): { markdown: string; text: string } {
  const md: string[] = [];
  const tx: string[] = [];
  for (const el of roots) {
    if (renderer.listing && el.flags & F_GROUP) renderer.group(el, md, tx);
    else if (
      el.kind === K_ROOT ||
      el.kind === K_BOX ||
      el.kind === K_LI ||
      el.kind === K_TR ||
      el.kind === K_CELL
    ) {
      renderer.flow(el, md, tx);
    } else if (el.kind >= K_A) {
      const inline = new Inline();
      renderer.inline(el, inline);
      renderer.flushParagraph(inline, md, tx);
    } else renderer.block(el, md, tx);
  }
  return { markdown: md.join('\n\n'), text: tx.join('\n\n') };
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
    parsed = parse(source, options, true, budget);
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
      parsed = parse(source, options, false, budget);
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
