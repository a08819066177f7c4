/**
 * The page's metadata as the tree builder meets it (main-content-tree.ts): <meta> tags, the head
 * elements that carry metadata (<html lang>, <link rel=canonical>, <base href>, <time>), JSON-LD
 * blocks (kept raw, read a few levels deep at the end), and the word count. Apart because none of it
 * is about the content tree: it fills one record the entry point (main-content.ts) turns into
 * `PageMetadata`.
 */

import {
  A_CONTENT,
  A_DATETIME,
  A_HREF,
  A_HTTP_EQUIV,
  A_ITEMPROP,
  A_LANG,
  A_NAME,
  A_PROPERTY,
  A_PUBDATE,
  A_REL,
  collapse,
} from './main-content-element.ts';
import type { Attributes } from './main-content-html.ts';

export interface RawMeta {
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

/** Reads a head element that carries metadata (an element the tree does not keep). */
export function readHeadTag(meta: RawMeta, name: string, attribs: Attributes): void {
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
    const field = OG_FIELDS.get(prop);
    if (field !== undefined) meta[field] ??= value;
    return;
  }
  if (AUTHOR_KEYS.has(key)) {
    // article:author is often a profile URL; a name is more useful when there is one.
    if (meta.author === undefined || /^https?:/.test(meta.author)) meta.author = value;
    return;
  }
  const field = META_FIELDS.get(key);
  if (field !== undefined) meta[field] ??= value;
}

type FirstValueField =
  | 'ogTitle'
  | 'ogDescription'
  | 'description'
  | 'siteName'
  | 'publishedTime'
  | 'modifiedTime'
  | 'language';

/** `og:` properties and the field each fills; the first value wins. */
const OG_FIELDS: ReadonlyMap<string, FirstValueField> = new Map([
  ['title', 'ogTitle'],
  ['description', 'ogDescription'],
  ['site_name', 'siteName'],
  ['published_time', 'publishedTime'],
  ['updated_time', 'modifiedTime'],
  ['modified_time', 'modifiedTime'],
]);

/** Other `<meta>` names (lower case) and the field each fills; the first value wins. */
const META_FIELDS: ReadonlyMap<string, FirstValueField> = new Map([
  ['description', 'description'],
  ['twitter:description', 'ogDescription'],
  ['twitter:title', 'ogTitle'],
  ...[
    'article:published_time',
    'datepublished',
    'date',
    'dc.date',
    'dc.date.issued',
    'parsely-pub-date',
    'sailthru.date',
  ].map((name) => [name, 'publishedTime'] as const),
  ...['article:modified_time', 'datemodified', 'last-modified'].map(
    (name) => [name, 'modifiedTime'] as const,
  ),
  ['application-name', 'siteName'],
  ['content-language', 'language'],
]);

/** `<meta>` names of an author: a later name replaces an earlier profile URL. */
const AUTHOR_KEYS: ReadonlySet<string> = new Set([
  'author',
  'article:author',
  'dc.creator',
  'parsely-author',
  'sailthru.author',
]);

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

/** Keeps a JSON-LD block's parse (at most 20 blocks; too deep or invalid JSON is ignored). */
export function addJsonLd(meta: RawMeta, json: string): void {
  if (meta.ld.length < 20 && nestedWithin(json, MAX_JSON_LD_NESTING)) {
    try {
      meta.ld.push(JSON.parse(json));
    } catch {
      // invalid JSON-LD is ignored
    }
  }
}

export function applyJsonLd(meta: RawMeta, types: string[], node: unknown, depth: number): void {
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

export function countWords(text: string): number {
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
