/**
 * Listing pages, a stage of main-content extraction (main-content.ts) between choosing the content
 * and rendering it: finds the groups of cards and link lists of a listing page's main region, says
 * whether the page is a listing, and reads an item's title and description as one line for the
 * renderer (main-content-render.ts). Apart because it is its own rule set over the finished tree.
 */
import {
  collapse,
  type El,
  F_GROUP,
  F_HAS_BLOCK,
  F_HAS_GROUP,
  F_ITEM,
  F_LANDMARK,
  F_MAIN,
  F_UNLIKELY,
  insideUnlikely,
  K_A,
  K_BOX,
  K_BR,
  K_HEADING,
  K_LI,
  K_P,
} from './main-content-element.ts';
import type { Parsed } from './main-content-tree.ts';

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
export function listingRegion(parsed: Parsed, chosen: El[]): El | null {
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
export function lineText(el: El, skip: El | null, cap: number): string {
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
