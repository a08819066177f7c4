/**
 * Listing-page benchmark (issue 24): how many of a non-article page's main-region items (the links
 * of a section index, docs index, product grid, tag page or search results) an extractor keeps, on
 * the hand-written pages of test/data/listing-pages/ (see test/data/README.md).
 *
 *   npx node bench/listing-recall.ts [--only ours,readability]
 *
 * - Each page `<name>.html` has a sidecar `<name>.json`: its `url` (the base URL passed to the
 *   extractor) and `items`, the expected item URLs (resolved against `url`). Pages named `held-*`
 *   are the held-out split (written first, never tuned on); the others are `dev`.
 * - ours: the links of `extractMainContent(html, url).markdown`, read by markdown-it (so an escaped
 *   `\](` in text is not a link). Readability.js: the `a[href]` of its `content` HTML, resolved
 *   against `url` (on linkedom it leaves hrefs as written).
 * - Per split: recall = mean over pages of (expected items found / expected items); precision =
 *   expected items found / distinct http(s) links output, pooled over the split's pages (links that
 *   are not items, such as navigation or pagination, lower it).
 *
 * bench/content-quality.ts runs this in the same process and prints it under the article F1.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import MarkdownIt from 'markdown-it';
import { extractMainContent } from '../lambdas/core/content/index.ts';

const PAGES_DIR = new URL('../test/data/listing-pages/', import.meta.url);

export type ListingSplit = 'dev' | 'held';
export const LISTING_SPLITS: readonly ListingSplit[] = ['dev', 'held'];

export interface ListingPage {
  name: string;
  split: ListingSplit;
  url: string;
  html: string;
  /** Expected item URLs, absolute. */
  items: string[];
}

export interface ListingPageScore {
  page: string;
  split: ListingSplit;
  expected: number;
  found: number;
  /** Distinct http(s) links in the output. */
  links: number;
  recall: number;
}

export interface ListingSplitScore {
  split: ListingSplit;
  pages: number;
  recall: number;
  precision: number;
}

/** An extractor for this bench: the http(s) URLs (absolute) its output links to. */
export type LinkExtractor = (html: string, url: string) => string[];

function absolute(href: string, base: string): string | undefined {
  const url = URL.parse(href.trim(), base);
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') ? url.href : undefined;
}

export function loadListingPages(): ListingPage[] {
  return readdirSync(PAGES_DIR)
    .filter((f) => f.endsWith('.html'))
    .sort()
    .map((file) => {
      const name = file.slice(0, -'.html'.length);
      const label = JSON.parse(readFileSync(new URL(`${name}.json`, PAGES_DIR), 'utf8')) as {
        url: string;
        items: string[];
      };
      const items = label.items.map((item) => {
        const url = absolute(item, label.url);
        if (url === undefined) throw new Error(`${name}.json: not an http(s) item: ${item}`);
        return url;
      });
      return {
        name,
        split: name.startsWith('held-') ? 'held' : 'dev',
        url: label.url,
        html: readFileSync(new URL(file, PAGES_DIR), 'utf8'),
        items,
      } satisfies ListingPage;
    });
}

const markdownIt = new MarkdownIt();

/** The link destinations of a Markdown document, as a renderer reads them. */
export function markdownLinks(markdown: string): string[] {
  const out: string[] = [];
  const walk = (tokens: ReturnType<typeof markdownIt.parse>): void => {
    for (const token of tokens) {
      if (token.type === 'link_open') {
        const href = token.attrGet('href');
        if (typeof href === 'string') out.push(href);
      }
      if (token.children !== null) walk(token.children);
    }
  };
  walk(markdownIt.parse(markdown, {}));
  return out;
}

export const oursLinks: LinkExtractor = (html, url) =>
  markdownLinks(extractMainContent(html, url).markdown)
    .map((href) => absolute(href, url))
    .filter((u): u is string => u !== undefined);

export const readabilityLinks: LinkExtractor = (html, url) => {
  const content = new Readability(parseHTML(html).document).parse()?.content;
  if (content === undefined || content === null) return [];
  const { document } = parseHTML(`<!DOCTYPE html><html><body>${content}</body></html>`);
  const out: string[] = [];
  for (const a of document.querySelectorAll('a[href]')) {
    const href = absolute(a.getAttribute('href') ?? '', url);
    if (href !== undefined) out.push(href);
  }
  return out;
};

export function scoreListingPages(extract: LinkExtractor, pages: readonly ListingPage[]): ListingPageScore[] {
  return pages.map((page) => {
    const links = new Set(extract(page.html, page.url));
    const expected = new Set(page.items);
    let found = 0;
    for (const item of expected) if (links.has(item)) found++;
    return {
      page: page.name,
      split: page.split,
      expected: expected.size,
      found,
      links: links.size,
      recall: expected.size === 0 ? 1 : found / expected.size,
    };
  });
}

export function summariseListing(scores: readonly ListingPageScore[]): ListingSplitScore[] {
  return LISTING_SPLITS.map((split) => {
    const of = scores.filter((s) => s.split === split);
    const found = of.reduce((a, s) => a + s.found, 0);
    const links = of.reduce((a, s) => a + s.links, 0);
    return {
      split,
      pages: of.length,
      recall: of.length === 0 ? 0 : of.reduce((a, s) => a + s.recall, 0) / of.length,
      precision: links === 0 ? 0 : found / links,
    };
  });
}

export interface ListingReport {
  extractor: string;
  splits: ListingSplitScore[];
  pages: ListingPageScore[];
}

/** The bench's Markdown section for the extractors that ran. */
export function listingMarkdown(reports: readonly ListingReport[], pageCount: number): string {
  const f3 = (x: number): string => x.toFixed(3);
  const lines = [
    `## Listing pages: recall of the main region's items (test/data/listing-pages, ${pageCount} hand-written pages)`,
    '',
    'Recall: mean over pages of expected item URLs found among the output links; precision: expected ' +
      'items found / distinct http(s) links output, pooled over the split. `held` pages were never tuned on.',
    '',
    '| extractor | split | pages | item recall | item precision |',
    '|---|---|---:|---:|---:|',
  ];
  for (const r of reports) {
    for (const s of r.splits) {
      lines.push(`| ${r.extractor} | ${s.split} | ${s.pages} | ${f3(s.recall)} | ${f3(s.precision)} |`);
    }
  }
  const missed = reports.flatMap((r) =>
    r.pages
      .filter((p) => p.found < p.expected)
      .map((p) => `${r.extractor}: ${p.page} ${p.found}/${p.expected}`),
  );
  if (missed.length > 0) lines.push('', `Pages with items missed: ${missed.join('; ')}.`);
  return lines.join('\n');
}

export const LISTING_EXTRACTORS = {
  ours: { label: 'ours (extractMainContent)', links: oursLinks },
  readability: { label: 'Readability.js 0.6.0 on linkedom 0.18.15', links: readabilityLinks },
} as const;

export function runListingBench(only: readonly ('ours' | 'readability')[]): {
  markdown: string;
  reports: ListingReport[];
} {
  const pages = loadListingPages();
  const reports = only.map((id) => {
    const scores = scoreListingPages(LISTING_EXTRACTORS[id].links, pages);
    return { extractor: LISTING_EXTRACTORS[id].label, splits: summariseListing(scores), pages: scores };
  });
  return { markdown: listingMarkdown(reports, pages.length), reports };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { only: { type: 'string' } }, strict: true });
  const only = (values.only ?? 'ours,readability').split(',').map((s) => s.trim()) as (
    | 'ours'
    | 'readability'
  )[];
  for (const id of only) if (!(id in LISTING_EXTRACTORS)) throw new Error(`unknown extractor: ${id}`);
  process.stdout.write(`${runListingBench(only).markdown}\n`);
}
