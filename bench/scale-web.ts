/**
 * The synthetic web of the scale simulation (bench/scale.ts), generated from a seed: the same seed
 * gives the same web. No sockets: the fetcher answers PageResponse objects after a virtual latency.
 *
 * - `hosts` in-scope hosts (`siteN.test`) holding `urls` pages, heavy-tailed: a few giants share 30 %
 *   of the pages (50,000+ each at 10,000 hosts and 1,000,000 pages), 85 % of hosts hold 1-20 pages,
 *   the rest share what is left by a Pareto law.
 * - 30 links a page: a page's 8 children (`p*8+1...`, so every page is reachable from its host's root
 *   at depth <= 6), other pages of its host, 6 to other in-scope hosts (half to the large ones), 3 out
 *   of scope: two share-link hosts linked from every page (`shareN.test/share?u=<site>`), and one of a
 *   pool of out-of-scope pages.
 * - 1 % of responses fail or are slow: a dead link (404) on 0.4 % of pages, a 503 on the first
 *   request of 0.3 % (fetched on the retry), 4 s of latency on 0.3 %.
 * - robots.txt on every host; seeds: every host's root plus other pages, `urls / 10` in all.
 *
 * It also judges the crawl from the requests it answered: each page once (twice for a 503), robots.txt
 * once per host, nothing out of scope, and the gaps between a host's requests.
 */
import type { PageFetcher, PageRequest, PageResponse } from '../lambdas/core/crawl/index.ts';

export interface ScaleWebOptions {
  seed: number;
  hosts: number;
  urls: number;
  /** Seed URLs (default urls / 10, at least one per host). */
  seeds?: number;
}

const LINKS_PER_PAGE = 30;
const CHILDREN = 8;
const SAME_HOST_LINKS = 21;
const CROSS_HOST_LINKS = 6;
const SHARE_HOSTS = 2;
const GIANT_SHARE = 0.3;
const SMALL_SHARE = 0.85;
const LATENCY_MS = 150;
const SLOW_MS = 4_000;
/** Per 1,000 pages. */
const DEAD_PER_MILLE = 4;
const TRANSIENT_PER_MILLE = 3;
const SLOW_PER_MILLE = 3;

/** A 32-bit hash of integers (murmur3's finalizer over a running mix). */
function hash(...values: number[]): number {
  let h = 0x9e3779b9;
  for (const value of values) {
    h = Math.imul(h ^ (value | 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** A deterministic generator of floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ServedRequest {
  host: string;
  at: number;
}

export class ScaleWeb {
  readonly seed: number;
  readonly sizes: Int32Array;
  readonly hosts: number;
  readonly urls: number;
  /** Hosts with most pages first: giants, then the Pareto middle (cross links favour them). */
  readonly largeHosts: number;
  readonly outPool: number;
  readonly outHosts: number;
  /** Requests answered per page, per host (index: page number). */
  readonly #pageRequests: Uint8Array[];
  readonly #robotsRequests: Uint8Array;
  readonly #otherRequests = new Map<string, number>();
  readonly #lastAt: Float64Array;
  /** Requests answered per in-scope host. */
  readonly #hostRequests: Uint32Array;
  /** Gaps between two requests to one host shorter than the delay, and the shortest gap. */
  shortGaps = 0;
  minGapMs = Number.POSITIVE_INFINITY;
  requests = 0;
  readonly #delayMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(
    options: ScaleWebOptions,
    clock: { now: () => number; sleep: (ms: number) => Promise<void> },
    delayMs: number,
  ) {
    this.seed = options.seed;
    this.hosts = options.hosts;
    this.urls = options.urls;
    this.sizes = hostSizes(options);
    const giants = giantCount(options.hosts);
    this.largeHosts = options.hosts - Math.round(options.hosts * SMALL_SHARE);
    if (this.largeHosts <= giants) this.largeHosts = Math.min(options.hosts, giants + 1);
    this.outPool = Math.max(100, Math.round(options.urls / 10));
    this.outHosts = Math.max(10, Math.round(options.hosts / 5));
    this.#pageRequests = Array.from(this.sizes, (size) => new Uint8Array(size));
    this.#robotsRequests = new Uint8Array(options.hosts);
    this.#lastAt = new Float64Array(options.hosts).fill(Number.NEGATIVE_INFINITY);
    this.#hostRequests = new Uint32Array(options.hosts);
    this.#delayMs = delayMs;
    this.#now = clock.now;
    this.#sleep = clock.sleep;
  }

  hostName(index: number): string {
    return `site${index}.test`;
  }

  pageUrl(host: number, page: number): string {
    return page === 0 ? `http://${this.hostName(host)}/` : `http://${this.hostName(host)}/p${page}`;
  }

  /** The seed list: every host's root, then other pages of the large hosts, all distinct. */
  seeds(count = Math.max(this.hosts, Math.round(this.urls / 10))): string[] {
    const seeds = Array.from({ length: this.hosts }, (_, host) => this.pageUrl(host, 0));
    const seen = new Set<number>();
    const random = mulberry32(this.seed ^ 0x5eed);
    const capacity = this.urls - this.hosts;
    for (
      let tries = 0;
      seeds.length < Math.min(count, this.hosts + capacity) && tries < count * 20;
      tries++
    ) {
      const host = Math.floor(random() * this.largeHosts);
      const size = this.sizes[host]!;
      if (size < 2) continue;
      const page = 1 + Math.floor(random() * (size - 1));
      const id = host * 0x100000 + page;
      if (seen.has(id)) continue;
      seen.add(id);
      seeds.push(this.pageUrl(host, page));
    }
    return seeds;
  }

  isDead(host: number, page: number): boolean {
    return hash(this.seed, host, page, 1) % 1000 < DEAD_PER_MILLE;
  }

  #isTransient(host: number, page: number): boolean {
    return hash(this.seed, host, page, 2) % 1000 < TRANSIENT_PER_MILLE;
  }

  #isSlow(host: number, page: number): boolean {
    return hash(this.seed, host, page, 3) % 1000 < SLOW_PER_MILLE;
  }

  /** The page's 30 links (duplicates possible, as on real pages). */
  links(host: number, page: number): string[] {
    const size = this.sizes[host]!;
    const links: string[] = [];
    for (let i = 1; i <= CHILDREN; i++) {
      const child = page * CHILDREN + i;
      if (child < size) links.push(this.pageUrl(host, child));
    }
    let k = 10;
    while (links.length < SAME_HOST_LINKS)
      links.push(this.pageUrl(host, hash(this.seed, host, page, k++) % size));
    if (this.isDead(host, page)) links[SAME_HOST_LINKS - 1] = `http://${this.hostName(host)}/gone${page}`;
    for (let i = 0; i < CROSS_HOST_LINKS; i++) {
      const h = hash(this.seed, host, page, 100 + i);
      const target = h % 2 === 0 ? (h >>> 1) % this.largeHosts : (h >>> 1) % this.hosts;
      const other = target === host ? (target + 1) % this.hosts : target;
      const targetPage = (h >>> 3) % 2 === 0 ? 0 : hash(this.seed, host, page, 200 + i) % this.sizes[other]!;
      links.push(this.pageUrl(other, targetPage));
    }
    for (let j = 0; j < SHARE_HOSTS; j++) links.push(`http://share${j}.test/share?u=${this.hostName(host)}`);
    links.push(this.#outUrl(hash(this.seed, host, page, 300) % this.outPool));
    return links.slice(0, LINKS_PER_PAGE);
  }

  #outUrl(index: number): string {
    return `http://out${index % this.outHosts}.test/x${index}`;
  }

  /**
   * Every URL the crawl must end with one result line for: the pages, the dead links, and the distinct
   * out-of-scope link targets (skipped results).
   */
  planned(): Set<string> {
    const planned = new Set<string>();
    const outUsed = new Uint8Array(this.outPool);
    for (let host = 0; host < this.hosts; host++) {
      const size = this.sizes[host]!;
      for (let page = 0; page < size; page++) {
        planned.add(this.pageUrl(host, page));
        if (this.isDead(host, page)) planned.add(`http://${this.hostName(host)}/gone${page}`);
        outUsed[hash(this.seed, host, page, 300) % this.outPool] = 1;
      }
      for (let j = 0; j < SHARE_HOSTS; j++)
        planned.add(`http://share${j}.test/share?u=${this.hostName(host)}`);
    }
    for (let index = 0; index < this.outPool; index++) if (outUsed[index]) planned.add(this.#outUrl(index));
    return planned;
  }

  fetcher(): PageFetcher {
    return { fetch: (request) => this.#serve(request) };
  }

  async #serve(request: PageRequest): Promise<PageResponse> {
    const url = request.url;
    const sentAt = this.#now();
    const match = /^site(\d+)\.test$/.exec(url.hostname);
    const host = match ? Number(match[1]) : -1;
    this.requests++;
    if (host >= 0 && host < this.hosts) {
      this.#hostRequests[host]!++;
      const gap = sentAt - this.#lastAt[host]!;
      if (gap < this.minGapMs) this.minGapMs = gap;
      if (gap < this.#delayMs) this.shortGaps++;
      this.#lastAt[host] = sentAt;
    }
    const path = url.pathname;
    const page = path === '/' ? 0 : /^\/p(\d+)$/.test(path) ? Number(path.slice(2)) : -1;
    let status = 200;
    let body = '';
    let latency = LATENCY_MS;
    let contentType = 'text/html; charset=utf-8';
    if (host < 0 || host >= this.hosts) {
      this.#otherRequests.set(url.href, (this.#otherRequests.get(url.href) ?? 0) + 1);
      status = 404;
    } else if (path === '/robots.txt') {
      this.#robotsRequests[host]!++;
      contentType = 'text/plain';
      body = 'User-agent: *\nDisallow: /private/\n';
    } else if (page >= 0 && page < this.sizes[host]!) {
      const requests = this.#pageRequests[host]!;
      requests[page] = Math.min(255, requests[page]! + 1);
      if (this.#isSlow(host, page)) latency = SLOW_MS;
      if (this.#isTransient(host, page) && requests[page] === 1) status = 503;
      else body = this.#html(host, page);
    } else {
      this.#otherRequests.set(url.href, (this.#otherRequests.get(url.href) ?? 0) + 1);
      status = 404;
    }
    await this.#sleep(latency);
    const bytes = new TextEncoder().encode(body);
    return {
      url: url.href,
      requestLine: `GET ${path}${url.search} HTTP/1.1`,
      requestHeaders: [
        ['host', url.host],
        ['user-agent', request.userAgent],
      ],
      httpVersion: '1.1',
      status,
      statusText: status === 200 ? 'OK' : status === 503 ? 'Service Unavailable' : 'Not Found',
      headers: [
        ['content-type', contentType],
        ['content-length', String(bytes.length)],
      ],
      body: bytes,
      truncated: undefined,
      remoteAddress: '192.0.2.1',
      startedAt: new Date(sentAt),
      sentAt,
      elapsedMs: latency,
    };
  }

  #html(host: number, page: number): string {
    const links = this.links(host, page)
      .map((href, i) => `<li><a href="${href}">link ${i}</a></li>`)
      .join('');
    return (
      `<!doctype html><html><head><title>Site ${host} page ${page}</title></head><body><main>` +
      `<h1>Site ${host}, page ${page}</h1><p>Synthetic page ${page} of site ${host} for the scale simulation, ` +
      `with a paragraph of text so that extraction has something to keep.</p><ul>${links}</ul></main></body></html>`
    );
  }

  /** What the requests say: pages not requested once, robots.txt not once per host, requests out of scope. */
  judge(): { pagesNotOnce: number; robotsNotOnce: number; outOfScopeRequests: number; deadRequests: number } {
    let pagesNotOnce = 0;
    let robotsNotOnce = 0;
    for (let host = 0; host < this.hosts; host++) {
      const requests = this.#pageRequests[host]!;
      for (let page = 0; page < requests.length; page++) {
        const expected = this.#isTransient(host, page) ? 2 : 1;
        if (requests[page] !== expected) pagesNotOnce++;
      }
      if (this.#robotsRequests[host] !== 1) robotsNotOnce++;
    }
    let outOfScopeRequests = 0;
    let deadRequests = 0;
    for (const [href, count] of this.#otherRequests) {
      if (/^http:\/\/site\d+\.test\/gone\d+$/.test(href)) {
        if (count !== 1) deadRequests++;
      } else outOfScopeRequests += count;
    }
    return { pagesNotOnce, robotsNotOnce, outOfScopeRequests, deadRequests };
  }

  /**
   * The requests of the busiest host, as answered: at one request per delay, no crawl fetches what
   * this one did in less than that many delays (the politeness bound; for a run stopped part way, the
   * bound of what it did fetch).
   */
  busiestHostRequests(): number {
    let most = 0;
    for (const requests of this.#hostRequests) most = Math.max(most, requests);
    return most;
  }
}

function giantCount(hosts: number): number {
  return Math.max(1, Math.round(hosts / 2000));
}

/** Pages per host: giants, small hosts of 1-20, and a Pareto middle that takes the rest. */
export function hostSizes(options: ScaleWebOptions): Int32Array {
  const { hosts, urls } = options;
  const random = mulberry32(options.seed);
  const sizes = new Int32Array(hosts);
  const giants = giantCount(hosts);
  const small = Math.min(hosts - giants - 1, Math.round(hosts * SMALL_SHARE));
  const middle = hosts - giants - small;
  let left = urls;
  for (let i = hosts - small; i < hosts; i++) {
    sizes[i] = 1 + Math.floor(random() * 20);
    left -= sizes[i]!;
  }
  const giantTotal = Math.round(urls * GIANT_SHARE);
  for (let i = 0; i < giants; i++) sizes[i] = Math.floor(giantTotal / giants);
  left -= sizes[0]! * giants;
  const weights = Array.from({ length: middle }, () => (1 - random()) ** (-1 / 1.2));
  const total = weights.reduce((a, b) => a + b, 0);
  const cap = sizes[0]! - 1;
  let given = 0;
  for (let j = 0; j < middle; j++) {
    const size = Math.min(cap, Math.max(21, Math.floor((left * weights[j]!) / total)));
    sizes[giants + j] = size;
    given += size;
  }
  // What rounding and the cap left over goes to the middle hosts in turn, one page at a time.
  for (let j = 0; given < left && middle > 0; j = (j + 1) % middle) {
    if (sizes[giants + j]! < cap) {
      sizes[giants + j]!++;
      given++;
    }
  }
  if (given > left) throw new Error(`cannot spread ${urls} pages over ${hosts} hosts in this shape`);
  return sizes;
}
