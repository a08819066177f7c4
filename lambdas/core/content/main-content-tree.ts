/**
 * Tree building, the first stage of main-content extraction (main-content.ts): one streaming pass of
 * main-content-html.ts's reader builds the tree of kept elements, marks unlikely elements and
 * landmarks, counts text, link text, commas and paragraphs as each element closes, scores the
 * candidates as it goes (so choosing needs no second walk), and feeds the metadata. The hostile-input
 * bounds live here: nesting is flattened past `maxDepth` and reading stops past `stopDepth` open
 * elements, `maxCells` table cells, `maxText` characters of text, or the CPU budget.
 */
import { CONTENT_LIMITS, type CpuBudget } from '../base/index.ts';
import {
  A_ALT,
  A_ARIA_HIDDEN,
  A_CLASS,
  A_COLSPAN,
  A_DATA_ORIGINAL,
  A_DATA_SRC,
  A_HIDDEN,
  A_HREF,
  A_ID,
  A_ROLE,
  A_SRC,
  A_START,
  A_STYLE,
  A_TYPE,
  collapse,
  contentScore,
  El,
  F_HAS_BLOCK,
  F_LANDMARK,
  F_LAYOUT,
  F_MAIN,
  F_SCORED,
  F_TH,
  F_UNDER_UNLIKELY,
  F_UNLIKELY,
  H_MAYBE,
  H_NEGATIVE,
  H_POSITIVE,
  H_UNLIKELY,
  hiddenByStyle,
  hintsOf,
  K_A,
  K_BOX,
  K_BQ,
  K_CELL,
  K_CODE,
  K_HEADING,
  K_IMG,
  K_LI,
  K_NONE,
  K_OL,
  K_P,
  K_PRE,
  K_ROOT,
  K_SKIP,
  K_TABLE,
  TAG_KIND,
  tagBonus,
  UNLIKELY_ROLES,
  WANTED_ATTRIBUTES,
  WS_RUN,
} from './main-content-element.ts';
import { type Attributes, type HtmlHandler, HtmlReader } from './main-content-html.ts';
import { addJsonLd, type RawMeta, readHeadTag } from './main-content-metadata.ts';

/** The bounds of one read (main-content.ts makes them from the caller's options). */
export interface TreeLimits {
  /** Elements nested deeper are flattened into their ancestor (at least 1). */
  maxDepth: number;
  maxCells: number;
  maxText: number;
  images: boolean;
}

export interface Parsed {
  root: El;
  candidates: El[];
  landmarks: El[];
  meta: RawMeta;
  truncated: string | undefined;
}

const NEEDS_COLLAPSE = /[\t\n\f\r]| {2}/;

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13 || c === 12;
}

/** A link within the page (`#...`: tabs, "next") leads to no other page (main-content-listing.ts). */
function isInPageLink(href: string): boolean {
  const trimmed = href.trim();
  return trimmed === '' || trimmed.charCodeAt(0) === 35; // '#'
}

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

  constructor(limits: TreeLimits, stripUnlikely: boolean, budget: CpuBudget) {
    this.budget = budget;
    this.maxDepth = limits.maxDepth;
    this.stopDepth = Math.max(this.maxDepth * 4, 2000);
    this.maxCells = limits.maxCells;
    this.maxText = limits.maxText;
    this.images = limits.images;
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
      // listing shape (main-content-listing.ts): a link with text is a title, and so is a heading that links
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
    if (kind === K_SKIP) {
      this.openSkipped(name, attribs);
      return;
    }
    this.depth++;
    if (this.depth > this.stopDepth) {
      this.stop(`elements nested deeper than ${this.stopDepth} levels: the rest of the page was not read`);
      return;
    }
    if (kind === K_NONE) {
      readHeadTag(this.meta, name, attribs);
      return;
    }
    if (this.depth > this.maxDepth) {
      this.truncated ??= `elements nested deeper than ${this.maxDepth} levels were flattened`;
      return;
    }
    const cls = attribs.get(A_CLASS);
    const el = this.openElement(kind, name, cls, attribs.get(A_ID));
    if (kind < K_A && (el.flags & F_UNLIKELY) === 0) this.markRegion(el, name, attribs);
    if (el.flags & F_UNLIKELY) this.unlikelyDepth++;
    this.readKindAttributes(el, name, attribs, cls);
  }

  /** Opens an element whose content is never read; <title> and JSON-LD text is captured. */
  private openSkipped(name: string, attribs: Attributes): void {
    this.skipDepth = 1;
    if (name === 'title') {
      if (this.meta.title === undefined) {
        this.capture = 1;
        this.captured = '';
      }
    } else if (name === 'script' && attribs.get(A_TYPE)?.toLowerCase().includes('ld+json')) {
      this.capture = 2;
      this.captured = '';
    }
    this.reading = this.capture !== 0;
  }

  /** Makes the kept element and weighs its class/id hints (an unlikely hint marks it unlikely). */
  private openElement(kind: number, name: string, cls: string | undefined, id: string | undefined): El {
    const parent = this.cur;
    const el = new El(kind, name, parent, this.depth, cls ?? '');
    if (parent.flags & (F_UNLIKELY | F_UNDER_UNLIKELY)) el.flags |= F_UNDER_UNLIKELY;
    el.table = parent.kind === K_TABLE ? parent : parent.table;
    parent.add(el);
    this.cur = el;
    if (cls !== undefined || id !== undefined) {
      const hints = (cls === undefined ? 0 : hintsOf(cls)) | (id === undefined ? 0 : hintsOf(id));
      if (hints & H_NEGATIVE) el.weight -= 25;
      if (hints & H_POSITIVE) el.weight += 25;
      if (
        (hints & (H_UNLIKELY | H_MAYBE)) === H_UNLIKELY &&
        this.stripUnlikely &&
        kind <= K_BQ &&
        name !== 'body' &&
        name !== 'article' &&
        name !== 'main'
      ) {
        el.flags |= F_UNLIKELY;
      }
    }
    return el;
  }

  /** Marks a block as unlikely content by its tag, role, hidden state or style, or as a landmark. */
  private markRegion(el: El, name: string, attribs: Attributes): void {
    const role = attribs.get(A_ROLE);
    if (!this.stripUnlikely) {
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

  /** What the element's kind reads from its attributes (link, image, level, start, span, language). */
  private readKindAttributes(el: El, name: string, attribs: Attributes, cls: string | undefined): void {
    const kind = el.kind;
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
          } else addJsonLd(meta, this.captured);
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

/** Reads `html` into the kept-element tree, its scored candidates, landmarks and metadata. */
export function parse(html: string, limits: TreeLimits, stripUnlikely: boolean, budget: CpuBudget): Parsed {
  const builder = new TreeBuilder(limits, stripUnlikely, budget);
  const reader = new HtmlReader(html, builder, WANTED_ATTRIBUTES);
  builder.reader = reader;
  reader.run();
  builder.finish();
  const { root, candidates, landmarks, meta, truncated } = builder;
  return { root, candidates, landmarks, meta, truncated };
}
