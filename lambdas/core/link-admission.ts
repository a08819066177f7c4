/**
 * From discovered links to frontier decisions: normalize, skip what this container has seen, classify
 * (scope, depth, nofollow), admit with conditional puts, spend the page budget, and turn every newly
 * admitted URL into either a task or a `skipped` result — so each discovered URL ends with one result.
 */
import type { CrawlConfig } from './crawl-config.ts';
import type { LruSet } from './lru.ts';
import type { FrontierUrl, FrontierWriter, OutgoingTask } from './ports.ts';
import type { CrawlResult } from './result.ts';
import { bareResult } from './result-builders.ts';
import { type CompiledScope, compileScope } from './scope.ts';
import { normalizeUrl } from './url-normalize.ts';

export interface DiscoveredLink {
  url: string;
  nofollow: boolean;
  /** Redirect targets keep their page's depth and count hops instead. */
  redirects?: number;
}

export interface DiscoveringPage {
  config: CrawlConfig;
  parentKey: string;
  /** Absent for seeds. */
  parentUrl?: string;
  /**
   * An earlier fetch of this page may have admitted links without sending their tasks (its batch
   * failed or crashed): its links skip the seen-URL cache, which may hold them from another page.
   */
  relink?: boolean;
  depth: number;
  links: readonly DiscoveredLink[];
}

type Classified = FrontierUrl & { skip?: { code: string; reason: string }; redirects?: number };

const scopes = new WeakMap<CrawlConfig, CompiledScope>();

function compile(config: CrawlConfig, seeds: string[]): CompiledScope {
  return compileScope({
    scope: config.scope,
    seeds,
    include: config.include.map((pattern) => new RegExp(pattern)),
    exclude: config.exclude.map((pattern) => new RegExp(pattern)),
  });
}

/**
 * A crawl's scope comes from its seeds. A crawl without seeds (the default crawl of bare URLs sent to
 * the queue) scopes each page's links by that page itself, so a bare URL crawls its own host.
 */
function scopeOf(config: CrawlConfig, page: DiscoveringPage): CompiledScope {
  if (config.seeds.length === 0) return compile(config, page.parentUrl ? [page.parentUrl] : []);
  return crawlScope(config);
}

/** The scope of a crawl with seeds, compiled once per config object. */
export function crawlScope(config: CrawlConfig): CompiledScope {
  let compiled = scopes.get(config);
  if (!compiled) {
    compiled = compile(config, config.seeds);
    scopes.set(config, compiled);
  }
  return compiled;
}

export async function admitLinks(
  pages: readonly DiscoveringPage[],
  deps: { frontier: FrontierWriter; seen: LruSet; now: Date },
): Promise<{ tasks: OutgoingTask[]; results: CrawlResult[]; seenKeys: string[] }> {
  const tasks: OutgoingTask[] = [];
  // Marked seen by the caller only once their tasks and results are sent: a batch that fails after
  // admission is redelivered and must re-send its own admissions, not skip them as seen.
  const seenKeys: string[] = [];
  const results: CrawlResult[] = [];
  const queuedByCrawl = new Map<string, number>();

  await Promise.all(
    pages.map(async (page) => {
      const { config } = page;
      const candidates = classify(page);
      if (candidates.length === 0) return;
      const admitted = await deps.frontier.admit(config.crawlId, page.parentKey, candidates);
      for (const candidate of candidates) seenKeys.push(`${config.crawlId}:${candidate.key}`);
      if (admitted.length === 0) return;
      const fresh = admitted.filter((url) => url.fresh).length;
      queuedByCrawl.set(config.crawlId, (queuedByCrawl.get(config.crawlId) ?? 0) + fresh);

      const byKey = new Map(candidates.map((candidate) => [candidate.key, candidate]));
      const fetchable: Classified[] = [];
      for (const url of admitted) {
        const candidate = byKey.get(url.key)!;
        if (candidate.skip) {
          results.push(
            bareResult({ crawlId: config.crawlId, ...candidate }, 'skipped', deps.now, candidate.skip),
          );
        } else fetchable.push(candidate);
      }
      const granted =
        config.maxPages === undefined
          ? fetchable.length
          : await deps.frontier.reservePages(config.crawlId, fetchable.length, config.maxPages);
      fetchable.forEach((candidate, index) => {
        if (index < granted) {
          tasks.push({
            task: {
              v: 1,
              crawlId: config.crawlId,
              url: candidate.url,
              depth: candidate.depth,
              ...(page.parentUrl ? { parent: page.parentUrl } : {}),
              ...(candidate.redirects ? { redirects: candidate.redirects } : {}),
            },
          });
        } else {
          results.push(
            bareResult({ crawlId: config.crawlId, ...candidate }, 'skipped', deps.now, {
              code: 'limit',
              reason: `the crawl reached --max-pages ${config.maxPages}`,
            }),
          );
        }
      });
    }),
  );
  for (const [crawlId, count] of queuedByCrawl) if (count > 0) await deps.frontier.addQueued(crawlId, count);
  return { tasks, results, seenKeys };

  function classify(page: DiscoveringPage): Classified[] {
    const { config } = page;
    const scope = scopeOf(config, page);
    const out = new Map<string, Classified>();
    for (const link of page.links) {
      const normalized = normalizeUrl(link.url, { maxUrlLength: config.limits.maxUrlLength });
      if (!normalized.ok) continue;
      if (out.has(normalized.key)) continue;
      if (!page.relink && deps.seen.has(`${config.crawlId}:${normalized.key}`)) continue;
      const isRedirect = link.redirects !== undefined;
      const depth = isRedirect ? page.depth : page.depth + 1;
      const candidate: Classified = { key: normalized.key, url: normalized.url, depth };
      if (isRedirect) candidate.redirects = link.redirects;
      const inScope = scope.inScope(new URL(normalized.url));
      if (!inScope.ok) candidate.skip = { code: 'scope', reason: inScope.detail };
      else if (depth > config.maxDepth) {
        candidate.skip = { code: 'depth', reason: `depth ${depth} is beyond --max-depth ${config.maxDepth}` };
      } else if (link.nofollow && !config.followNofollow) {
        candidate.skip = {
          code: 'nofollow',
          reason: `linked with rel=nofollow from ${page.parentUrl ?? 'a seed'}`,
        };
      }
      out.set(normalized.key, candidate);
    }
    return [...out.values()];
  }
}
