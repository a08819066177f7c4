// A visit near its deadline: no request starts that could not end before it (robots.txt, each of its
// redirects, the page after them), and a page not started costs nothing (no attempt): the host is
// handed back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type CrawlConfig,
  type HostUrl,
  type PageFetcher,
  type PageRequest,
  type PageResponse,
  parseCrawlConfig,
} from '../../lambdas/core/crawl/index.ts';
import { visitHost } from '../../lambdas/core/fetch/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';

const CRAWL = 'deadline-test';
const HOST = 'slow.sim.test';
/** A request's total deadline; the visit keeps it + 1 s free per request. */
const TOTAL_MS = 500;

function config(delayMs = 0, respectRobots = true): CrawlConfig {
  return parseCrawlConfig({
    respectRobots,
    crawlId: CRAWL,
    seeds: [`http://${HOST}/`],
    allowPrivate: true,
    delayMs,
    limits: { totalTimeoutMs: TOTAL_MS },
    createdAt: new Date().toISOString(),
  });
}

function item(path: string): HostUrl {
  const normalized = normalizeUrl(`http://${HOST}${path}`);
  if (!normalized.ok) throw new Error(path);
  return { key: normalized.key, url: normalized.url, depth: 1, st: 'new' };
}

/** Answers each request after `latencyMs`; robots.txt redirects `robotsHops` times first. */
class SlowHost implements PageFetcher {
  readonly requests: Array<{ path: string; at: number; end: number }> = [];
  private readonly latencyMs: number;
  private readonly robotsHops: number;
  constructor(latencyMs: number, robotsHops = 0) {
    this.latencyMs = latencyMs;
    this.robotsHops = robotsHops;
  }
  async fetch(request: PageRequest): Promise<PageResponse> {
    const at = Date.now();
    await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    const path = request.url.pathname;
    const hop = path === '/robots.txt' ? 0 : path.startsWith('/r') ? Number(path.slice(2)) : -1;
    const redirect = hop >= 0 && hop < this.robotsHops;
    const headers: Array<[string, string]> = redirect
      ? [['location', `/r${hop + 1}`]]
      : [['content-type', hop >= 0 ? 'text/plain' : 'text/html']];
    const body = new TextEncoder().encode(hop >= 0 ? 'User-agent: *\nAllow: /\n' : '<p>page</p>');
    this.requests.push({ path, at, end: Date.now() });
    return {
      url: request.url.href,
      requestLine: `GET ${path} HTTP/1.1`,
      requestHeaders: [],
      httpVersion: '1.1',
      status: redirect ? 301 : 200,
      statusText: redirect ? 'Moved' : 'OK',
      headers,
      body: redirect ? new Uint8Array() : body,
      truncated: undefined,
      remoteAddress: '127.0.0.2',
      startedAt: new Date(at),
      sentAt: at,
      elapsedMs: Date.now() - at,
    };
  }
}

/** Where a visit could spend what it must not spend for lack of time: URL attempts, robots.txt ones. */
function ledger() {
  return { urls: new MemoryFrontierUrls(), robots: new MemoryRobotsStore() };
}

function visitDeps(
  fetcher: PageFetcher,
  urls: HostUrl[],
  deadline: number,
  spent: ReturnType<typeof ledger>,
) {
  const crawl = config();
  spent.urls.seed(CRAWL, urls);
  return {
    fetcher,
    configs: { get: async () => crawl },
    robots: spent.robots,
    robotsCache: createRobotsCache(10),
    hostUrls: spent.urls,
    deadline,
    now: () => Date.now(),
    sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  };
}

function visit(
  fetcher: PageFetcher,
  urls: HostUrl[],
  deadline: number,
  spent: ReturnType<typeof ledger>,
  delayMs = 0,
) {
  const crawl = config(delayMs);
  const deps = { ...visitDeps(fetcher, urls, deadline, spent), configs: { get: async () => crawl } };
  return visitHost({ crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] }, crawl, deps, () => {});
}

describe('visitHost near its deadline', () => {
  it('stops following robots.txt redirects that could not end in time (one failed robots.txt attempt, no page attempt)', async () => {
    // Each hop takes 800 ms: hops 0-2 fit before the deadline (each needs 1.5 s free), hop 3 does not.
    const host = new SlowHost(800, 5);
    const spent = ledger();
    const deadline = Date.now() + 3_300;
    const report = await visit(host, [item('/a')], deadline, spent);
    for (const request of host.requests)
      assert.ok(
        request.end <= deadline,
        `${request.path} ended ${request.end - deadline} ms after the deadline`,
      );
    assert.deepEqual(
      host.requests.map((request) => request.path),
      ['/robots.txt', '/r1', '/r2'],
    );
    assert.equal(report.end.kind, 'hand-back');
    // A chain that cannot end in one invocation may never: one failed attempt of at most 4, with backoff.
    assert.equal(spent.robots.calls.saveUnavailable, 1);
    assert.equal(spent.robots.calls.saveReady, 0);
    assert.deepEqual(spent.urls.postponed, [], 'no attempt of the page spent');
  });

  it('does not start the page after robots.txt when the host pace leaves no time for it', async () => {
    // robots.txt at once (300 ms); the page must then wait the 1.8 s delay, and 1.8 s + its 1.5 s
    // budget is past the deadline (robots.txt and a page at once would have fitted: 3 s).
    const host = new SlowHost(300);
    const spent = ledger();
    const deadline = Date.now() + 3_100;
    const report = await visit(host, [item('/a')], deadline, spent, 1_800);
    assert.deepEqual(
      host.requests.map((request) => request.path),
      ['/robots.txt'],
    );
    assert.equal(spent.robots.calls.saveReady, 1, 'the policy fetched is kept');
    assert.deepEqual(spent.urls.postponed, [], 'the page is not a failed attempt');
    assert.ok(report.end.kind === 'hand-back' && report.end.why === 'deadline', JSON.stringify(report.end));
    assert.ok(report.end.kind === 'hand-back' && report.end.visitAt >= report.pace.nextAt - 1);
    assert.deepEqual(report.inflight, [], 'the page is still to be fetched by the next visit');
  });

  it('ends a wait for the host pace when its deadline moves to now (a local runtime winding down on Ctrl-C)', async () => {
    // The second page is due 20 s after the first; the deadline moves to "now" as the visit starts
    // waiting for it. The visit hands its host back at its next look at the deadline, not 20 s later.
    const host = new SlowHost(10);
    const spent = ledger();
    const crawl = config(20_000, false);
    let deadline = Date.now() + 600_000;
    const base = visitDeps(host, [item('/a'), item('/b')], deadline, spent);
    const deps = {
      ...base,
      configs: { get: async () => crawl },
      get deadline() {
        return deadline;
      },
      sleep: (ms: number) => {
        deadline = Date.now();
        return base.sleep(ms);
      },
    };
    const report = await visitHost(
      { crawlId: CRAWL, host: HOST, pace: { nextAt: 0 }, inflight: [] },
      crawl,
      deps,
      () => {},
    );
    const endedAt = Date.now();
    assert.deepEqual(
      host.requests.map((request) => request.path).length,
      1,
      'no request after the deadline moved',
    );
    assert.ok(report.end.kind === 'hand-back' && report.end.why === 'deadline', JSON.stringify(report.end));
    const dueAt = (host.requests[0]?.at ?? 0) + 20_000;
    assert.ok(
      endedAt < dueAt,
      `the visit waited out the pace: ended ${endedAt - dueAt} ms after the next page was due`,
    );
    assert.ok(
      report.end.kind === 'hand-back' && report.end.visitAt >= dueAt,
      'the next visit keeps the pace',
    );
  });
});
