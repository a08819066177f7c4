/**
 * `crawler crawl` end to end (the real CLI, embedded AWS, default limits) over a site whose links lead
 * to hostile servers on 127.0.0.1: each one its own port (its own host for politeness and connections),
 * linked from one index page. Every server is also a seed, so that each host:port is in the crawl's
 * (host) scope: an IP host compares with its port under every scope. The crawl must finish in bounded time, and every hostile URL must end with exactly
 * one result whose outcome, code and reason say what happened; none is retried beyond maxAttempts.
 *
 * The address guard's redirect-to-loopback case is not here: with `--allow-private` off the index page
 * on 127.0.0.1 is itself blocked, and a first hop the guard lets through needs a public address, which
 * tests may not use. test/integration/hostile-task.test.ts covers it with a stub resolver instead.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  bomb,
  encoded,
  encodeLegacy,
  endlessBody,
  type HostileRoute,
  type HostileServer,
  html,
  lyingLength,
  raw,
  redirect,
  resetMidBody,
  silent,
  startHostileServer,
  trickleBody,
} from '../fixtures/hostile-server.ts';
import { type CrawlRun, type ResultLine, runCrawl, tempDir } from '../fixtures/run-cli.ts';

const MiB = 1024 * 1024;
/** Default limits the CLI crawls with (lambdas/core/crawl/crawl-config.ts). */
const MAX_BODY_BYTES = 5 * MiB;
const TOTAL_TIMEOUT_MS = 20_000;
const MAX_REDIRECTS = 5;
/** The slowest case, a server that never answers: 4 attempts × ~10 s headers timeout + backoff (≤ 14 s). */
const WALL_BOUND_MS = 150_000;
const CRAWL_TIMEOUT_MS = 240_000;

interface Case {
  /** Route on the case's own server. */
  route: HostileRoute;
  path?: string;
}

describe('crawler crawl: a site of hostile servers', () => {
  const servers = new Map<string, HostileServer>();
  let index: HostileServer;
  let run: CrawlRun;
  let removeOut = async () => {};
  const url = (name: string, path = '/'): string => servers.get(name)?.url(path) ?? `missing ${name}`;

  before(
    async () => {
      const cases: Record<string, Case> = {
        endless: { route: endlessBody('chunked') },
        'claims-more': { route: lyingLength(50_000_000_000, 6 * MiB) },
        'claims-less': { route: lyingLength(10, 1 * MiB) },
        'bomb-gzip': { route: encoded(await bomb('gzip', 1024 * MiB), 'gzip') },
        'bomb-deflate': { route: encoded(await bomb('deflate', 64 * MiB), 'deflate') },
        'bomb-br': { route: encoded(await bomb('br', 256 * MiB), 'br') },
        trickle: { route: trickleBody(1000) },
        'huge-headers': {
          route: raw(`HTTP/1.1 200 OK\r\nX-Huge: ${'h'.repeat(70 * 1024)}\r\nContent-Length: 0\r\n\r\n`, {
            end: false,
          }),
        },
        'no-colon': {
          route: raw('HTTP/1.1 200 OK\r\nContent-Type text/html\r\nContent-Length: 2\r\n\r\nok', {
            end: false,
          }),
        },
        'two-lengths': {
          route: raw('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nokabc', {
            end: false,
          }),
        },
        'bad-chunks': {
          route: raw('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n', {
            end: false,
          }),
        },
        reset: { route: resetMidBody(100_000, 2000) },
        silent: { route: silent() },
      };
      for (const [name, { route, path }] of Object.entries(cases)) {
        servers.set(name, await startHostileServer({ [path ?? '/']: route }));
      }

      // The index server also holds the redirect loop and chain, and the legacy-encoded pages.
      index = await startHostileServer();
      const links = [...servers.keys()].map((name) => `<a href="${url(name)}">${name}</a>`);
      index.route(
        '/',
        html(
          `<!doctype html><title>hostile</title>${links.join('\n')}` +
            '<a href="/loop/a">loop</a><a href="/chain/0">chain</a>' +
            '<a href="/gbk">gbk</a><a href="/sjis">sjis</a><a href="/cp1251">cp1251</a>',
        ),
      );
      index.route('/loop/a', redirect('/loop/b'));
      index.route('/loop/b', redirect('/loop/a'));
      for (let i = 0; i <= MAX_REDIRECTS + 2; i++) index.route(`/chain/${i}`, redirect(`/chain/${i + 1}`));
      index.route(
        '/gbk',
        html(encodeLegacy('<a href="/文档/页面.html">文档</a>', 'gbk'), 'text/html; charset=GBK'),
      );
      index.route(
        '/sjis',
        html(
          encodeLegacy(
            '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"><a href="/日本語/ページ.html">x</a>',
            'shift_jis',
          ),
          'text/html',
        ),
      );
      index.route(
        '/cp1251',
        html(
          encodeLegacy('<meta charset="windows-1251"><a href="/новости/статья.html">x</a>', 'windows-1251'),
          'text/html',
        ),
      );
      for (const path of ['/文档/页面.html', '/日本語/ページ.html', '/новости/статья.html']) {
        index.route(encodeURI(path), html(`<p>${path}</p>`));
      }

      const out = await tempDir('crawler-e2e-hostile-');
      removeOut = out.remove;
      run = await runCrawl(
        [index.url('/'), ...[...servers.keys()].map((name) => url(name))],
        ['--allow-private', '--delay', '0', '--scope', 'host', '--concurrency', '4', '--quiet'],
        { outDir: out.path, timeoutMs: CRAWL_TIMEOUT_MS },
      );
    },
    { timeout: CRAWL_TIMEOUT_MS + 60_000 },
  );
  after(async () => {
    await Promise.all([...servers.values(), index].filter(Boolean).map((server) => server.close()));
    await removeOut();
  });

  const result = (target: string): ResultLine => {
    const found = run.results.filter((line) => line.url === target);
    assert.equal(
      found.length,
      1,
      `${target}: ${found.length} result lines\n${JSON.stringify(run.results.map((r) => [r.url, r.outcome, r.code]))}`,
    );
    return found[0] as ResultLine;
  };

  it(`finishes, within ${WALL_BOUND_MS / 1000} s, with one result per URL`, () => {
    assert.ok(run.ms < WALL_BOUND_MS, `the crawl took ${Math.round(run.ms)} ms`);
    const urls = run.results.map((line) => line.url);
    assert.equal(new Set(urls).size, urls.length, 'a URL has two result lines');
    // index, 13 hostile servers, loop a/b, chain 0..5, 3 legacy pages and the 3 pages they link to.
    assert.equal(run.results.length, 1 + servers.size + 2 + (MAX_REDIRECTS + 1) + 3 + 3);
    assert.equal(run.summary.urls, run.results.length);
  });

  it('bodies past the cap are stored up to 5 MiB, marked truncated "length", and the transfer is stopped', () => {
    for (const name of ['endless', 'claims-more']) {
      const line = result(url(name));
      assert.equal(line.outcome, 'fetched', name);
      assert.equal(line.truncated, 'length', name);
      assert.equal(line.bytes, MAX_BODY_BYTES, name);
      assert.ok(line.warc, `${name} is stored`);
      assert.equal(servers.get(name)?.stats('/').hits, 1, `${name} fetched once`);
    }
    assert.ok(
      (servers.get('endless')?.stats('/').bytesWritten ?? 0) < 64 * MiB,
      'the endless body was not stopped',
    );
    const less = result(url('claims-less'));
    assert.equal(less.outcome, 'fetched');
    assert.equal(less.bytes, 10);
    assert.equal(less.truncated, undefined);
  });

  it('decompression bombs are stored (encoded, small), links inside are not read', () => {
    for (const name of ['bomb-gzip', 'bomb-deflate', 'bomb-br']) {
      const line = result(url(name));
      assert.equal(line.outcome, 'fetched', name);
      assert.match(String(line.code), /^(decompression-bomb|decoded-too-large)$/, name);
      assert.match(String(line.reason), /^links not extracted: /, name);
      assert.equal(line.outlinks, 0, name);
      assert.ok(Number(line.bytes) < 2 * MiB, `${name}: ${line.bytes} bytes`);
      assert.equal(servers.get(name)?.stats('/inside-the-bomb').hits, 0, name);
    }
    assert.equal(result(url('bomb-deflate')).code, 'decompression-bomb');
    assert.equal(result(url('bomb-br')).code, 'decompression-bomb');
    assert.equal(result(url('bomb-gzip')).code, 'decoded-too-large');
    assert.ok(!run.results.some((line) => line.url.endsWith('/inside-the-bomb')));
  });

  it('a server trickling one byte a second is cut at the 20 s total deadline, stored, not retried', () => {
    const line = result(url('trickle'));
    assert.equal(line.outcome, 'fetched');
    assert.equal(line.truncated, 'time');
    assert.ok(
      Number(line.ms) >= TOTAL_TIMEOUT_MS - 500 && Number(line.ms) < TOTAL_TIMEOUT_MS + 2000,
      `${line.ms} ms`,
    );
    assert.ok(Number(line.bytes) >= 15 && Number(line.bytes) <= 21, `${line.bytes} bytes`);
    assert.equal(servers.get('trickle')?.stats('/').hits, 1);
  });

  it('malformed heads, conflicting lengths and broken chunks fail "bad-response" at once', () => {
    for (const name of ['huge-headers', 'no-colon', 'two-lengths', 'bad-chunks']) {
      const line = result(url(name));
      assert.equal(line.outcome, 'failed', name);
      assert.equal(line.code, 'bad-response', name);
      assert.match(String(line.reason), /malformed HTTP response/, name);
      assert.equal(line.attempt, 1, name);
      assert.equal(servers.get(name)?.stats('/').hits, 1, `${name} was retried`);
    }
  });

  it('a reset mid-body and a server that never answers are retried 4 times, then fail with the reason', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['reset', 'connection-reset', /connection lost mid-body after \d+ bytes/],
      ['silent', 'timeout', /no response headers within 10000 ms/],
    ];
    for (const [name, code, reason] of cases) {
      const line = result(url(name));
      assert.equal(line.outcome, 'failed', name);
      assert.equal(line.code, code, name);
      assert.match(String(line.reason), reason, name);
      assert.match(String(line.reason), /\(gave up after 4 attempts\)$/, name);
      assert.equal(line.attempt, 4, name);
      assert.equal(servers.get(name)?.stats('/').hits, 4, `${name}: requests`);
    }
  });

  it('a redirect loop ends: each URL of the loop has one "redirected" result and is fetched once', () => {
    const a = result(index.url('/loop/a'));
    const b = result(index.url('/loop/b'));
    assert.equal(a.outcome, 'redirected');
    assert.equal(a.location, index.url('/loop/b'));
    assert.equal(b.outcome, 'redirected');
    assert.equal(b.location, index.url('/loop/a'));
    assert.equal(index.stats('/loop/a').hits, 1);
    assert.equal(index.stats('/loop/b').hits, 1);
  });

  it(`a redirect chain ends after ${MAX_REDIRECTS} hops with "too-many-redirects"`, () => {
    for (let i = 0; i < MAX_REDIRECTS; i++) {
      const line = result(index.url(`/chain/${i}`));
      assert.equal(line.outcome, 'redirected', `hop ${i}`);
      assert.equal(line.code, undefined, `hop ${i}`);
    }
    const last = result(index.url(`/chain/${MAX_REDIRECTS}`));
    assert.equal(last.outcome, 'redirected');
    assert.equal(last.code, 'too-many-redirects');
    assert.equal(last.location, index.url(`/chain/${MAX_REDIRECTS + 1}`));
    assert.match(String(last.reason), /redirect chain longer than 5 hops/);
    assert.equal(index.stats(`/chain/${MAX_REDIRECTS + 1}`).hits, 0);
  });

  it('links on GBK, Shift_JIS and windows-1251 pages are followed as percent-encoded UTF-8 URLs', () => {
    for (const [page, target] of [
      ['/gbk', '/文档/页面.html'],
      ['/sjis', '/日本語/ページ.html'],
      ['/cp1251', '/новости/статья.html'],
    ] as const) {
      assert.equal(result(index.url(page)).outlinks, 1, page);
      const line = result(index.url(encodeURI(target)));
      assert.equal(line.outcome, 'fetched', target);
      assert.equal(index.stats(encodeURI(target)).hits, 1, target);
    }
    assert.equal(
      result(index.url('/%E6%96%87%E6%A1%A3/%E9%A1%B5%E9%9D%A2.html')).status,
      200,
      'GBK link as UTF-8 percent-encoding',
    );
  });
});
