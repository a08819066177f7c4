/**
 * The benchmark site: a deterministic generated website (same options + seed = same bytes) served on
 * 127.0.0.1, and the plan that says which request targets a correct crawl seeded with `/` requests.
 *
 * Shape (defaults in parentheses):
 * - Content pages `/` and `/p/1` ... `/p/(pages-1)` (5,000). Page i links its tree children (i·b+1 ...
 *   i·b+b) and random other content pages, `linksPerPage` (20) links in all, plus the nav links `/`,
 *   `/about`, `/contact`, `/help` on every page (a real site's repeated navigation). Every page is
 *   reachable from `/` through the tree; depth is at most ~4.
 * - Body sizes are log-normal: median `medianBytes` (25 KB) with σ 0.6, so the mean is ~30 KB; clamped
 *   to 2 KB..400 KB. Padding is plain text paragraphs (no markup to speak of), as article text is.
 * - robots.txt: `Disallow: /private/` for every agent; `privatePages` (20) `/private/K` pages are
 *   linked and must never be requested.
 * - `notFound` (50) `/missing/K` pages answer 404; `flaky` (20) `/flaky/K` pages answer 500 to their
 *   first request and 200 afterwards (every crawler retries them once); `redirects` (20) `/r/K` answer
 *   301 to `/moved/K`, a page linked from nowhere else. These extras are linked from the first ~100
 *   pages so their retries and redirects finish while the crawl is still running.
 *
 * - `/big/K` (linked from nowhere, for the memory benchmark) answers `BIG_PAGE_BYTES` of HTML, more
 *   than the crawler's default body cap.
 *
 * The server counts requests per target and per (target, status class): a target "fetched more than
 * once" is one that got more than one non-5xx answer; a target "missed" is a planned one that got none.
 * It can listen on several ports at once (`ports`): each port is another origin (the memory benchmark
 * needs more origins than the fetcher opens connections per origin).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BenchSiteOptions {
  pages: number;
  seed: number;
  linksPerPage: number;
  medianBytes: number;
  notFound: number;
  flaky: number;
  redirects: number;
  privatePages: number;
}

export const DEFAULT_SITE: BenchSiteOptions = {
  pages: 5_000,
  seed: 7,
  linksPerPage: 20,
  medianBytes: 25_000,
  notFound: 50,
  flaky: 20,
  redirects: 20,
  privatePages: 20,
};

export const NAV_PATHS = ['/', '/about', '/contact', '/help'] as const;
/** Size of a `/big/K` page: above the default 5 MiB body cap, so the fetcher cuts it. */
export const BIG_PAGE_BYTES = 6 * 1024 * 1024;
const MIN_BYTES = 2_000;
const MAX_BYTES = 400_000;
const SIGMA = 0.6;

export const ROBOTS_TXT = ['User-agent: *', 'Disallow: /private/', ''].join('\n');

/** mulberry32: small, fast, deterministic. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  'the crawler fetches pages from the queue and writes them to storage while links found on each page go back to the frontier where a conditional write decides whether they are new lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua'.split(
    ' ',
  );

/** ~600 KB of deterministic paragraph text; pages take slices of it as padding. */
function fillerText(seed: number): string {
  const random = prng(seed ^ 0x5bd1e995);
  const parts: string[] = [];
  let length = 0;
  while (length < MAX_BYTES + 200_000) {
    const words: string[] = [];
    const count = 40 + Math.floor(random() * 80);
    for (let w = 0; w < count; w++) words.push(WORDS[Math.floor(random() * WORDS.length)] as string);
    const paragraph = `<p>${words.join(' ')}.</p>\n`;
    parts.push(paragraph);
    length += paragraph.length;
  }
  return parts.join('');
}

export interface SitePlan {
  /** Every request target a correct crawl requests (robots.txt excluded), each answered non-5xx once. */
  expected: Set<string>;
  /** Targets that must never be requested (robots.txt disallows them). */
  forbidden: Set<string>;
  /** Content pages answered 200 with HTML, redirect targets and nav pages (what "pages" counts). */
  htmlPages: number;
}

export class BenchSiteModel {
  readonly options: BenchSiteOptions;
  private readonly sizes: number[] = [];
  private readonly links: number[][] = [];
  /** Content page index → extras it links. */
  private readonly extras = new Map<number, string[]>();
  private readonly filler: string;
  private readonly branching: number;
  private bigPage: string | undefined;

  constructor(options: Partial<BenchSiteOptions> = {}) {
    this.options = { ...DEFAULT_SITE, ...options };
    const o = this.options;
    if (!Number.isInteger(o.pages) || o.pages < 2) throw new RangeError('pages must be an integer >= 2');
    this.filler = fillerText(o.seed);
    const random = prng(o.seed);
    const mu = Math.log(o.medianBytes);
    this.branching = Math.max(1, Math.round(o.linksPerPage / 2));
    for (let i = 0; i < o.pages; i++) {
      // Box-Muller: one normal deviate per page.
      const u1 = Math.max(random(), 1e-12);
      const u2 = random();
      const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
      this.sizes.push(Math.min(MAX_BYTES, Math.max(MIN_BYTES, Math.round(Math.exp(mu + SIGMA * z)))));
      const targets: number[] = [];
      for (let c = i * this.branching + 1; c <= i * this.branching + this.branching && c < o.pages; c++) {
        targets.push(c);
      }
      for (let tries = 0; targets.length < o.linksPerPage && tries < o.linksPerPage * 10; tries++) {
        const pick = 1 + Math.floor(random() * (o.pages - 1));
        if (pick !== i && !targets.includes(pick)) targets.push(pick);
      }
      this.links.push(targets);
    }
    const extras: string[] = [];
    for (let k = 1; k <= o.privatePages; k++) extras.push(`/private/${k}`);
    for (let k = 1; k <= o.notFound; k++) extras.push(`/missing/${k}`);
    for (let k = 1; k <= o.flaky; k++) extras.push(`/flaky/${k}`);
    for (let k = 1; k <= o.redirects; k++) extras.push(`/r/${k}`);
    const hosts = Math.min(o.pages, 100);
    extras.forEach((path, n) => {
      const page = n % hosts;
      const list = this.extras.get(page) ?? [];
      list.push(path);
      this.extras.set(page, list);
    });
  }

  pagePath(index: number): string {
    return index === 0 ? '/' : `/p/${index}`;
  }

  /** Approximate body size of content page i (the log-normal draw). */
  sizeOf(index: number): number {
    return this.sizes[index] ?? 0;
  }

  /** Every same-site href page `index` writes (content, nav, extras), in order. */
  hrefsOf(index: number): string[] {
    return [
      ...(this.links[index] ?? []).map((i) => this.pagePath(i)),
      ...NAV_PATHS,
      ...(this.extras.get(index) ?? []),
    ];
  }

  private html(title: string, hrefs: readonly string[], size: number, salt: number): string {
    const items = hrefs.map((href) => `<li><a href="${href}">${href}</a></li>`).join('\n');
    const head = [
      '<!doctype html>',
      '<html lang="en"><head><meta charset="utf-8">',
      `<title>${title}</title>`,
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
      '<link rel="stylesheet" href="/static/site.css">',
      '</head><body>',
      `<header><nav><ul>\n${items}\n</ul></nav></header>`,
      `<main><h1>${title}</h1>\n`,
    ].join('\n');
    const tail = '</main><footer><p>generated benchmark site</p></footer></body></html>\n';
    const room = Math.max(0, size - head.length - tail.length);
    const start = (salt * 7919) % (this.filler.length - MAX_BYTES);
    return head + this.filler.slice(start, start + room) + tail;
  }

  /** The answer to a request target, and the number of earlier requests for it (for flaky pages). */
  answer(
    target: string,
    seenBefore: number,
  ): { status: number; headers: Record<string, string>; body: string } {
    const path = target.split('?')[0]?.split('#')[0] ?? '/';
    const htmlHeaders = { 'content-type': 'text/html; charset=utf-8' };
    const text = (status: number, body: string, extra: Record<string, string> = {}) => ({
      status,
      headers: { 'content-type': 'text/plain; charset=utf-8', ...extra },
      body,
    });
    if (path === '/robots.txt') return text(200, ROBOTS_TXT);
    if (path === '/') return { status: 200, headers: htmlHeaders, body: this.contentPage(0) };
    const content = /^\/p\/([1-9]\d*)$/.exec(path);
    if (content) {
      const index = Number(content[1]);
      if (index < this.options.pages)
        return { status: 200, headers: htmlHeaders, body: this.contentPage(index) };
    }
    if (path === '/about' || path === '/contact' || path === '/help' || /^\/moved\/\d+$/.test(path)) {
      return {
        status: 200,
        headers: htmlHeaders,
        body: this.html(path.slice(1), NAV_PATHS, 4_000, path.length),
      };
    }
    if (/^\/big\/\d+$/.test(path)) {
      this.bigPage ??= this.html('big', NAV_PATHS, 0, 1).replace('</main>', `${this.bigFiller()}</main>`);
      return { status: 200, headers: htmlHeaders, body: this.bigPage };
    }
    if (/^\/big\/\d+$/.test(path)) {
      this.bigPage ??= this.html('big', NAV_PATHS, 0, 1).replace('</main>', `${this.bigFiller()}</main>`);
      return { status: 200, headers: htmlHeaders, body: this.bigPage };
    }
    if (path.startsWith('/private/')) {
      return { status: 200, headers: htmlHeaders, body: this.html('private', NAV_PATHS, 4_000, 3) };
    }
    const redirect = /^\/r\/(\d+)$/.exec(path);
    if (redirect && Number(redirect[1]) <= this.options.redirects) {
      return text(301, 'moved\n', { location: `/moved/${redirect[1]}` });
    }
    const flaky = /^\/flaky\/(\d+)$/.exec(path);
    if (flaky && Number(flaky[1]) <= this.options.flaky) {
      if (seenBefore === 0) return text(500, 'internal error, try again\n');
      return { status: 200, headers: htmlHeaders, body: this.html(path.slice(1), NAV_PATHS, 4_000, 5) };
    }
    return text(404, 'not found\n');
  }

  private bigFiller(): string {
    const parts: string[] = [];
    for (let length = 0; length < BIG_PAGE_BYTES; length += this.filler.length) parts.push(this.filler);
    return parts.join('').slice(0, BIG_PAGE_BYTES);
  }

  private contentPage(index: number): string {
    return this.html(index === 0 ? 'Home' : `Page ${index}`, this.hrefsOf(index), this.sizeOf(index), index);
  }

  /** What a correct crawl seeded with `/` requests: breadth-first over the model. */
  plan(): SitePlan {
    const expected = new Set<string>();
    const forbidden = new Set<string>();
    const queue = ['/'];
    const seen = new Set(queue);
    let htmlPages = 0;
    for (let head = 0; head < queue.length; head++) {
      const path = queue[head] as string;
      if (path.startsWith('/private/')) {
        forbidden.add(path);
        continue;
      }
      expected.add(path);
      const next: string[] = [];
      const content = path === '/' ? 0 : /^\/p\/(\d+)$/.exec(path)?.[1];
      if (content !== undefined) {
        htmlPages++;
        next.push(...this.hrefsOf(Number(content)));
      } else if (/^\/r\/\d+$/.test(path)) next.push(`/moved/${path.slice(3)}`);
      else if (!/^\/missing\//.test(path)) htmlPages++; // nav, flaky, moved: HTML pages too
      for (const target of next) {
        if (seen.has(target)) continue;
        seen.add(target);
        queue.push(target);
      }
    }
    return { expected, forbidden, htmlPages };
  }
}

export interface ServedSite {
  origin: string;
  /** `origin` first, then one per extra port. */
  origins: string[];
  model: BenchSiteModel;
  /** Non-5xx answers per target. */
  answered: Map<string, number>;
  /** All requests per target. */
  hits: Map<string, number>;
  /** performance.now() of the first and last request since the last reset. */
  span(): { firstMs: number; lastMs: number } | undefined;
  reset(): void;
  close(): Promise<void>;
}

export async function serveBenchSite(
  options: Partial<BenchSiteOptions> = {},
  ports = 1,
): Promise<ServedSite> {
  const model = new BenchSiteModel(options);
  const hits = new Map<string, number>();
  const answered = new Map<string, number>();
  let firstMs: number | undefined;
  let lastMs = 0;
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    lastMs = performance.now();
    firstMs ??= lastMs;
    const target = request.url ?? '/';
    const before = hits.get(target) ?? 0;
    hits.set(target, before + 1);
    const answer = model.answer(target, before);
    if (answer.status < 500) answered.set(target, (answered.get(target) ?? 0) + 1);
    const body = Buffer.from(answer.body);
    response.writeHead(answer.status, { ...answer.headers, 'content-length': String(body.length) });
    response.end(request.method === 'HEAD' ? undefined : body);
  };
  const servers = await Promise.all(
    Array.from({ length: Math.max(1, ports) }, async () => {
      const server = createServer(handle);
      server.keepAliveTimeout = 30_000;
      server.maxRequestsPerSocket = 0;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      return server;
    }),
  );
  const origins = servers.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return {
    origin: origins[0] as string,
    origins,
    model,
    answered,
    hits,
    span: () => (firstMs === undefined ? undefined : { firstMs, lastMs }),
    reset() {
      hits.clear();
      answered.clear();
      firstMs = undefined;
      lastMs = 0;
    },
    close: () => closeServers(servers),
  };
}

/** Closes every server at once, dropping kept-alive connections. */
export async function closeServers(servers: readonly Server[]): Promise<void> {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
}

export interface CrawlJudgement {
  /** Planned targets requested (with a non-5xx answer) more than once. */
  duplicates: number;
  /** Planned targets never answered (non-5xx). */
  missed: number;
  /** Requests to targets robots.txt forbids. */
  forbiddenRequests: number;
  /** Requests to targets outside the plan (robots.txt aside). */
  unplanned: number;
  /** Planned HTML pages fetched (answered 200 with HTML). */
  pages: number;
}

export function judgeCrawl(
  plan: SitePlan,
  answered: ReadonlyMap<string, number>,
  hits: ReadonlyMap<string, number>,
): CrawlJudgement {
  let duplicates = 0;
  let missed = 0;
  for (const target of plan.expected) {
    const count = answered.get(target) ?? 0;
    if (count === 0) missed++;
    if (count > 1) duplicates++;
  }
  let forbiddenRequests = 0;
  let unplanned = 0;
  for (const [target, count] of hits) {
    if (plan.forbidden.has(target)) forbiddenRequests += count;
    else if (!plan.expected.has(target) && target !== '/robots.txt') unplanned += count;
  }
  return {
    duplicates,
    missed,
    forbiddenRequests,
    unplanned,
    pages: plan.htmlPages - missedHtml(plan, answered),
  };
}

function missedHtml(plan: SitePlan, answered: ReadonlyMap<string, number>): number {
  let missed = 0;
  for (const target of plan.expected) {
    if (/^\/(missing|r)\//.test(target)) continue;
    if ((answered.get(target) ?? 0) === 0) missed++;
  }
  return missed;
}
