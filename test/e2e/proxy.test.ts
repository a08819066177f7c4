/**
 * `crawler crawl --proxy` (issue 27, point 3) through a loopback CONNECT proxy: every request of the
 * crawl (robots.txt and pages) is tunnelled, with the proxy's credentials on CONNECT only; wrong
 * credentials end the pages `proxy-refused`; `--proxy-hosts` sends only the hosts named through it;
 * and the address guard still holds for a target the proxy would dial: a name resolving to loopback
 * is refused before any CONNECT, while the proxy itself, named by the crawl, may be on loopback.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ConnectProxy, startConnectProxy } from '../fixtures/connect-proxy.ts';
import { htmlPage, type LoopbackHost, startLoopbackHost } from '../fixtures/loopback-host.ts';
import { readCrawlOutput, runCli, runCrawl, tempDir } from '../fixtures/run-cli.ts';

const AUTH = `Basic ${Buffer.from('crawler:pr0xy-pass').toString('base64')}`;

function site(address: string): Promise<LoopbackHost> {
  return startLoopbackHost(address, (req) => {
    if (req.url === '/robots.txt')
      return [200, { 'content-type': 'text/plain' }, 'User-agent: *\nAllow: /\n'];
    if (req.url === '/') return [200, {}, htmlPage('home', ['/a', '/b'])];
    return [200, {}, htmlPage(`page ${req.url}`)];
  });
}

describe('crawler crawl --proxy', () => {
  let proxy: ConnectProxy;
  let first: LoopbackHost;
  let second: LoopbackHost;

  before(async () => {
    proxy = await startConnectProxy({ authorization: AUTH });
    first = await site('127.0.0.2');
    second = await site('127.0.0.3');
  });
  after(async () => {
    await proxy?.close();
    await first?.close();
    await second?.close();
  });

  it('tunnels every request with CONNECT, the credentials on CONNECT only', async () => {
    const before = first.requests.length;
    const crawl = await runCrawl(
      [`${first.origin}/`],
      [
        '--allow-private',
        '--delay',
        '0',
        '--quiet',
        '--proxy',
        `http://crawler:pr0xy-pass@127.0.0.1:${proxy.port}`,
      ],
    );
    assert.deepEqual(crawl.results.map((line) => [new URL(line.url).pathname, line.status]).sort(), [
      ['/', 200],
      ['/a', 200],
      ['/b', 200],
    ]);
    const seen = first.requests.slice(before);
    assert.deepEqual(seen.map((request) => request.path).sort(), ['/', '/a', '/b', '/robots.txt']);
    for (const request of seen) {
      assert.ok(proxy.tunnelPorts.has(request.clientPort), `${request.path} did not come through the proxy`);
      assert.equal(
        request.headers['proxy-authorization'],
        undefined,
        'the target never sees the proxy credentials',
      );
    }
    const host = new URL(first.origin).host;
    assert.ok(proxy.connects.length > 0);
    for (const connect of proxy.connects) {
      assert.equal(connect.target, host);
      assert.equal(connect.authorization, AUTH);
    }
    assert.equal(proxy.plainRequests, 0, 'nothing was sent as a plain proxied request');
    assert.ok(!JSON.stringify(crawl.results).includes('pr0xy-pass'), 'no result holds the password');
  });

  it('ends pages `proxy-refused` when the proxy refuses the credentials; the site sees nothing', async () => {
    const before = first.requests.length;
    const connects = proxy.connects.length;
    const crawl = await runCrawl(
      [`${first.origin}/a`],
      [
        '--allow-private',
        '--no-respect-robots',
        '--quiet',
        '--proxy',
        `http://crawler:wrong@127.0.0.1:${proxy.port}`,
      ],
    );
    assert.equal(crawl.results.length, 1);
    assert.equal(crawl.results[0]?.outcome, 'failed');
    assert.equal(crawl.results[0]?.code, 'proxy-refused');
    assert.match(String(crawl.results[0]?.reason), /the proxy answered 407 to CONNECT/);
    assert.ok(proxy.connects.slice(connects).every((connect) => connect.answered === 407));
    assert.equal(first.requests.length, before);
  });

  it('--proxy-hosts: only the hosts named go through the proxy', async () => {
    const firstBefore = first.requests.length;
    const secondBefore = second.requests.length;
    await runCrawl(
      [`${first.origin}/`, `${second.origin}/`],
      [
        '--allow-private',
        '--delay',
        '0',
        '--quiet',
        '--proxy',
        `http://crawler:pr0xy-pass@127.0.0.1:${proxy.port}`,
        '--proxy-hosts',
        new URL(first.origin).host,
      ],
    );
    const viaProxy = (host: LoopbackHost, from: number) =>
      host.requests.slice(from).map((request) => proxy.tunnelPorts.has(request.clientPort));
    const firstSeen = viaProxy(first, firstBefore);
    const secondSeen = viaProxy(second, secondBefore);
    assert.ok(firstSeen.length >= 4 && firstSeen.every(Boolean), `first host: ${firstSeen}`);
    assert.ok(
      secondSeen.length >= 4 && secondSeen.every((tunnelled) => !tunnelled),
      `second host: ${secondSeen}`,
    );
  });

  it('refuses a target resolving to loopback without --allow-private, before any CONNECT', async () => {
    const connects = proxy.connects.length;
    const port = new URL(first.origin).port;
    const out = await tempDir('crawler-e2e-proxy-');
    try {
      const run = await runCli([
        'crawl',
        `http://localhost:${port}/`,
        '--out',
        out.path,
        '--quiet',
        '--proxy',
        `http://crawler:pr0xy-pass@127.0.0.1:${proxy.port}`,
      ]);
      assert.equal(run.code, 1, 'no seed could be crawled');
      const { results } = await readCrawlOutput(out.path);
      assert.equal(results[0]?.outcome, 'blocked');
      assert.equal(results[0]?.code, 'address-blocked');
      assert.match(String(results[0]?.reason), /localhost resolves to 127\.0\.0\.1/);
    } finally {
      await out.remove();
    }
    assert.equal(proxy.connects.length, connects, 'the proxy was never asked');
  });
});
