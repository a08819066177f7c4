/**
 * The robots gate against real robots.txt servers on 127.0.0.1 through the real HttpFetcher.
 * The store and host slots are the in-memory fakes of test/fakes (checked against the adapters); the
 * clock is driven by hand so backoffs can be crossed without waiting.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { HttpFetcher } from '../../lambdas/adapters/http-fetcher.ts';
import { RETRY_BACKOFF } from '../../lambdas/core/base/index.ts';
import { type CrawlConfig, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import {
  checkRobots,
  createRobotsCache,
  MAX_ROBOTS_BYTES,
  type RobotsCache,
  type RobotsGateDeps,
} from '../../lambdas/core/robots/index.ts';
import { MemoryHostSlots } from '../fakes/host-slots.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { type CountingServer, startHttpServer, startRawServer } from '../fixtures/http-test-server.ts';

const USER_AGENT = 'GateBot/1.0 (+https://example.invalid/bot)';

const fetcher = new HttpFetcher();
const servers: CountingServer[] = [];
after(async () => {
  await fetcher.close();
  await Promise.all(servers.map((server) => server.close()));
});

async function site(handler: http.RequestListener): Promise<CountingServer> {
  const server = await startHttpServer(handler);
  servers.push(server);
  return server;
}

function text(
  body: string | Buffer,
  status = 200,
  headers: Record<string, string> = {},
): http.RequestListener {
  return (_request, response) => {
    response.writeHead(status, { 'content-type': 'text/plain', ...headers });
    response.end(body);
  };
}

/** Request paths the server saw, in order. */
function paths(server: CountingServer): string[] {
  return server.requests.map((head) => head.split(' ')[1] ?? '');
}

function config(overrides: Partial<CrawlConfig> = {}): CrawlConfig {
  return {
    ...parseCrawlConfig({
      crawlId: 'it',
      userAgent: USER_AGENT,
      allowPrivate: true,
      delayMs: 0,
      limits: { connectTimeoutMs: 1000, headersTimeoutMs: 1000, totalTimeoutMs: 2000 },
    }),
    ...overrides,
  };
}

interface World {
  store: MemoryRobotsStore;
  slots: MemoryHostSlots;
  cache: RobotsCache;
  clock: { now: number };
  deps(extra?: Partial<RobotsGateDeps>): RobotsGateDeps;
}

function world(): World {
  const w: World = {
    store: new MemoryRobotsStore(),
    slots: new MemoryHostSlots(),
    cache: createRobotsCache(100),
    clock: { now: Date.now() },
    deps: (extra = {}) => ({
      store: w.store,
      slots: w.slots,
      fetcher,
      crawlId: 'it',
      now: () => w.clock.now,
      cache: w.cache,
      sleep: async (ms) => {
        w.clock.now += ms;
      },
      ...extra,
    }),
  };
  return w;
}

const RULES = `# test site
User-agent: *
Disallow: /private
Allow: /private/public

User-agent: GateBot
Crawl-delay: 3
Disallow: /no-gatebot
Allow: /
`;

describe('robots gate over HTTP', () => {
  it('200: applies the rules for our agent with its Crawl-delay, fetching once with our User-Agent', async () => {
    const server = await site(text(RULES));
    const w = world();
    const c = config();
    assert.deepEqual(await checkRobots(new URL(server.url('/a')), c, w.deps()), {
      kind: 'allowed',
      crawlDelaySeconds: 3,
    });
    assert.equal((await checkRobots(new URL(server.url('/no-gatebot/x')), c, w.deps())).kind, 'disallowed');
    // The GateBot group replaces the * group: /private is allowed for it.
    assert.equal((await checkRobots(new URL(server.url('/private')), c, w.deps())).kind, 'allowed');
    const other = config({ userAgent: 'OtherBot/2' });
    assert.equal((await checkRobots(new URL(server.url('/private/x')), other, w.deps())).kind, 'disallowed');
    assert.deepEqual(paths(server), ['/robots.txt']);
    assert.match(
      server.requests[0] ?? '',
      /\r\nuser-agent: GateBot\/1\.0 \(\+https:\/\/example\.invalid\/bot\)\r\n/i,
    );
    assert.equal(w.store.item('it', new URL(server.url()).origin)?.st, 'ready');
    // Crawl-delay 3 s pushed the host's next slot.
    assert.ok(w.slots.next >= w.clock.now + 3000 - 50);
  });

  it('404: allow all', async () => {
    const server = await site(text('User-agent: *\nDisallow: /', 404));
    const w = world();
    assert.deepEqual(await checkRobots(new URL(server.url('/anything')), config(), w.deps()), {
      kind: 'allowed',
    });
    assert.deepEqual(paths(server), ['/robots.txt']);
  });

  it('500 then 200: unavailable, deferred 30 s, then fetched again and applied', async () => {
    let calls = 0;
    const server = await site((request, response) => {
      calls += 1;
      if (calls === 1) {
        response.writeHead(500);
        response.end('busy');
        return;
      }
      text('User-agent: *\nDisallow: /late\n')(request, response);
    });
    const w = world();
    const start = w.clock.now;
    const first = await checkRobots(new URL(server.url('/late/1')), config(), w.deps());
    assert.equal(first.kind, 'defer');
    assert.equal(first.kind === 'defer' ? first.untilMs : 0, start + RETRY_BACKOFF.robotsUnreachable.baseMs);
    assert.match(first.kind === 'defer' ? first.reason : '', /HTTP 500/);
    // Before retryAt nobody asks the server again.
    w.clock.now = start + 10_000;
    assert.equal((await checkRobots(new URL(server.url('/late/2')), config(), w.deps())).kind, 'defer');
    assert.equal(calls, 1);
    w.clock.now = start + RETRY_BACKOFF.robotsUnreachable.baseMs;
    assert.equal((await checkRobots(new URL(server.url('/late/1')), config(), w.deps())).kind, 'disallowed');
    assert.equal((await checkRobots(new URL(server.url('/early')), config(), w.deps())).kind, 'allowed');
    assert.deepEqual(paths(server), ['/robots.txt', '/robots.txt']);
  });

  it('fails the origin with robots-unavailable on the 4th failure', async () => {
    const server = await site(text('down', 503));
    const w = world();
    const verdicts: string[] = [];
    for (let attempt = 0; attempt < 4; attempt += 1) {
      const verdict = await checkRobots(new URL(server.url('/x')), config(), w.deps());
      verdicts.push(verdict.kind === 'failed' ? verdict.code : verdict.kind);
      if (verdict.kind === 'defer') w.clock.now = verdict.untilMs;
    }
    assert.deepEqual(verdicts, ['defer', 'defer', 'defer', 'robots-unavailable']);
    assert.equal(server.requests.length, 4);
  });

  it('follows a redirect chain of 3 (one hop to another origin) and applies the final file', async () => {
    const final = await site(text('User-agent: *\nDisallow: /chained\n'));
    const server = await site((request, response) => {
      const next: Record<string, string> = {
        '/robots.txt': '/r1',
        '/r1': '/r2',
        '/r2': final.url('/robots-final.txt'),
      };
      const location = next[request.url ?? ''];
      response.writeHead(location ? 301 : 404, location ? { location } : {});
      response.end();
    });
    const w = world();
    assert.equal(
      (await checkRobots(new URL(server.url('/chained/1')), config(), w.deps())).kind,
      'disallowed',
    );
    assert.equal((await checkRobots(new URL(server.url('/open')), config(), w.deps())).kind, 'allowed');
    assert.deepEqual(paths(server), ['/robots.txt', '/r1', '/r2']);
    assert.deepEqual(paths(final), ['/robots-final.txt']);
    // The policy belongs to the original origin, not to the redirect target.
    assert.equal(w.store.item('it', new URL(final.url()).origin), undefined);
  });

  it('gives up after 5 redirects (a chain of 6): allow all', async () => {
    const server = await site((request, response) => {
      const n = request.url === '/robots.txt' ? 0 : Number(request.url?.slice(2));
      if (n < 6) {
        response.writeHead(302, { location: `/r${n + 1}` });
        response.end();
        return;
      }
      text('User-agent: *\nDisallow: /\n')(request, response);
    });
    const w = world();
    assert.equal((await checkRobots(new URL(server.url('/x')), config(), w.deps())).kind, 'allowed');
    assert.deepEqual(paths(server), ['/robots.txt', '/r1', '/r2', '/r3', '/r4', '/r5']);
  });

  it('reads at most 512 KiB: a rule after the cut is ignored', async () => {
    const head = 'User-agent: *\nDisallow: /before\n';
    const line = `# ${'x'.repeat(1021)}\n`; // 1 KiB comment lines
    const body = `${head}${line.repeat(600)}Disallow: /after\n`;
    assert.ok(Buffer.byteLength(body) > 600 * 1024);
    const server = await site(text(body));
    const w = world();
    assert.equal((await checkRobots(new URL(server.url('/before')), config(), w.deps())).kind, 'disallowed');
    assert.equal((await checkRobots(new URL(server.url('/after')), config(), w.deps())).kind, 'allowed');
    assert.deepEqual(paths(server), ['/robots.txt']);
    const stored = JSON.parse(w.store.item('it', new URL(server.url()).origin)?.policyJson ?? '{}');
    assert.equal(stored.truncated, true);
    assert.equal(MAX_ROBOTS_BYTES, 512 * 1024);
  });

  it('undoes Content-Encoding: gzip', async () => {
    const server = await site(
      text(gzipSync('User-agent: *\nDisallow: /zipped\n'), 200, { 'content-encoding': 'gzip' }),
    );
    const w = world();
    assert.equal((await checkRobots(new URL(server.url('/zipped')), config(), w.deps())).kind, 'disallowed');
    assert.match(server.requests[0] ?? '', /accept-encoding: gzip/i);
  });

  it('429 with Retry-After: unavailable until then, and the host slot is pushed back', async () => {
    const server = await site(text('slow down', 429, { 'retry-after': '90' }));
    const w = world();
    const start = w.clock.now;
    const verdict = await checkRobots(new URL(server.url('/x')), config(), w.deps());
    assert.equal(verdict.kind === 'defer' ? verdict.untilMs : 0, start + 90_000);
    assert.equal(w.slots.next, start + 90_000);
  });

  it("Retry-After of decades on robots.txt: the host rests and the URL waits at most the crawl's cap", async () => {
    const server = await site(text('go away', 503, { 'retry-after': '999999999' }));
    const w = world();
    const start = w.clock.now;
    const verdict = await checkRobots(new URL(server.url('/x')), config(), w.deps());
    const cap = config().maxRetryAfterMs;
    assert.equal(verdict.kind === 'defer' ? verdict.untilMs : 0, start + cap);
    assert.equal(w.slots.next, start + cap);
  });

  it('a server that never answers: timeout, unavailable', async () => {
    const raw = await startRawServer(() => {});
    servers.push(raw);
    const w = world();
    const c = config({ limits: { ...config().limits, totalTimeoutMs: 300, headersTimeoutMs: 5000 } });
    const verdict = await checkRobots(new URL(raw.url('/x')), c, w.deps());
    assert.equal(verdict.kind, 'defer');
    assert.match(verdict.kind === 'defer' ? verdict.reason : '', /timeout/);
    assert.equal(w.store.item('it', new URL(raw.url()).origin)?.st, 'unavailable');
  });

  it('a loopback origin without allowPrivate: address-blocked, nothing sent', async () => {
    const server = await site(text(RULES));
    const w = world();
    const verdict = await checkRobots(new URL(server.url('/a')), config({ allowPrivate: false }), w.deps());
    assert.equal(verdict.kind, 'failed');
    assert.equal(verdict.kind === 'failed' ? verdict.code : '', 'address-blocked');
    assert.equal(server.connections, 0);
  });
});

describe('robots gate: once per origin under concurrency', () => {
  /** Answers robots.txt after a pause, so that concurrent checks really overlap. */
  async function slowSite(): Promise<CountingServer> {
    return site((request, response) => {
      setTimeout(() => text('User-agent: *\nDisallow: /odd\n')(request, response), 100);
    });
  }

  it('20 concurrent checks sharing one store and one cache request robots.txt once', async () => {
    const a = await slowSite();
    const b = await slowSite();
    const w = world();
    const urls = Array.from(
      { length: 20 },
      (_, i) => new URL((i < 10 ? a : b).url(i % 2 ? `/odd/${i}` : `/even/${i}`)),
    );
    const verdicts = await Promise.all(urls.map((url) => checkRobots(url, config(), w.deps())));
    assert.deepEqual(
      verdicts.map((verdict) => verdict.kind),
      urls.map((url) => (url.pathname.startsWith('/odd') ? 'disallowed' : 'allowed')),
    );
    assert.deepEqual(paths(a), ['/robots.txt']);
    assert.deepEqual(paths(b), ['/robots.txt']);
  });

  it('20 concurrent checks from 20 containers (one store, own caches) request it once; the rest defer', async () => {
    const server = await slowSite();
    const w = world();
    const verdicts = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        checkRobots(new URL(server.url(`/odd/${i}`)), config(), w.deps({ cache: createRobotsCache(10) })),
      ),
    );
    assert.deepEqual(paths(server), ['/robots.txt']);
    const kinds = verdicts.map((verdict) => verdict.kind);
    assert.equal(kinds.filter((kind) => kind === 'disallowed').length, 1);
    assert.equal(kinds.filter((kind) => kind === 'defer').length, 19);
    // When they come back, the store answers them without another request.
    const again = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        checkRobots(new URL(server.url(`/odd/${i}`)), config(), w.deps({ cache: createRobotsCache(10) })),
      ),
    );
    assert.ok(again.every((verdict) => verdict.kind === 'disallowed'));
    assert.deepEqual(paths(server), ['/robots.txt']);
  });
});
