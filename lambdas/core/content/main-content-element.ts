/**
 * The vocabulary of the main-content tree (main-content.ts): element kinds and the tag table, flags,
 * the kept-element node `El` with the counts the scoring reads, the class/id hints, the attributes the
 * reader slices, and the Readability score arithmetic over a node. Apart because every stage of the
 * pipeline (tree building, choosing, listings, rendering) speaks it and none owns it.
 */

// --- element kinds -------------------------------------------------------------------------------

export const K_NONE = -1; // transparent: not kept, text goes to the nearest kept ancestor
export const K_SKIP = -2; // content never read
export const K_ROOT = 0;
export const K_BOX = 1;
export const K_HEADING = 2;
export const K_P = 3;
export const K_UL = 4;
export const K_OL = 5;
export const K_LI = 6;
export const K_TABLE = 7;
export const K_TR = 8;
export const K_CELL = 9;
export const K_PRE = 10;
export const K_BQ = 11;
export const K_HR = 12;
// inline kinds (>= K_A)
export const K_A = 13;
export const K_IMG = 14;
export const K_BR = 15;
export const K_STRONG = 16;
export const K_EM = 17;
export const K_CODE = 18;

export const TAG_KIND = new Map<string, number>();
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

// --- flags ---------------------------------------------------------------------------------------

export const F_UNLIKELY = 1;
export const F_LANDMARK = 2;
export const F_LAYOUT = 4; // table: layout table (nested table, one column, role=presentation)
export const F_HAS_BLOCK = 8;
export const F_SCORED = 16;
export const F_TH = 32;
/** An ancestor is unlikely: set when the element is made, so no walk up the tree asks it again. */
export const F_UNDER_UNLIKELY = 64;
/** <main> or role=main: the main region of a listing page. */
export const F_MAIN = 128;
/** Listing pages (main-content-listing.ts): a container of items, an item, an ancestor of a container. */
export const F_GROUP = 256;
export const F_ITEM = 512;
export const F_HAS_GROUP = 1024;

export class El {
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

// --- class, id, role and style hints -------------------------------------------------------------

const POSITIVE_HINT = /article|body|content|entry|main|page|post|text|blog|story/;
const NEGATIVE_HINT =
  /comment|footer|footnote|masthead|meta|nav|sidebar|sponsor|share|social|related|cookie|banner|promo|(?:^|[\s_-])ads?(?:$|[\s_-])|advert|menu|breadcrumb|subscribe|newsletter|popup|gdpr|consent|disqus/;
/** Class/id hints of elements dropped before scoring (Readability's unlikelyCandidates, and more). */
const UNLIKELY_HINT =
  /-ad-|ad-break|banner|breadcrumb|combx|comment|community|cookie|consent|disqus|extra|footer|gdpr|header|legends|menu|related|remark|replies|rss|shoutbox|sidebar|skyscraper|social|sponsor|share|subscribe|newsletter|supplemental|agegate|pagination|pager|popup|promo/;
/** Unlikely-hint elements that are kept anyway (Readability's okMaybeItsACandidate). */
const MAYBE_CANDIDATE = /article|body|column|content|main|shadow/;
export const UNLIKELY_ROLES = new Set([
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

const HIDDEN_STYLE = /display\s*:\s*none|visibility\s*:\s*hidden/i;

export function hiddenByStyle(style: string | undefined): boolean {
  return style !== undefined && HIDDEN_STYLE.test(style);
}

export const H_NEGATIVE = 1;
export const H_POSITIVE = 2;
export const H_UNLIKELY = 4;
export const H_MAYBE = 8;
/** Hint bits by class or id value; pages (and sites) repeat the same few values. */
const hintCache = new Map<string, number>();

export function hintsOf(value: string): number {
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

// --- text ----------------------------------------------------------------------------------------

export const WS_RUN = /[\t\n\f\r ]+/g;

export function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13 || c === 12;
}

export function collapse(text: string): string {
  return text.replace(WS_RUN, ' ').trim();
}

// --- scores --------------------------------------------------------------------------------------

export function tagBonus(el: El): number {
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

export function contentScore(len: number, commas: number): number {
  return 1 + commas + Math.min(Math.floor(len / 100), 3);
}

export function linkDensity(el: El): number {
  return el.textLen === 0 ? 0 : el.linkLen / el.textLen;
}

export function finalScore(el: El): number {
  return el.score * (1 - linkDensity(el));
}

export function insideUnlikely(el: El): boolean {
  return (el.flags & (F_UNLIKELY | F_UNDER_UNLIKELY)) !== 0;
}

// --- attributes ----------------------------------------------------------------------------------

// The attributes the tree builder reads (the reader slices no others), by index.
export const A_CLASS = 0;
export const A_ID = 1;
export const A_ROLE = 2;
export const A_HIDDEN = 3;
export const A_ARIA_HIDDEN = 4;
export const A_STYLE = 5;
export const A_HREF = 6;
export const A_SRC = 7;
export const A_DATA_SRC = 8;
export const A_DATA_ORIGINAL = 9;
export const A_ALT = 10;
export const A_COLSPAN = 11;
export const A_START = 12;
export const A_LANG = 13;
export const A_CONTENT = 14;
export const A_PROPERTY = 15;
export const A_NAME = 16;
export const A_ITEMPROP = 17;
export const A_HTTP_EQUIV = 18;
export const A_REL = 19;
export const A_DATETIME = 20;
export const A_PUBDATE = 21;
export const A_TYPE = 22;
export const WANTED_ATTRIBUTES: ReadonlyMap<string, number> = new Map(
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
