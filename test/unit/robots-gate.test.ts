/**
 * The robots gate's state machine over in-memory ports: the robots store and host slots of
 * test/fakes (checked against the adapters), a scripted fetcher and a hand-driven clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { FatalError, PermanentError, RETRY_BACKOFF, RetryableError } from '../../lambdas/core/base/index.ts';
import {
  type CrawlConfig,
  type PageFetcher,
  type PageRequest,
  type PageResponse,
  parseCrawlConfig,
  reservedGapMs,
} from '../../lambdas/core/crawl/index.ts';
import {
  ALLOW_ALL,
  checkRobots,
  createRobotsCache,
  MAX_ROBOTS_BYTES,
  parseRobots,
  policyFromJson,
  ROBOTS_POLL_MS,
  ROBOTS_TTL_MS,
  type RobotsCache,
  type RobotsGateDeps,
  robotsFetchBudgetMs,
} from '../../lambdas/core/robots/index.ts';
import { MemoryHostSlots } from '../fakes/host-slots.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';

const DAY = 24 * 60 * 60 * 1000;
const T0 = Date.UTC(2025, 0, 1);
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

type Script = (request: PageRequest, call: number) => PageResponse | Error;

function response(
  url: URL,
  status: number,
  body: string | Uint8Array = '',
  headers: Array<[string, string]> = [],
  truncated?: 'length' | 'time',
): PageResponse {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  return {
    url: url.href,
    requestLine: `GET ${url.pathname} HTTP/1.1`,
    requestHeaders: [],
    httpVersion: '1.1',
    status,
    statusText: '',
    headers,
    body: bytes,
    truncated,
    remoteAddress: '127.0.0.1',
    startedAt: new Date(),
    elapsedMs: 1,
  };
}

class ScriptedFetcher implements PageFetcher {
  readonly requests: PageRequest[] = [];
  readonly #script: Script;

  constructor(script: Script) {
    this.#script = script;
  }

  async fetch(request: PageRequest): Promise<PageResponse> {
    this.requests.push(request);
    await tick();
    const result = this.#script(request, this.requests.length);
    if (result instanceof Error) throw result;
    return result;
  }

  get urls(): string[] {
    return this.requests.map((request) => request.url.href);
  }
}

const serve =
  (text: string, status = 200): Script =>
  (request) =>
    response(request.url, status, text);

const ROBOTS =
  'User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: slowbot\nCrawl-delay: 7\nDisallow: /slow\n';

function makeConfig(overrides: Partial<CrawlConfig> = {}): CrawlConfig {
  return { ...parseCrawlConfig({ crawlId: 'c1', userAgent: 'TestBot/1.0', delayMs: 1000 }), ...overrides };
}

interface Harness {
  store: MemoryRobotsStore;
  slots: MemoryHostSlots;
  fetcher: ScriptedFetcher;
  cache: RobotsCache;
  clock: { now: number };
  sleeps: number[];
  deps(extra?: Partial<RobotsGateDeps>): RobotsGateDeps;
}

function harness(script: Script): Harness {
  const h: Harness = {
    store: new MemoryRobotsStore(),
    slots: new MemoryHostSlots(),
    fetcher: new ScriptedFetcher(script),
    cache: createRobotsCache(100),
    clock: { now: T0 },
    sleeps: [],
    deps: (extra = {}) => ({
      store: h.store,
      slots: h.slots,
      fetcher: h.fetcher,
      crawlId: 'c1',
      now: () => h.clock.now,
      cache: h.cache,
      sleep: async (ms) => {
        h.sleeps.push(ms);
        h.clock.now += ms;
      },
      ...extra,
    }),
  };
  return h;
}

const ORIGIN = 'https://site.example';
const u = (path: string, origin = ORIGIN): URL => new URL(path, origin);

describe('checkRobots: no robots work needed', () => {
  it('allows everything without I/O when respectRobots is false', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /'));
    const verdict = await checkRobots(u('/private'), makeConfig({ respectRobots: false }), h.deps());
    assert.deepEqual(verdict, { kind: 'allowed' });
    assert.equal(h.store.calls.read, 0);
    assert.equal(h.fetcher.requests.length, 0);
  });

  it('allows /robots.txt itself without fetching it first', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /'));
    assert.deepEqual(await checkRobots(u('/robots.txt'), makeConfig(), h.deps()), { kind: 'allowed' });
    assert.equal(h.store.calls.read, 0);
    assert.equal(h.fetcher.requests.length, 0);
  });
});

describe('checkRobots: the claimer fetches and stores', () => {
  it('claims a missing origin, fetches /robots.txt at 512 KiB through a slot, saves JSON and decides', async () => {
    const h = harness(serve(ROBOTS));
    const config = makeConfig();
    const verdict = await checkRobots(u('/private/x'), config, h.deps());
    assert.equal(verdict.kind, 'disallowed');
    assert.match(verdict.kind === 'disallowed' ? verdict.reason : '', /disallows \/private\/x for testbot/);
    assert.deepEqual(h.fetcher.urls, [`${ORIGIN}/robots.txt`]);
    const request = h.fetcher.requests[0];
    assert.equal(request?.limits.maxBodyBytes, MAX_ROBOTS_BYTES);
    assert.equal(request?.userAgent, 'TestBot/1.0');
    // The slot is reserved with the delay plus its jitter margin (reservedGapMs).
    assert.deepEqual(h.slots.reserved, [{ slot: T0, delayMs: reservedGapMs(1000) }]);
    const item = h.store.item('c1', ORIGIN);
    assert.equal(item?.st, 'ready');
    assert.deepEqual(JSON.parse(item?.policyJson ?? ''), JSON.parse(JSON.stringify(parseRobots(ROBOTS))));
    assert.equal(item?.fetchedAt, T0);
    // The lease covers the fetch budget.
    assert.deepEqual(h.store.leases, [T0 + robotsFetchBudgetMs(config)]);

    // Later checks are answered from the container cache: no store read, no fetch.
    const reads = h.store.calls.read;
    assert.deepEqual(await checkRobots(u('/private/ok/1'), config, h.deps()), { kind: 'allowed' });
    assert.deepEqual(await checkRobots(u('/public'), config, h.deps()), { kind: 'allowed' });
    assert.equal(h.store.calls.read, reads);
    assert.equal(h.fetcher.requests.length, 1);
  });

  it('saves a fetched policy through throttled writes, and this container keeps it even when the save is lost', async () => {
    const h = harness(serve(ROBOTS));
    const config = makeConfig();
    let failing = 2;
    const save = h.store.saveReady.bind(h.store);
    h.store.saveReady = async (...args) => {
      if (failing-- > 0) throw new Error('ProvisionedThroughputExceededException');
      return save(...args);
    };
    assert.equal((await checkRobots(u('/private/x'), config, h.deps())).kind, 'disallowed');
    assert.equal(h.store.item('c1', ORIGIN)?.st, 'ready');
    assert.equal(h.fetcher.requests.length, 1);

    // A save that never succeeds fails the visit, but a retry in this container does not fetch again.
    const lost = harness(serve(ROBOTS));
    lost.store.saveReady = async () => {
      throw new Error('ProvisionedThroughputExceededException');
    };
    await assert.rejects(checkRobots(u('/private/x'), config, lost.deps()), /ProvisionedThroughput/);
    assert.equal((await checkRobots(u('/private/x'), config, lost.deps())).kind, 'disallowed');
    assert.equal(lost.fetcher.requests.length, 1);
  });

  it('returns the Crawl-delay of the matching group and pushes the host slot back by it', async () => {
    const h = harness(serve(ROBOTS));
    const config = makeConfig({ userAgent: 'SlowBot/2.0' });
    assert.deepEqual(await checkRobots(u('/a'), config, h.deps()), { kind: 'allowed', crawlDelaySeconds: 7 });
    assert.equal(h.slots.next, T0 + 7000);
    assert.equal((await checkRobots(u('/slow/1'), config, h.deps())).kind, 'disallowed');
  });

  it('caps that push-back at maxCrawlDelayMs', async () => {
    const h = harness(serve('User-agent: *\nCrawl-delay: 3600\n'));
    const verdict = await checkRobots(u('/a'), makeConfig({ maxCrawlDelayMs: 20_000 }), h.deps());
    assert.deepEqual(verdict, { kind: 'allowed', crawlDelaySeconds: 3600 });
    assert.equal(h.slots.next, T0 + 20_000);
  });

  it('waits in the function for a slot up to maxWaitMs', async () => {
    const h = harness(serve(ROBOTS));
    h.slots.next = T0 + 1500;
    assert.deepEqual(await checkRobots(u('/a'), makeConfig(), h.deps()), { kind: 'allowed' });
    assert.deepEqual(h.sleeps, [1500]);
    assert.equal(h.fetcher.requests.length, 1);
  });

  it('reads 4xx (404, 401, 403, 410) as allow all', async () => {
    for (const status of [404, 401, 403, 410]) {
      const h = harness(serve('User-agent: *\nDisallow: /', status));
      assert.deepEqual(
        await checkRobots(u('/private'), makeConfig(), h.deps()),
        { kind: 'allowed' },
        `${status}`,
      );
      assert.deepEqual(
        JSON.parse(h.store.item('c1', ORIGIN)?.policyJson ?? ''),
        JSON.parse(JSON.stringify(ALLOW_ALL)),
      );
    }
  });

  it('undoes Content-Encoding: gzip', async () => {
    const h = harness((request) =>
      response(request.url, 200, gzipSync(Buffer.from('User-agent: *\nDisallow: /gz\n')), [
        ['Content-Encoding', 'gzip'],
      ]),
    );
    assert.equal((await checkRobots(u('/gz/1'), makeConfig(), h.deps())).kind, 'disallowed');
    assert.equal((await checkRobots(u('/other'), makeConfig(), h.deps())).kind, 'allowed');
  });

  it('skips a UTF-8 BOM from the bytes: the first group still applies, plain, gzipped or cut by the cap', async () => {
    const withBom = (text: string) => new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)]);
    const robots = 'User-agent: testbot\nDisallow: /first\n';
    const scripts: Script[] = [
      (request) => response(request.url, 200, withBom(robots)),
      (request) => response(request.url, 200, gzipSync(withBom(robots)), [['content-encoding', 'gzip']]),
      (request) => response(request.url, 200, withBom(`${robots}Disallow: /cu`), [], 'length'),
    ];
    for (const script of scripts) {
      const h = harness(script);
      assert.equal((await checkRobots(u('/first/x'), makeConfig(), h.deps())).kind, 'disallowed');
      assert.equal((await checkRobots(u('/cut'), makeConfig(), h.deps())).kind, 'allowed');
    }
  });

  it('matches non-ASCII rules against percent-encoded URLs, also from the saved JSON', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /café\nDisallow: /%e3%83%84\n'));
    assert.equal((await checkRobots(u('/caf%C3%A9/menu'), makeConfig(), h.deps())).kind, 'disallowed');
    // Another container: an empty cache, the policy read back from the store.
    const other = harness(serve('unused'));
    await other.store.saveReady('c1', ORIGIN, h.store.item('c1', ORIGIN)?.policyJson ?? '', T0);
    assert.equal((await checkRobots(u('/café/menu'), makeConfig(), other.deps())).kind, 'disallowed');
    assert.equal((await checkRobots(u('/ツ'), makeConfig(), other.deps())).kind, 'disallowed');
    assert.equal((await checkRobots(u('/cafe'), makeConfig(), other.deps())).kind, 'allowed');
    assert.equal(other.fetcher.requests.length, 0);
  });

  it('drops a line cut by the body cap', async () => {
    // The fetcher cut the body mid-rule: "Disallow: /ab" must not become "Disallow: /a".
    const h = harness((request) =>
      response(request.url, 200, 'User-agent: *\nDisallow: /x\nDisallow: /a', [], 'length'),
    );
    assert.equal((await checkRobots(u('/x'), makeConfig(), h.deps())).kind, 'disallowed');
    assert.equal((await checkRobots(u('/a'), makeConfig(), h.deps())).kind, 'allowed');
    assert.equal(JSON.parse(h.store.item('c1', ORIGIN)?.policyJson ?? '').truncated, true);
  });

  it('treats a decoded body beyond 512 KiB like a long file: the tail is ignored', async () => {
    const head = 'User-agent: *\nDisallow: /early\n';
    const padding = `#${'p'.repeat(1022)}\n`.repeat(520);
    const text = `${head}${padding}Disallow: /late\n`;
    const h = harness((request) =>
      response(request.url, 200, gzipSync(Buffer.from(text)), [['content-encoding', 'gzip']]),
    );
    assert.equal((await checkRobots(u('/early'), makeConfig(), h.deps())).kind, 'disallowed');
    assert.equal((await checkRobots(u('/late'), makeConfig(), h.deps())).kind, 'allowed');
  });
});

describe('checkRobots: redirects', () => {
  const chain =
    (hops: number, finalText: string, origin = ORIGIN): Script =>
    (request) => {
      const path = request.url.pathname;
      const n = path === '/robots.txt' ? 0 : Number(path.slice(2));
      if (n < hops) return response(request.url, 301, '', [['Location', `${origin}/r${n + 1}`]]);
      return response(request.url, 200, finalText);
    };

  it('follows up to 5 redirects and applies the final file to the original origin', async () => {
    const h = harness(chain(5, 'User-agent: *\nDisallow: /p\n'));
    const config = makeConfig({ delayMs: 0 });
    assert.equal((await checkRobots(u('/p'), config, h.deps())).kind, 'disallowed');
    assert.equal(h.fetcher.requests.length, 6);
    assert.equal(h.store.item('c1', ORIGIN)?.st, 'ready');
    // Each hop took a politeness slot of its host.
    assert.equal(h.slots.reserved.length, 6);
  });

  it('reads more than 5 redirects as "unavailable": allow all (RFC 9309)', async () => {
    const h = harness(chain(6, 'User-agent: *\nDisallow: /p\n'));
    assert.equal((await checkRobots(u('/p'), makeConfig({ delayMs: 0 }), h.deps())).kind, 'allowed');
    assert.equal(h.fetcher.requests.length, 6);
  });

  it("follows a cross-origin redirect, the hop waiting for the visit's next slot", async () => {
    const h = harness((request) =>
      request.url.host === 'site.example'
        ? response(request.url, 302, '', [['location', 'https://cdn.example/robots/site.txt']])
        : response(request.url, 200, 'User-agent: *\nDisallow: /p\n'),
    );
    const config = makeConfig();
    assert.equal((await checkRobots(u('/p'), config, h.deps())).kind, 'disallowed');
    assert.deepEqual(h.fetcher.urls, [`${ORIGIN}/robots.txt`, 'https://cdn.example/robots/site.txt']);
    // The visit is what is paced (HostSlots): the hop is its second request, a gap after the first.
    const gap = reservedGapMs(config.delayMs);
    assert.deepEqual(h.slots.reserved, [
      { slot: T0, delayMs: gap },
      { slot: T0 + gap, delayMs: gap },
    ]);
    assert.deepEqual(h.sleeps, [gap]); // within maxWaitMs + delayMs
    assert.equal(h.store.item('c1', 'https://cdn.example'), undefined);
  });

  it('reads an unusable redirect (no Location, other scheme, refused address) as allow all', async () => {
    const cases: Script[] = [
      (request) => response(request.url, 301),
      (request) => response(request.url, 302, '', [['location', 'ftp://x.example/robots.txt']]),
      (request, call) =>
        call === 1
          ? response(request.url, 302, '', [['location', 'http://169.254.169.254/robots.txt']])
          : new PermanentError('blocked', 'address-blocked', 'address not allowed'),
    ];
    for (const script of cases) {
      const h = harness(script);
      assert.equal((await checkRobots(u('/p'), makeConfig({ delayMs: 0 }), h.deps())).kind, 'allowed');
      assert.equal(h.store.item('c1', ORIGIN)?.st, 'ready');
    }
  });
});

describe('checkRobots: unavailable robots.txt', () => {
  it('backs off 30 s, 60 s, 120 s and fails the origin on the 4th failure', async () => {
    const h = harness(serve('oops', 503));
    const config = makeConfig();
    const expected = [
      RETRY_BACKOFF.robotsUnreachable.baseMs,
      2 * RETRY_BACKOFF.robotsUnreachable.baseMs,
      4 * RETRY_BACKOFF.robotsUnreachable.baseMs,
    ];
    for (const [i, backoff] of expected.entries()) {
      const now = h.clock.now;
      const verdict = await checkRobots(u('/a'), config, h.deps());
      assert.equal(verdict.kind, 'defer');
      assert.equal(verdict.kind === 'defer' ? verdict.untilMs : 0, now + backoff);
      assert.match(verdict.kind === 'defer' ? verdict.reason : '', /HTTP 503/);
      assert.equal(h.store.item('c1', ORIGIN)?.failures, i + 1);
      // Before retryAt: deferred without a fetch.
      h.clock.now = now + backoff - 1;
      const early = await checkRobots(u('/b'), config, h.deps());
      assert.deepEqual(early.kind === 'defer' ? early.untilMs : 0, now + backoff);
      assert.equal(h.fetcher.requests.length, i + 1);
      h.clock.now = now + backoff;
    }
    const last = await checkRobots(u('/a'), config, h.deps());
    assert.equal(last.kind, 'failed');
    assert.equal(last.kind === 'failed' ? last.code : '', 'robots-unavailable');
    assert.equal(h.fetcher.requests.length, 4);
    // From now on every URL of the origin fails without a fetch.
    h.clock.now += DAY;
    const after = await checkRobots(u('/c'), config, h.deps());
    assert.equal(after.kind === 'failed' ? after.code : '', 'robots-unavailable');
    assert.equal(h.fetcher.requests.length, 4);
  });

  it('recovers when a later attempt succeeds', async () => {
    const h = harness((request, call) =>
      call === 1 ? response(request.url, 500) : response(request.url, 200, 'User-agent: *\nDisallow: /p'),
    );
    const first = await checkRobots(u('/p'), makeConfig(), h.deps());
    assert.equal(first.kind, 'defer');
    h.clock.now = first.kind === 'defer' ? first.untilMs : 0;
    assert.equal((await checkRobots(u('/p'), makeConfig(), h.deps())).kind, 'disallowed');
    assert.equal(h.store.item('c1', ORIGIN)?.failures, 0);
  });

  it('honours Retry-After of a 429 and pushes the host slot back', async () => {
    const h = harness((request) => response(request.url, 429, '', [['Retry-After', '120']]));
    const verdict = await checkRobots(u('/a'), makeConfig(), h.deps());
    assert.equal(verdict.kind === 'defer' ? verdict.untilMs : 0, T0 + 120_000);
    assert.equal(h.slots.next, T0 + 120_000);
  });

  it('counts timeouts, network errors, TLS and malformed responses as unreachable', async () => {
    const errors = [
      new RetryableError('timeout', 'no response headers within 10000 ms'),
      new RetryableError('connect-failed', 'ECONNREFUSED'),
      new PermanentError('failed', 'tls-failed', 'bad cert'),
      new PermanentError('failed', 'bad-response', 'malformed'),
    ];
    for (const error of errors) {
      const h = harness(() => error);
      const verdict = await checkRobots(u('/a'), makeConfig(), h.deps());
      assert.equal(verdict.kind, 'defer', error.code);
      assert.match(verdict.kind === 'defer' ? verdict.reason : '', new RegExp(error.code));
      assert.equal(h.store.item('c1', ORIGIN)?.st, 'unavailable');
    }
  });

  it('counts a body cut by the deadline as a timeout', async () => {
    const h = harness((request) => response(request.url, 200, 'User-agent: *\nDisallow: /', [], 'time'));
    const verdict = await checkRobots(u('/a'), makeConfig(), h.deps());
    assert.equal(verdict.kind, 'defer');
    assert.equal(h.store.item('c1', ORIGIN)?.st, 'unavailable');
  });

  it('refuses an IP-literal host the guard refuses, in every spelling, without any I/O', async () => {
    // Loopback, unspecified and metadata addresses as WHATWG URL reads them (numeric and short forms too).
    const hosts = [
      'http://169.254.169.254',
      'http://127.1',
      'http://2130706433',
      'http://0x7f.1',
      'http://0.0.0.0',
      'http://0',
      'http://10.0.0.1',
      'http://[::1]',
      'http://[::]',
      'http://[::ffff:169.254.169.254]',
      'http://[::ffff:127.0.0.1]:8080',
      'http://[fd00:ec2::254]',
      // Metadata service names: refused by name, without a lookup.
      'http://metadata.google.internal',
      'http://Metadata.Google.Internal.',
      'http://instance-data',
    ];
    for (const origin of hosts) {
      const h = harness(() => new Error('must not be fetched'));
      for (const path of ['/', '/computeMetadata/v1/', '/robots.txt']) {
        const verdict = await checkRobots(u(path, origin), makeConfig(), h.deps());
        assert.equal(verdict.kind, 'failed', `${origin}${path}`);
        if (verdict.kind !== 'failed') continue;
        assert.equal(verdict.code, 'address-blocked', origin);
        assert.match(
          verdict.reason,
          /^address-blocked: address not allowed: .+ \(.+\); crawl with --allow-private to permit$/,
        );
      }
      assert.deepEqual(h.store.calls, { read: 0, claim: 0, saveReady: 0, saveUnavailable: 0 }, origin);
      assert.equal(h.fetcher.requests.length, 0, origin);
      assert.deepEqual(h.slots.reserved, [], `${origin}: no slot is spent on a refused origin`);
    }
  });

  it('with --allow-private, asks the fetcher (whose guard decides) for a private literal', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /p'));
    const config = makeConfig({ allowPrivate: true });
    assert.equal((await checkRobots(u('/p', 'http://127.0.0.1:8080'), config, h.deps())).kind, 'disallowed');
    assert.equal(h.fetcher.requests.length, 1);
  });

  it('stores a refusal met on the request (a name that resolves to a refused address): every other URL of the origin fails at once, never retried', async () => {
    const origin = 'http://metadata.internal.example';
    const refusal = 'address not allowed: metadata.internal.example resolves to 169.254.169.254 (link-local)';
    const h = harness(() => new PermanentError('blocked', 'address-blocked', refusal));
    const first = await checkRobots(u('/a', origin), makeConfig(), h.deps());
    assert.deepEqual(first, {
      kind: 'failed',
      code: 'address-blocked',
      reason: `address-blocked: ${refusal}`,
    });
    assert.equal(h.fetcher.requests.length, 1);
    assert.equal(h.store.calls.saveUnavailable, 0, 'a refusal is not a failed attempt');
    assert.equal(h.store.item('c1', origin)?.st, 'ready', 'the claim is settled, not left to run out');
    // The same container, and another one (no cache), a little later: no claim, no request, no wait.
    h.clock.now += 1000;
    for (const cache of [h.cache, createRobotsCache(10)]) {
      const verdict = await checkRobots(u('/computeMetadata/v1/', origin), makeConfig(), h.deps({ cache }));
      assert.deepEqual(verdict, first);
    }
    assert.equal(h.fetcher.requests.length, 1, 'robots.txt was requested once');
    assert.equal(h.store.calls.claim, 1);
  });

  it('lets a FatalError propagate', async () => {
    const h = harness(() => new FatalError('invalid-header', 'bad config'));
    await assert.rejects(checkRobots(u('/a'), makeConfig(), h.deps()), FatalError);
  });
});

describe('checkRobots: other tasks and the store', () => {
  it('uses a fresh ready policy from the store and caches it', async () => {
    const h = harness(serve('unused'));
    await h.store.saveReady(
      'c1',
      ORIGIN,
      JSON.stringify(parseRobots('User-agent: *\nDisallow: /p')),
      T0 - 1000,
    );
    assert.equal((await checkRobots(u('/p'), makeConfig(), h.deps())).kind, 'disallowed');
    assert.equal(h.fetcher.requests.length, 0);
    assert.equal(h.cache.get('c1', ORIGIN, T0)?.fetchedAt, T0 - 1000);
  });

  it('refetches a policy older than 24 h, and an unreadable one', async () => {
    for (const [json, fetchedAt] of [
      [JSON.stringify(parseRobots('User-agent: *\nDisallow: /p')), T0 - DAY - 1],
      ['{"not":"a policy"}', T0 - 1000],
    ] as const) {
      const h = harness(serve('User-agent: *\nDisallow: /q'));
      await h.store.saveReady('c1', ORIGIN, json, fetchedAt);
      assert.equal((await checkRobots(u('/p'), makeConfig(), h.deps())).kind, 'allowed');
      assert.equal((await checkRobots(u('/q'), makeConfig(), h.deps())).kind, 'disallowed');
      assert.equal(h.fetcher.requests.length, 1);
      assert.equal(h.store.item('c1', ORIGIN)?.fetchedAt, T0);
    }
  });

  it('uses a stale policy when the store will not let it be re-claimed', async () => {
    const h = harness(serve('unused'));
    h.store.claim = async () => false;
    await h.store.saveReady(
      'c1',
      ORIGIN,
      JSON.stringify(parseRobots('User-agent: *\nDisallow: /p')),
      T0 - 2 * DAY,
    );
    assert.equal((await checkRobots(u('/p'), makeConfig(), h.deps())).kind, 'disallowed');
    assert.equal(h.fetcher.requests.length, 0);
  });

  it('defers a few seconds while another task holds a live claim, then takes over an expired one', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /p'));
    const config = makeConfig();
    const budget = robotsFetchBudgetMs(config);
    assert.ok(await h.store.claim('c1', ORIGIN, budget, T0));
    h.clock.now = T0 + 1000;
    const verdict = await checkRobots(u('/p'), config, h.deps());
    assert.deepEqual(verdict, {
      kind: 'defer',
      untilMs: T0 + 1000 + ROBOTS_POLL_MS,
      reason: `robots.txt of ${ORIGIN} is being fetched by another task`,
    });
    assert.equal(h.fetcher.requests.length, 0);
    h.clock.now = T0 + budget + 1;
    assert.equal((await checkRobots(u('/p'), config, h.deps())).kind, 'disallowed');
    assert.equal(h.fetcher.requests.length, 1);
  });

  it('never defers past the claimer lease', async () => {
    const h = harness(serve(''));
    assert.ok(await h.store.claim('c1', ORIGIN, 2000, T0));
    const verdict = await checkRobots(u('/p'), makeConfig(), h.deps());
    assert.equal(verdict.kind === 'defer' ? verdict.untilMs : 0, T0 + 2000);
  });
});

describe('checkRobots: slots far away', () => {
  it('defers a check whose slot is far away without claiming robots.txt, and fetches when it is back', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /p'));
    const config = makeConfig();
    const slot = T0 + 60_000;
    h.slots.next = slot;

    const first = await checkRobots(u('/a'), config, h.deps());
    assert.deepEqual(first, {
      kind: 'defer',
      untilMs: slot,
      reason: `robots.txt of ${ORIGIN} is fetched at the host's next politeness slot`,
    });
    assert.equal(h.store.item('c1', ORIGIN), undefined, 'no claim holds other checks back meanwhile');
    assert.equal(h.fetcher.requests.length, 0);

    // Back at its slot: the next one is a gap later (within the wait), claimed and fetched then.
    h.clock.now = slot;
    assert.equal((await checkRobots(u('/p'), config, h.deps())).kind, 'disallowed');
    assert.equal(h.fetcher.requests.length, 1);
    assert.equal(h.clock.now, slot + reservedGapMs(config.delayMs), 'fetched at its slot');
  });

  it('a claim lost to another container: back a little after its request', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /p'));
    const config = makeConfig();
    const claim = h.store.claim.bind(h.store);
    // Another container claims between this task's read and its claim, for the slot after ours.
    h.store.claim = async (crawlId, origin, leaseMs, now) => {
      const gap = reservedGapMs(config.delayMs);
      const theirSlot = await h.slots.reserve(gap, now);
      assert.equal(theirSlot, T0 + gap);
      await claim(crawlId, origin, robotsFetchBudgetMs(config) + gap, now);
      h.store.claim = claim;
      return claim(crawlId, origin, leaseMs, now);
    };
    const verdict = await checkRobots(u('/a'), config, h.deps());
    // Theirs is the slot after ours: we come back a little after their request.
    assert.deepEqual(verdict, {
      kind: 'defer',
      untilMs: T0 + reservedGapMs(config.delayMs) + ROBOTS_POLL_MS,
      reason: `robots.txt of ${ORIGIN} is being fetched by another task`,
    });
  });

  it('a claim lost to a finished fetch: the policy it saved decides, nothing fetched', async () => {
    const h = harness(serve('unused'));
    const claim = h.store.claim.bind(h.store);
    h.store.claim = async (crawlId, origin) => {
      await h.store.saveReady(crawlId, origin, JSON.stringify(ALLOW_ALL), T0);
      h.store.claim = claim;
      return false;
    };
    const verdict = await checkRobots(u('/a'), makeConfig(), h.deps());
    assert.deepEqual(verdict, { kind: 'allowed' });
    assert.equal(h.fetcher.requests.length, 0);
  });
});

describe('checkRobots: one fetch per origin', () => {
  it('20 concurrent checks in one container share one store read and one fetch', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /odd'));
    const config = makeConfig({ delayMs: 0 });
    const paths = Array.from({ length: 20 }, (_, i) => (i % 2 ? `/odd/${i}` : `/even/${i}`));
    const verdicts = await Promise.all(paths.map((path) => checkRobots(u(path), config, h.deps())));
    assert.deepEqual(
      verdicts.map((v) => v.kind),
      paths.map((_, i) => (i % 2 ? 'disallowed' : 'allowed')),
    );
    assert.equal(h.fetcher.requests.length, 1);
    assert.equal(h.store.calls.read, 1);
    assert.equal(h.slots.reserved.length, 1);
  });

  it('20 concurrent checks in 20 containers fetch once; the others defer', async () => {
    const h = harness(serve('User-agent: *\nDisallow: /odd'));
    const config = makeConfig({ delayMs: 0 });
    const verdicts = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        checkRobots(u(`/odd/${i}`), config, h.deps({ cache: createRobotsCache(10) })),
      ),
    );
    assert.equal(h.fetcher.requests.length, 1);
    const kinds = verdicts.map((v) => v.kind).sort();
    assert.ok(kinds.includes('disallowed'));
    assert.ok(kinds.every((kind) => kind === 'disallowed' || kind === 'defer'));
  });

  it('keeps origins apart: scheme and port make another robots.txt', async () => {
    const h = harness((request) =>
      response(request.url, 200, request.url.protocol === 'http:' ? 'User-agent: *\nDisallow: /' : ''),
    );
    const config = makeConfig({ delayMs: 0 });
    assert.equal((await checkRobots(u('/a', 'http://site.example'), config, h.deps())).kind, 'disallowed');
    assert.equal((await checkRobots(u('/a', 'https://site.example'), config, h.deps())).kind, 'allowed');
    assert.equal((await checkRobots(u('/a', 'https://site.example:8443'), config, h.deps())).kind, 'allowed');
    assert.equal(h.fetcher.requests.length, 3);
  });
});

describe('createRobotsCache', () => {
  const policy = parseRobots('User-agent: *\nDisallow: /');

  it('evicts the least recently used entry beyond maxEntries', () => {
    const cache = createRobotsCache(2);
    cache.set('c', 'https://a', policy, T0);
    cache.set('c', 'https://b', policy, T0);
    assert.ok(cache.get('c', 'https://a', T0)); // a is now the most recent
    cache.set('c', 'https://c', policy, T0);
    assert.equal(cache.size, 2);
    assert.equal(cache.get('c', 'https://b', T0), undefined);
    assert.ok(cache.get('c', 'https://a', T0));
    assert.ok(cache.get('c', 'https://c', T0));
  });

  it('keys by crawl and origin, and expires entries 24 h after their fetch', () => {
    const cache = createRobotsCache(10);
    cache.set('c1', 'https://a', policy, T0);
    assert.equal(cache.get('c2', 'https://a', T0), undefined);
    assert.ok(cache.get('c1', 'https://a', T0 + ROBOTS_TTL_MS - 1));
    assert.equal(cache.get('c1', 'https://a', T0 + ROBOTS_TTL_MS), undefined);
    assert.equal(cache.size, 0);
  });

  it('never keeps entries longer than 24 h, whatever ttl is asked', () => {
    assert.equal(createRobotsCache(1, 10 * ROBOTS_TTL_MS).ttlMs, ROBOTS_TTL_MS);
    assert.equal(createRobotsCache(1, 1000).ttlMs, 1000);
  });
});

describe('policyFromJson', () => {
  it('round-trips parseRobots output and matches like the original', () => {
    const original = parseRobots(ROBOTS);
    const copy = policyFromJson(JSON.stringify(original));
    assert.deepEqual(JSON.parse(JSON.stringify(copy)), JSON.parse(JSON.stringify(original)));
  });

  it('rejects what is not a policy', () => {
    for (const json of [
      '',
      'null',
      '[]',
      '{"groups":[]}',
      '{"groups":[{"agents":[1],"rules":[]}],"sitemaps":[]}',
    ]) {
      assert.equal(policyFromJson(json), undefined, json);
    }
  });
});
