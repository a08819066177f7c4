/**
 * Link extraction from HTML without a DOM, memory bounded by the links found, not by the page: a
 * whole page (`extractLinks`, what the fetch function runs) through main-content-html.ts's reader,
 * which gives htmlparser2 `Parser`'s element events straight from its Tokenizer without slicing text;
 * a page in pieces (`createLinkExtractor`) through `Parser` itself. Both feed one collector, and the
 * tests hold them to the same results.
 *
 * What is extracted and how:
 * - `<a href>` and `<area href>`, in document order, deduplicated by normalized URL (see
 *   url-normalize.ts). A URL's first occurrence fixes its position and tag; it is `nofollow` only
 *   if every occurrence is.
 * - The document base URL is the FIRST `<base href>` in the document (later ones are ignored),
 *   resolved against the page URL, and it applies to every link of the page, also to links before
 *   it (HTML's rule; links are resolved at `end()`). A base that does not resolve to http(s) is
 *   ignored, as browsers ignore unusable bases.
 * - `rel` is a case-insensitive token list; the token `nofollow` marks the link. `<meta
 *   name=robots content=...>` with `nofollow` or `none` marks every link of the page, wherever the
 *   meta appears; `noindex`/`none` set `metaRobots.noindex`. Only the generic `robots` name is read.
 *   With `followNofollow: true` the hints are still reported in `metaRobots` but every link has
 *   `nofollow: false` (the crawl ignores them).
 * - `<link rel=canonical href>`: the first one, resolved against the base and normalized.
 * - href values: entities decoded by the parser (`&amp;` → `&`), leading/trailing C0 controls and
 *   spaces trimmed, resolved by WHATWG rules. An empty href is a link to the page itself.
 * - Not extracted: anything inside `<script>`, `<style>`, `<textarea>`, `<title>`, `<xmp>`,
 *   `<iframe>`, `<noembed>`, `<noframes>` (raw text for the parser), comments, and `<template>`
 *   content (inert until a script clones it; browsers' `document.links` skips it too). `<noscript>`
 *   content IS extracted: the crawler runs no scripts, so it is what the crawler's "browser" shows.
 * - Dropped and counted: hrefs whose scheme is not http(s) (`mailto:`, `javascript:`, `tel:`,
 *   `data:` ...), that do not resolve, or whose normalized URL is longer than `maxUrlLength`;
 *   `dropped` is the total and `droppedByCode` the split by normalization error code.
 * - Elements without an href (`<a name=x>`) are not links and not counted.
 */
import { Parser } from 'htmlparser2';
import {
  type NormalizeErrorCode,
  type NormalizeHrefResult,
  type NormalizeOptions,
  normalizeHref,
  resolveUrl,
} from '../urls/index.ts';
import { type Attributes, type HtmlHandler, HtmlReader } from './main-content-html.ts';

export type LinkTag = 'a' | 'area';

export interface Link {
  /** Normalized absolute http(s) URL. */
  url: string;
  nofollow: boolean;
  tag: LinkTag;
}

export interface LinkExtractionOptions {
  /** Ignore `rel=nofollow` and meta robots nofollow: every link comes back with nofollow false. */
  followNofollow?: boolean;
  /** Normalization of the extracted URLs (length cap, tracking parameters). */
  normalize?: Partial<NormalizeOptions>;
}

export interface LinkExtractionResult {
  links: Link[];
  /** The first `<link rel=canonical>`, resolved and normalized; absent if none or unusable. */
  canonical?: string;
  /** The effective document base URL from the first `<base href>`, if the page has a usable one. */
  base?: string;
  metaRobots: { noindex: boolean; nofollow: boolean };
  /** hrefs that were found but did not give a crawlable URL. */
  dropped: number;
  droppedByCode: Record<NormalizeErrorCode, number>;
}

export interface LinkExtractor {
  /** Feeds the next piece of the body; tags and entities may be split across pieces. */
  write(chunk: string): void;
  /** Finishes parsing and returns the result; the extractor cannot be written to afterwards. */
  end(): LinkExtractionResult;
}

interface RawLink {
  href: string;
  tag: LinkTag;
  nofollow: boolean;
}

const ASCII_WHITESPACE = /[\t\n\f\r ]+/;
const META_CONTENT_SEPARATOR = /[\s,]+/;

function tokens(value: string, separator: RegExp): string[] {
  return value.toLowerCase().split(separator);
}

const UNRESOLVABLE: NormalizeHrefResult = {
  ok: false,
  code: 'invalid-url',
  reason: 'href does not resolve to a URL against the document base URL',
};

function isHttp(url: URL): boolean {
  return url.protocol === 'http:' || url.protocol === 'https:';
}

/** A page's base URL, its options, and what was collected from its elements, turned into the result. */
class LinkCollector {
  readonly #page: URL;
  readonly #followNofollow: boolean;
  readonly #normalizeOptions: Partial<NormalizeOptions> | undefined;
  readonly #raw: RawLink[] = [];
  #baseHref: string | undefined;
  #canonicalHref: string | undefined;
  #metaNoindex = false;
  #metaNofollow = false;
  #templateDepth = 0;

  constructor(pageUrl: string | URL, options: LinkExtractionOptions | undefined) {
    const page = typeof pageUrl === 'string' ? resolveUrl(pageUrl) : pageUrl;
    if (page === undefined) {
      throw new TypeError(
        `page URL ${JSON.stringify(pageUrl)} is not an absolute URL; expected the fetched URL`,
      );
    }
    this.#page = page;
    this.#followNofollow = options?.followNofollow ?? false;
    this.#normalizeOptions = options?.normalize;
  }

  /** An element opens; `attr` reads its (lower-case named) attributes. */
  open(name: string, attr: (name: 'href' | 'rel' | 'name' | 'content') => string | undefined): void {
    if (name === 'template') {
      this.#templateDepth++;
      return;
    }
    if (this.#templateDepth > 0) return;
    switch (name) {
      case 'a':
      case 'area': {
        const href = attr('href');
        if (href === undefined) return;
        const rel = attr('rel');
        const nofollow = rel !== undefined && tokens(rel, ASCII_WHITESPACE).includes('nofollow');
        this.#raw.push({ href, tag: name, nofollow });
        return;
      }
      case 'base': {
        const href = attr('href');
        if (this.#baseHref === undefined && href !== undefined) this.#baseHref = href;
        return;
      }
      case 'link': {
        const href = attr('href');
        const rel = attr('rel');
        if (
          this.#canonicalHref === undefined &&
          href !== undefined &&
          rel !== undefined &&
          tokens(rel, ASCII_WHITESPACE).includes('canonical')
        ) {
          this.#canonicalHref = href;
        }
        return;
      }
      case 'meta': {
        const content = attr('content');
        if (attr('name')?.trim().toLowerCase() !== 'robots' || content === undefined) return;
        for (const token of tokens(content, META_CONTENT_SEPARATOR)) {
          if (token === 'nofollow' || token === 'none') this.#metaNofollow = true;
          if (token === 'noindex' || token === 'none') this.#metaNoindex = true;
        }
        return;
      }
    }
  }

  close(name: string): void {
    if (name === 'template' && this.#templateDepth > 0) this.#templateDepth--;
  }

  finish(): LinkExtractionResult {
    const page = this.#page;
    const followNofollow = this.#followNofollow;
    const normalizeOptions = this.#normalizeOptions;
    const raw = this.#raw;
    const baseHref = this.#baseHref;
    const canonicalHref = this.#canonicalHref;
    const metaNoindex = this.#metaNoindex;
    const metaNofollow = this.#metaNofollow;
    let base = page;
    let effectiveBase: string | undefined;
    if (baseHref !== undefined) {
      const resolved = resolveUrl(baseHref, page);
      if (resolved !== undefined && isHttp(resolved)) {
        base = resolved;
        effectiveBase = resolved.href;
      }
    }

    const droppedByCode: Record<NormalizeErrorCode, number> = {
      'invalid-url': 0,
      'unsupported-scheme': 0,
      'url-too-long': 0,
    };
    const byUrl = new Map<string, Link>();
    const links: Link[] = [];
    const allNofollow = metaNofollow && !followNofollow;
    // Pages repeat hrefs (navigation, pagination): resolve and normalize each distinct one once.
    const byHref = new Map<string, NormalizeHrefResult>();
    for (const { href, tag, nofollow } of raw) {
      let normalized = byHref.get(href);
      if (normalized === undefined) {
        const resolved = resolveUrl(href, base);
        normalized = resolved === undefined ? UNRESOLVABLE : normalizeHref(resolved, normalizeOptions);
        byHref.set(href, normalized);
      }
      if (!normalized.ok) {
        droppedByCode[normalized.code]++;
        continue;
      }
      const isNofollow = allNofollow || (nofollow && !followNofollow);
      const seen = byUrl.get(normalized.url);
      if (seen === undefined) {
        const link: Link = { url: normalized.url, nofollow: isNofollow, tag };
        byUrl.set(normalized.url, link);
        links.push(link);
      } else if (!isNofollow) {
        seen.nofollow = false;
      }
    }

    const result: LinkExtractionResult = {
      links,
      metaRobots: { noindex: metaNoindex, nofollow: metaNofollow },
      dropped:
        droppedByCode['invalid-url'] + droppedByCode['unsupported-scheme'] + droppedByCode['url-too-long'],
      droppedByCode,
    };
    if (effectiveBase !== undefined) result.base = effectiveBase;
    if (canonicalHref !== undefined) {
      const resolved = resolveUrl(canonicalHref, base);
      const normalized = resolved === undefined ? undefined : normalizeHref(resolved, normalizeOptions);
      if (normalized?.ok) result.canonical = normalized.url;
    }
    return result;
  }
}

/** Creates an incremental extractor for one page; feed it with `write` and finish with `end`. */
export function createLinkExtractor(pageUrl: string | URL, options?: LinkExtractionOptions): LinkExtractor {
  const collector = new LinkCollector(pageUrl, options);
  let ended = false;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        collector.open(name, (attr) => attribs[attr]);
      },
      onclosetag(name) {
        collector.close(name);
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  return {
    write(chunk: string): void {
      if (ended) throw new Error('link extractor: write() after end()');
      parser.write(chunk);
    },
    end(): LinkExtractionResult {
      if (ended) throw new Error('link extractor: end() called twice');
      ended = true;
      parser.end();
      return collector.finish();
    },
  };
}

const LINK_ATTRIBUTES: ReadonlyMap<string, number> = new Map(
  (['href', 'rel', 'name', 'content'] as const).map((name, i) => [name, i]),
);
const LINK_ELEMENTS = new Set(['a', 'area', 'base', 'link', 'meta']);

/**
 * The collector driven by main-content-html.ts's reader (htmlparser2's Tokenizer with Parser's
 * element events): a whole page at once, about twice as fast as Parser, since no text is sliced
 * and only the elements that can hold links have their attributes read.
 */
class LinkReaderHandler implements HtmlHandler {
  reading = true;
  readonly #collector: LinkCollector;

  constructor(collector: LinkCollector) {
    this.#collector = collector;
  }

  onopentagname(name: string): boolean {
    return LINK_ELEMENTS.has(name);
  }

  onopentag(name: string, attrs: Attributes): void {
    this.#collector.open(name, (attr) => attrs.get(LINK_ATTRIBUTES.get(attr)!));
  }

  onclosetag(name: string): void {
    this.#collector.close(name);
  }

  ontext(): void {}
}

/** Extracts the links of a whole HTML page (see the top of this file for the rules). */
export function extractLinks(
  html: string,
  pageUrl: string | URL,
  options?: LinkExtractionOptions,
): LinkExtractionResult {
  const collector = new LinkCollector(pageUrl, options);
  new HtmlReader(html, new LinkReaderHandler(collector), LINK_ATTRIBUTES).run();
  return collector.finish();
}
