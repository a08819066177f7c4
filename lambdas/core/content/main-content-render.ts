/**
 * Rendering, the last stage of main-content extraction (main-content.ts): the chosen elements as
 * Markdown and text blocks (paragraphs, headings, lists, tables, code blocks, quotes), and a listing
 * page's groups as lists of links (main-content-listing.ts). Inline content is main-content-inline.ts's.
 * Each step is linear in what it renders: quotes and lists nested deeper than MAX_RENDER_NEST render
 * as plain blocks, and only a table's header row is padded to the full width.
 */
import { CONTENT_LIMITS, escapeMarkdownText, longestBacktickRun } from '../base/index.ts';
import {
  collapse,
  El,
  F_GROUP,
  F_ITEM,
  F_LAYOUT,
  K_A,
  K_BOX,
  K_BQ,
  K_CELL,
  K_CODE,
  K_HEADING,
  K_HR,
  K_LI,
  K_OL,
  K_PRE,
  K_ROOT,
  K_TABLE,
  K_TR,
  K_UL,
} from './main-content-element.ts';
import { Inline, InlineRenderer, rawText } from './main-content-inline.ts';
import { lineText } from './main-content-listing.ts';

/**
 * Quotes and lists nested deeper than this render as plain blocks: each level re-indents its whole
 * content, so deep nesting would cost depth × size.
 */
const MAX_RENDER_NEST = 32;

/** Renders the blocks of the content; inline content is the base class's. */
export class Renderer extends InlineRenderer {
  /** Quotes and lists being rendered around the current element (their prefixes re-indent text). */
  private nest = 0;

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

function firstCodeLanguage(el: El): string | undefined {
  for (const kid of el.kids ?? []) if (typeof kid !== 'string' && kid.kind === K_CODE) return kid.extra;
  return undefined;
}

export function renderAll(roots: El[], renderer: Renderer): { markdown: string; text: string } {
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
