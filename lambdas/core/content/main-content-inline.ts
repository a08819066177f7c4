/**
 * Inline rendering for main-content extraction (main-content-render.ts renders the blocks over it):
 * text, links, images, emphasis and code spans into one paragraph's Markdown and text, page text
 * escaped (markdown-escape.ts) so that only the constructs made here are Markdown, links http(s) or
 * mailto. It also owns what every rendering step asks: whether a kept element is dropped from the
 * content, and the CPU budget's check (`OutOfTime`). Apart to keep the block renderer small.
 */
import {
  type CpuBudget,
  escapeMarkdownText,
  longestBacktickRun,
  markdownDestination,
} from '../base/index.ts';
import {
  collapse,
  type El,
  F_GROUP,
  F_HAS_GROUP,
  F_UNLIKELY,
  K_A,
  K_BOX,
  K_BQ,
  K_BR,
  K_CODE,
  K_EM,
  K_HEADING,
  K_IMG,
  K_OL,
  K_PRE,
  K_STRONG,
  K_UL,
  linkDensity,
} from './main-content-element.ts';

export class Inline {
  md: string[] = [];
  tx = '';
  /** The output is empty or ends with whitespace: a leading space of the next text is dropped. */
  ws = true;
  /** Nothing but white space since the start or the last hard break: text there is escaped as a line start. */
  lineStart = true;
}

/** Thrown by the renderer when the CPU budget is spent (extractMainContent catches it). */
export class OutOfTime extends Error {}

/** Renders inline content; main-content-render.ts's Renderer adds the blocks. */
export class InlineRenderer {
  readonly base: string;
  readonly images: boolean;
  clean: boolean;
  /** Render groups as link lists (a listing page; see main-content-listing.ts). */
  listing = false;
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

  protected tick(): void {
    if (this.budget.spent()) throw new OutOfTime();
  }

  /** Bold or italic, marked once: inside the same emphasis it is only its children. */
  private emphasis(el: El, inline: Inline, kind: 'strong' | 'em', mark: string): void {
    if (this[kind] > 0) {
      this.children(el, inline);
      return;
    }
    this[kind]++;
    this.wrap(el, inline, mark, mark);
    this[kind]--;
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
        this.emphasis(el, inline, 'strong', '**');
        return;
      case K_EM:
        this.emphasis(el, inline, 'em', '*');
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

export function rawText(el: El): string {
  let out = '';
  for (const kid of el.kids ?? []) {
    if (typeof kid === 'string') out += kid;
    else if (kid.kind === K_BR) out += '\n';
    else out += rawText(kid);
  }
  return out;
}
