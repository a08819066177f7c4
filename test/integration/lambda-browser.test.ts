/**
 * The render function's browser as it runs on Lambda (lambdas/adapters/lambda-browser.ts):
 * @sparticuz/chromium's packed Chromium, unpacked to /tmp, launched with Lambda's flags (no sandbox,
 * one process, graphics off), renders a loopback single-page app whose script reads its own API, and
 * keeps to the address guard. It is the x86_64 Linux build the Chromium layer deploys, so it runs on
 * this machine's kind; elsewhere it is skipped by hand (CI=true runs it: CI is this machine's kind).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { lambdaBrowser } from '../../lambdas/adapters/lambda-browser.ts';
import { RENDER_LIMITS } from '../../lambdas/core/base/index.ts';
import type { PageRenderer } from '../../lambdas/core/crawl/index.ts';

const supported = process.platform === 'linux' && process.arch === 'x64';
const skip = !supported && process.env.CI !== 'true' && '@sparticuz/chromium is built for x86_64 Linux only';

describe("the render function's browser: @sparticuz/chromium with Lambda's flags", { skip }, () => {
  let server: Server;
  let port = 0;
  const seen: string[] = [];
  let renderer: PageRenderer;

  before(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"title":"Built from the API"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', () => resolve()));
    port = (server.address() as { port: number }).port;
    renderer = lambdaBrowser(false);
  });
  after(async () => {
    await renderer?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("renders a page from its own API, counting its requests to the page's host; the metadata address gets nothing", async () => {
    const rendered = await renderer.render({
      url: new URL(`http://127.0.0.2:${port}/`),
      html: `<!doctype html><body><div id="root"></div><script>
        fetch('/api/home.json').then((r) => r.json()).then((data) => {
          const h1 = document.createElement('h1');
          h1.textContent = data.title;
          document.getElementById('root').append(h1);
        });
        fetch('http://169.254.169.254/latest/meta-data/').catch(() => {});
      </script></body>`,
      userAgent: 'lambda-browser-test',
      allowPrivate: true,
      timeMs: RENDER_LIMITS.timeMs,
      maxRequests: 20,
      maxBytes: RENDER_LIMITS.maxBytes,
      maxDomChars: RENDER_LIMITS.maxDomChars,
    });
    assert.ok(rendered.ok, JSON.stringify(rendered));
    assert.match(rendered.html, /<h1>Built from the API<\/h1>/);
    assert.deepEqual(seen, ['/api/home.json']);
    assert.equal(rendered.sameHostRequests, 1);
    assert.equal(rendered.refused, 1, 'the metadata address is refused');
  });
});
