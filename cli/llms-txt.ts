/**
 * llms.txt (https://llmstxt.org) of a crawl, from its content records: an H1 with the site's name, a
 * block quote with its summary, then one list line per page, `- [title](url): description`, under
 * one H2 per host (`## Pages` when the crawl has one host). The site's name and summary come from the
 * first seed's record (its og:site_name or title, and its description), else from the shallowest page.
 * Pages are listed by URL, the seed first. llms-full.txt is every page's Markdown (or text) under an
 * H1 of its title, with its URL.
 *
 * Titles, descriptions, names and hosts are page text: they are escaped (core/base/markdown-escape.ts), so
 * a page cannot put links or HTML into llms.txt; a URL that is not http(s) is never a link.
 */

import { escapeMarkdownText, markdownDestination } from '../lambdas/core/base/index.ts';
import type { ContentRecord } from '../lambdas/core/results/index.ts';

export interface LlmsEntry {
  url: string;
  title: string;
  description?: string;
}

export function llmsEntry(record: ContentRecord): LlmsEntry {
  return {
    url: record.url,
    title: oneLine(record.title ?? '') || record.url,
    ...(record.description ? { description: oneLine(record.description) } : {}),
  };
}

/** llms.txt of the pages; `home` is the record the site's name and summary come from. */
export function llmsTxt(
  entries: readonly LlmsEntry[],
  home: ContentRecord | undefined,
  seeds: readonly string[],
): string {
  const firstUrl = seeds[0] ?? entries[0]?.url;
  const siteName = oneLine(home?.siteName ?? home?.title ?? '') || hostOf(firstUrl) || 'Crawl';
  const lines = [`# ${escapeMarkdownText(siteName, true)}`, ''];
  if (home?.description) lines.push(`> ${escapeMarkdownText(oneLine(home.description), true)}`, '');
  const byHost = Map.groupBy(
    [...entries].sort(
      (a, b) => rank(a.url, seeds) - rank(b.url, seeds) || (a.url < b.url ? -1 : a.url > b.url ? 1 : 0),
    ),
    (entry) => hostOf(entry.url) ?? '',
  );
  for (const [host, pages] of byHost) {
    lines.push(`## ${byHost.size === 1 ? 'Pages' : escapeMarkdownText(host, true)}`, '');
    for (const page of pages) {
      const title = escapeMarkdownText(page.title, true);
      const link = isHttp(page.url) ? `- [${title}](${markdownDestination(page.url)})` : `- ${title}`;
      lines.push(page.description ? `${link}: ${escapeMarkdownText(page.description, false)}` : link);
    }
    lines.push('');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/** One page's part of llms-full.txt. */
export function llmsFullSection(record: ContentRecord): string {
  const title = escapeMarkdownText(oneLine(record.title ?? '') || record.url, true);
  // a record's Markdown is escaped already; its text is plain and goes in as text
  const body =
    record.markdown !== undefined
      ? record.markdown.trim()
      : escapeMarkdownText((record.text ?? '').trim(), true);
  return `# ${title}\n\nSource: ${escapeMarkdownText(record.url, false)}\n\n${body}\n\n`;
}

/** Of two records, the one that names the site better: a seed, else the shallower URL path. */
export function betterHome(
  a: ContentRecord | undefined,
  b: ContentRecord,
  seeds: readonly string[],
): ContentRecord {
  if (a === undefined) return b;
  const byRank = rank(b.url, seeds) - rank(a.url, seeds);
  if (byRank !== 0) return byRank < 0 ? b : a;
  return pathDepth(b.url) < pathDepth(a.url) ? b : a;
}

/** Each seed's first position, once per seed list: an indexOf per comparison cost seeds × n log n. */
const seedRanks = new WeakMap<readonly string[], Map<string, number>>();

function rank(url: string, seeds: readonly string[]): number {
  let ranks = seedRanks.get(seeds);
  if (ranks === undefined) {
    ranks = new Map();
    for (let i = seeds.length - 1; i >= 0; i--) ranks.set(seeds[i]!, i);
    seedRanks.set(seeds, ranks);
  }
  return ranks.get(url) ?? seeds.length;
}

function pathDepth(url: string): number {
  return URL.parse(url)?.pathname.split('/').filter(Boolean).length ?? Number.MAX_SAFE_INTEGER;
}

function hostOf(url: string | undefined): string | undefined {
  return url === undefined ? undefined : (URL.parse(url)?.host ?? undefined);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function isHttp(url: string): boolean {
  return /^https?:\/\//i.test(url);
}
