/**
 * From discovered links to frontier decisions: normalize, skip what this container has seen, classify
 * (scope, depth, nofollow), admit with conditional puts into their hosts' partitions, spend the page
 * budget, and wake each host that got URLs to fetch: a host with no live or due visit gets a visit
 * message (docs/design/host-visits.md). Every admitted URL that will not be fetched ends with one
 * result: a fetched page's skipped links are carried by its result (created done, no wake: their host
 * needs no visit for them; docs/frontier.md, "Skipped links"), up to FRONTIER_LIMITS.carriedBytes;
 * the others (and the page budget's) are admitted held, woken, and get a `skipped` result each.
 */

import { FRONTIER_LIMITS, type LruSet, retryStep } from '../base/index.ts';
import {
  type AdmittedUrl,
  type CrawlConfig,
  type FrontierAdmission,
  type FrontierUrl,
  frontierHost,
  type HostVisits,
  hasSeeds,
  type OutgoingVisit,
  type PriorCapture,
} from '../crawl/index.ts';
import { bareResult, type CarriedLink, type CrawlResult } from '../results/index.ts';
import { type CompiledScope, compileScope, compileScopeKeys, normalizeUrl } from '../urls/index.ts';

export interface DiscoveredLink {
  url: string;
  nofollow: boolean;
  /** Redirect targets keep their page's depth and count hops instead. */
  redirects?: number;
  /** A re-crawl's URL of the crawl it follows: keeps that crawl's depth and carries its capture. */
  prior?: { depth: number; capture: PriorCapture };
  /** Not to be fetched, and why (an adaptive re-crawl's URL not due yet): it gets a `skipped` result. */
  skip?: { code: string; reason: string };
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
  /** A fetched page, whose result goes out after this admission: it carries its skipped links. */
  carrier?: boolean;
  /**
   * Its links are new to the crawl by construction (a re-crawl's earlier URLs, put first): they are
   * put without reading first which exist (FrontierAdmission's `probe`).
   */
  unprobed?: boolean;
  depth: number;
  links: readonly DiscoveredLink[];
}

/** The skipped links a page's result carries (`skipped`), by its crawl and key. */
export interface CarriedLinks {
  crawlId: string;
  parentKey: string;
  links: CarriedLink[];
}

type Classified = FrontierUrl & { skip?: { code: string; reason: string } };

const scopes = new WeakMap<CrawlConfig, Pick<CompiledScope, 'inScope'>>();

function rulesOf(config: CrawlConfig) {
  return {
    scope: config.scope,
    include: config.include.map((pattern) => new RegExp(pattern)),
    exclude: config.exclude.map((pattern) => new RegExp(pattern)),
  };
}

function compile(config: CrawlConfig, seeds: string[]): CompiledScope {
  return compileScope({ ...rulesOf(config), seeds });
}

/**
 * A crawl's scope comes from its seeds. A crawl without seeds (the default crawl of bare URLs sent to
 * the queue) scopes each page's links by that page itself, so a bare URL crawls its own host.
 */
function scopeOf(config: CrawlConfig, page: DiscoveringPage): Pick<CompiledScope, 'inScope'> {
  if (!hasSeeds(config)) return compile(config, page.parentUrl ? [page.parentUrl] : []);
  return crawlScope(config);
}

/**
 * The scope of a crawl with seeds, compiled once per config object: from its seeds, or, for seeds
 * from a file, from the stored keys bound to this config when it was loaded (`bindScope`).
 */
export function crawlScope(config: CrawlConfig): Pick<CompiledScope, 'inScope'> {
  let compiled = scopes.get(config);
  if (!compiled) {
    // Compiling from the few seeds in the config would scope the crawl wrongly: a bug, not bad input.
    if (config.seedFile !== undefined)
      throw new Error(`crawl ${config.crawlId}: its stored scope was not loaded with its config`);
    compiled = compile(config, config.seeds);
    scopes.set(config, compiled);
  }
  return compiled;
}

/** The scope keys of a crawl whose seeds came from a file, stored apart from its config. */
export interface StoredScopeReader {
  read(crawlId: string, parts: number): Promise<Iterable<string>>;
}

/** Gives a config of seeds from a file its scope: the keys (`scopeKeyOf`) its seeds make. */
export function bindScope(config: CrawlConfig, keys: Iterable<string>): void {
  scopes.set(config, compileScopeKeys({ ...rulesOf(config), keys }));
}

/** What admission does with hosts: wakes them, and gives back or confirms the visits it claimed. */
export type WakingHosts = Pick<HostVisits, 'wake' | 'unwake' | 'confirmSent'>;

/** What the pages of one admitLinks call add up to, filled in as their admissions complete. */
interface AdmissionTally {
  readonly seenKeys: string[];
  admitted: number;
  readonly results: CrawlResult[];
  readonly carried: CarriedLinks[];
  readonly queuedByCrawl: Map<string, number>;
  readonly woken: Map<string, HostToWake>;
}

export async function admitLinks(
  pages: readonly DiscoveringPage[],
  deps: {
    frontier: FrontierAdmission;
    hosts: WakingHosts;
    seen: LruSet;
    now: Date;
    /**
     * Leave the hosts asleep and return them (`asleep`): a re-crawl's submitter puts every earlier
     * URL, with its capture, before any host is visited, so no page's link admits one first without it.
     */
    deferWakes?: boolean;
  },
): Promise<{
  visits: OutgoingVisit[];
  /** With deferWakes: the hosts admissions would have woken, for `wakeHosts`. */
  asleep: HostToWake[];
  results: CrawlResult[];
  seenKeys: string[];
  /** URLs admitted (a link known to the crawl from another page is not). */
  admitted: number;
  /** Per carrier page with skipped links: what its result carries. */
  carried: CarriedLinks[];
}> {
  // Marked seen by the caller only once its results are sent and hosts woken: a batch that fails after
  // admission is redelivered and must admit (and wake) again, not skip its links as seen.
  const tally: AdmissionTally = {
    seenKeys: [],
    admitted: 0,
    results: [],
    carried: [],
    queuedByCrawl: new Map(),
    woken: new Map(),
  };
  await Promise.all(pages.map((page) => admitPage(page, deps, tally)));
  for (const [crawlId, count] of tally.queuedByCrawl)
    if (count > 0) await deps.frontier.addQueued(crawlId, count);
  return {
    visits: deps.deferWakes ? [] : await wakeHosts(tally.woken.values(), deps),
    asleep: deps.deferWakes ? [...tally.woken.values()] : [],
    results: tally.results,
    seenKeys: tally.seenKeys,
    admitted: tally.admitted,
    carried: tally.carried,
  };
}

/** Admits one page's links into the frontier and adds what came of it to `tally`. */
async function admitPage(
  page: DiscoveringPage,
  deps: { frontier: FrontierAdmission; seen: LruSet; now: Date },
  tally: AdmissionTally,
): Promise<void> {
  const { config } = page;
  const budgeted = config.maxPages !== undefined;
  // With a page budget every URL is admitted held and only those the budget grants are made
  // fetchable: a visit never sees a URL beyond the budget as one to fetch.
  const candidates = carry(page, classify(page, deps.seen)).map((candidate) =>
    !candidate.carried && (candidate.skip || budgeted) ? { ...candidate, held: true } : candidate,
  );
  if (candidates.length === 0) return;
  const { admitted, settled } = await deps.frontier.admit(
    config.crawlId,
    page.parentKey,
    candidates,
    page.unprobed ? { probe: false } : {},
  );
  // Cached as seen: what this page admits (its results go out with it) and what needs no page.
  for (const key of [...admitted.map((url) => url.key), ...settled])
    tally.seenKeys.push(`${config.crawlId}:${key}`);
  if (admitted.length === 0) return;
  tally.admitted += admitted.length;
  const fresh = admitted.filter((url) => url.fresh).length;
  tally.queuedByCrawl.set(config.crawlId, (tally.queuedByCrawl.get(config.crawlId) ?? 0) + fresh);

  const fetchable = sortAdmitted(page, candidates, admitted, deps.now, tally);
  if (!budgeted || config.maxPages === undefined) return;
  await spendPageBudget(config, config.maxPages, fetchable, deps, tally.results);
}

/**
 * Sorts a page's admitted URLs: a carried link goes into the page's result; any other wakes its host
 * and is either fetchable (returned) or ends with a `skipped` result of its own.
 */
function sortAdmitted(
  page: DiscoveringPage,
  candidates: readonly Classified[],
  admitted: readonly AdmittedUrl[],
  now: Date,
  tally: AdmissionTally,
): Classified[] {
  const { config } = page;
  const byKey = new Map(candidates.map((candidate) => [candidate.key, candidate]));
  const fetchable: Classified[] = [];
  const links: CarriedLink[] = [];
  for (const url of admitted) {
    const candidate = byKey.get(url.key)!;
    // As the item is: a refetch may find its links carried, or held, as its first fetch left them.
    if (url.carried) {
      links.push(carriedLink(candidate, page));
      continue;
    }
    const host = frontierHost(candidate.url);
    tally.woken.set(`${config.crawlId}\n${host}`, { crawlId: config.crawlId, host });
    if (candidate.skip) {
      tally.results.push(
        bareResult({ crawlId: config.crawlId, ...candidate }, 'skipped', now, candidate.skip),
      );
    } else fetchable.push(candidate);
  }
  if (links.length > 0) tally.carried.push({ crawlId: config.crawlId, parentKey: page.parentKey, links });
  return fetchable;
}

/** Makes fetchable as many held URLs as the page budget grants; the rest end `skipped` (limit). */
async function spendPageBudget(
  config: CrawlConfig,
  maxPages: number,
  fetchable: readonly Classified[],
  deps: { frontier: FrontierAdmission; now: Date },
  results: CrawlResult[],
): Promise<void> {
  const granted = await deps.frontier.reservePages(config.crawlId, fetchable.length, maxPages);
  await deps.frontier.promote(config.crawlId, fetchable.slice(0, granted));
  for (const candidate of fetchable.slice(granted)) {
    results.push(
      bareResult({ crawlId: config.crawlId, ...candidate }, 'skipped', deps.now, {
        code: 'limit',
        reason: `the crawl reached --max-pages ${maxPages}`,
      }),
    );
  }
}

/**
 * A page's links as frontier candidates: normalized, deduplicated, those this container has seen
 * left out (unless the page relinks), each with its depth and, when it is not to be fetched, why.
 */
function classify(page: DiscoveringPage, seen: LruSet): Classified[] {
  const { config } = page;
  const scope = scopeOf(config, page);
  const out = new Map<string, Classified>();
  for (const link of page.links) {
    const normalized = normalizeUrl(link.url, { maxUrlLength: config.limits.maxUrlLength });
    if (!normalized.ok) continue;
    if (out.has(normalized.key)) continue;
    if (!page.relink && seen.has(`${config.crawlId}:${normalized.key}`)) continue;
    const isRedirect = link.redirects !== undefined;
    const depth = link.prior?.depth ?? (isRedirect ? page.depth : page.depth + 1);
    const candidate: Classified = { key: normalized.key, url: normalized.url, depth };
    if (isRedirect) candidate.redirects = link.redirects;
    if (link.prior !== undefined) candidate.prior = link.prior.capture;
    const inScope = scope.inScope(new URL(normalized.url));
    if (!inScope.ok) candidate.skip = { code: 'scope', reason: inScope.detail };
    else if (depth > config.maxDepth) {
      candidate.skip = { code: 'depth', reason: `depth ${depth} is beyond --max-depth ${config.maxDepth}` };
    } else if (link.nofollow && !config.followNofollow) {
      candidate.skip = {
        code: 'nofollow',
        reason: `linked with rel=nofollow from ${page.parentUrl ?? 'a seed'}`,
      };
    } else if (link.skip) candidate.skip = link.skip;
    out.set(normalized.key, candidate);
  }
  return [...out.values()];
}

/**
 * Marks a carrier page's skipped links `carried` while their JSON fits FRONTIER_LIMITS.carriedBytes;
 * the rest go the held way. The same links make the same split, so a refetch carries what its first
 * fetch carried.
 */
function carry(page: DiscoveringPage, candidates: Classified[]): Classified[] {
  if (!page.carrier) return candidates;
  let bytes = 0;
  return candidates.map((candidate) => {
    if (!candidate.skip || bytes > FRONTIER_LIMITS.carriedBytes) return candidate;
    // A comma before every entry but the first: one byte counted for each, to be safe.
    bytes += Buffer.byteLength(JSON.stringify(carriedLink(candidate, page))) + 1;
    return bytes > FRONTIER_LIMITS.carriedBytes ? candidate : { ...candidate, carried: true };
  });
}

function carriedLink(candidate: Classified, page: DiscoveringPage): CarriedLink {
  // A link carried by an earlier fetch of the page that this one follows: only rel=nofollow can
  // change for the same page (its depth and scope do not).
  const skip = candidate.skip ?? {
    code: 'nofollow',
    reason: `linked with rel=nofollow from ${page.parentUrl ?? 'a seed'} when first fetched`,
  };
  return { url: candidate.url, key: candidate.key, depth: candidate.depth, ...skip };
}

export function visitOf(crawlId: string, host: string, ticket: string): OutgoingVisit['visit'] {
  return { v: 1, kind: 'visit', crawlId, host, ticket };
}

export interface HostToWake {
  crawlId: string;
  host: string;
}

/** Wakes each host after its URLs are put: a visit that reads the partition after the wake sees them. */
export async function wakeHosts(
  hosts: Iterable<HostToWake>,
  deps: { hosts: WakingHosts; now: Date },
): Promise<OutgoingVisit[]> {
  const now = deps.now.getTime();
  const visits: OutgoingVisit[] = [];
  const woken = await Promise.allSettled(
    [...hosts].map(async ({ crawlId, host }) => {
      const ticket = await deps.hosts.wake(crawlId, host, now);
      if (ticket !== undefined) visits.push({ visit: visitOf(crawlId, host, ticket) });
    }),
  );
  const failed = woken.find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) {
    // The caller repeats the whole admission and never sees these tickets: their claims are given
    // back, or each host would wait, with no visit on its way, for a wake after VISIT_GRACE_MS that
    // may never come (fault scenario (c): a host stuck with a claim at the end of the crawl).
    await giveBack(visits, deps.hosts);
    throw failed.reason;
  }
  return visits;
}

/** Gives back the wake claims of visits that will not be sent (each tried as hard as a send). */
export async function giveBack(visits: readonly OutgoingVisit[], hosts: WakingHosts): Promise<void> {
  await Promise.all(
    visits.map(({ visit }) =>
      retryStep(() => hosts.unwake(visit.crawlId, visit.host, visit.ticket ?? '')).catch(() => {}),
    ),
  );
}

/**
 * Confirms the sends of visits just sent, so no wake sends them again while they wait in the queue.
 * A confirm that fails leaves its claim to expire after VISIT_GRACE_MS: at worst one more visit
 * message, whose copy is stale.
 */
export async function confirmSent(visits: readonly OutgoingVisit[], hosts: WakingHosts): Promise<void> {
  await Promise.all(
    visits.map(({ visit }) =>
      visit.ticket === undefined
        ? undefined
        : hosts.confirmSent(visit.crawlId, visit.host, visit.ticket).catch(() => {}),
    ),
  );
}

/**
 * URLs that end at once with a result of their own (an invalid task, a task of a cancelled crawl):
 * admitted `held`, so their result is indexed and counted like any other, in their host's tally.
 */
export async function admitEnded(
  ended: ReadonlyArray<{ crawlId: string; url: FrontierUrl }>,
  deps: { frontier: FrontierAdmission; hosts: WakingHosts; now: Date },
): Promise<OutgoingVisit[]> {
  const woken = new Map<string, { crawlId: string; host: string }>();
  for (const [crawlId, entries] of Map.groupBy(ended, (entry) => entry.crawlId)) {
    const { admitted } = await deps.frontier.admit(
      crawlId,
      'task',
      entries.map((entry) => ({ ...entry.url, held: true })),
    );
    const fresh = admitted.filter((url) => url.fresh).length;
    if (fresh > 0) await deps.frontier.addQueued(crawlId, fresh);
    for (const url of admitted) {
      const host = frontierHost(url.url);
      woken.set(`${crawlId}\n${host}`, { crawlId, host });
    }
  }
  return wakeHosts(woken.values(), deps);
}
