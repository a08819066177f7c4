/**
 * The browser's address guard (lambdas/adapters/render-guard-proxy.ts) with a resolver the test
 * controls: a page whose host name now resolves to a loopback address (rebound since the crawler
 * fetched it) gets none of its own subrequests through unless the crawl allows private addresses;
 * another host on loopback is never reached, whatever the crawl allows. Counted at the server.
 * A script's DOM comes back no larger than the cap. Skipped by hand without Chromium; under CI=true it runs (.ci/run installs it).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { LookupFunction } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { BrowserRenderer } from '../../lambdas/adapters/browser-renderer.ts';
import { guardLookup } from '../../lambdas/adapters/http-fetcher.ts';
import { RENDER_LIMITS } from '../../lambdas/core/base/index.ts';

const CHROMIUM = process.env.CRAWLER_CHROMIUM ?? '/usr/bin/chromium';
const skip = !existsSync(CHROMIUM) && process.env.CI !== 'true' && `no Chromium at ${CHROMIUM}`;

/** Every name resolves to 127.0.0.2: the page's host "rebound" to loopback. */
const rebound: LookupFunction = (_hostname, options, callback) => {
  queueMicrotask(() =>
    options.all ? callback(null, [{ address: '127.0.0.2', family: 4 }]) : callback(null, '127.0.0.2', 4),
  );
};

describe('the browser guard: a page rebound to loopback', { skip }, () => {
  let server: Server;
  let port = 0;
  const seen: string[] = [];
  let renderer: BrowserRenderer;

  before(async () => {
    server = createServer((req, res) => {
      seen.push(`${req.headers.host} ${req.url}`);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('answer');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', () => resolve()));
    port = (server.address() as { port: number }).port;
    renderer = new BrowserRenderer({
      executablePath: CHROMIUM,
      lookups: { public: guardLookup(rebound), private: rebound },
    });
  });
  after(async () => {
    await renderer?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  const render = (allowPrivate: boolean) =>
    renderer.render({
      url: new URL(`http://app.rebound.test:${port}/`),
      html: `<!doctype html><body><script>
        fetch('/api/own').then((r) => r.text()).then((t) => document.body.append('own:' + t)).catch(() => document.body.append('own:refused'));
        fetch('http://other.rebound.test:${port}/api/other').catch(() => {});
      </script></body>`,
      userAgent: 'render-guard-test',
      allowPrivate,
      timeMs: RENDER_LIMITS.timeMs,
      maxRequests: 20,
      maxBytes: 1024 * 1024,
      maxDomChars: 100_000,
    });

  it('without --allow-private: nothing reaches the loopback server, the page is still read', async () => {
    seen.length = 0;
    const page = await render(false);
    assert.ok(page.ok);
    assert.match(page.ok ? page.html : '', /own:refused/);
    assert.deepEqual(seen, []);
    assert.ok(page.refused >= 2, `refused: ${page.refused}`);
  });

  it("with --allow-private: the page's own host only, never another host on loopback", async () => {
    seen.length = 0;
    const page = await render(true);
    assert.match(page.ok ? page.html : '', /own:answer/);
    assert.deepEqual(seen, [`app.rebound.test:${port} /api/own`]);
  });

  it('sends back no more DOM than the cap, however much a script builds', async () => {
    const page = await renderer.render({
      url: new URL(`http://app.rebound.test:${port}/grow`),
      html: "<!doctype html><body><script>document.body.append('x'.repeat(5000000))</script></body>",
      userAgent: 'render-guard-test',
      allowPrivate: false,
      timeMs: RENDER_LIMITS.timeMs,
      maxRequests: 20,
      maxBytes: 1024 * 1024,
      maxDomChars: 10_000,
    });
    assert.ok(page.ok);
    assert.equal(page.ok && page.html.length, 10_000);
    assert.match(
      page.ok ? (page.truncated ?? '') : '',
      /^rendered DOM cut at 10000 characters \(it had 5000\d{3}\)$/,
    );
  });
});
