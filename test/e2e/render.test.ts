/**
 * `crawler crawl --render` (issue 27, point 1) on a loopback single-page app: its content is built by
 * script from a JSON API and its links are added after load, so only the rendered DOM has them. The
 * app's script also reaches for 127.0.0.1 and the metadata address: the browser's requests keep to
 * the address guard (a canary on 127.0.0.1 sees no connection). A page whose script never yields
 * ends `render-timeout`, bounded, and is kept as fetched. Skipped only where no Chromium is installed
 * (`.ci/run` installs Debian's).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { iterateWarcFile } from '../../lambdas/core/archive/index.ts';
import { type LoopbackHost, startLoopbackHost } from '../fixtures/loopback-host.ts';
import { type CrawlRun, runCrawl } from '../fixtures/run-cli.ts';

const CHROMIUM = process.env.CRAWLER_CHROMIUM ?? '/usr/bin/chromium';
/** The rendered crawl's delay: each page's render makes two requests to the host (its script, its API). */
const DELAY_MS = 300;
const PAGES = ['/', '/item/1', '/item/2'];
const apiOf = (page: string) => (page === '/' ? '/api/home.json' : `/api${page}.json`);

const shell = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><div id="root"></div><script src="/app.js"></script></body></html>`;

function appScript(canaryPort: number): string {
  return `
(async () => {
  const path = location.pathname === '/' ? '/api/home.json' : '/api' + location.pathname + '.json';
  const data = await (await fetch(path)).json();
  const root = document.getElementById('root');
  const h1 = document.createElement('h1');
  h1.textContent = data.title;
  root.appendChild(h1);
  for (const text of data.paragraphs) {
    const p = document.createElement('p');
    p.textContent = text;
    root.appendChild(p);
  }
  // What an attacker's page would try: this machine and the metadata service.
  fetch('http://127.0.0.1:${canaryPort}/steal').catch(() => {});
  fetch('http://169.254.169.254/latest/meta-data/').catch(() => {});
  const img = document.createElement('img');
  img.src = 'http://127.0.0.1:${canaryPort}/pixel.png';
  root.appendChild(img);
  setTimeout(() => {
    for (const href of data.links) {
      const a = document.createElement('a');
      a.href = href;
      a.textContent = 'Link to ' + href;
      root.appendChild(a);
    }
  }, 100);
})();`;
}

const words = (topic: string) =>
  Array.from(
    { length: 3 },
    (_, i) =>
      `The ${topic} paragraph ${i} says what the single-page app built from its API, long enough to be content.`,
  );

/** Skipped by hand where Chromium is missing; under CI=true it runs and fails: .ci/run installs it. */
const skip = !existsSync(CHROMIUM) && process.env.CI !== 'true' && `no Chromium at ${CHROMIUM}`;

describe('crawler crawl --render', { skip }, () => {
  let site: LoopbackHost;
  let canary: Server;
  let canaryConnections = 0;
  let rendered: CrawlRun;
  /** Requests for the three pages during the rendered crawl: the crawler's fetches only. */
  let documentRequests = 0;
  /** Every request the site had during the rendered crawl. */
  let renderedRequests: LoopbackHost['requests'] = [];
  let plain: CrawlRun;
  let endless: CrawlRun;

  before(async () => {
    assert.ok(
      existsSync(CHROMIUM),
      `CI=true and no Chromium at ${CHROMIUM}: .ci/run must install it (apt-get install -y chromium)`,
    );
    canary = createServer((socket) => {
      canaryConnections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', () => resolve()));
    const canaryPort = (canary.address() as { port: number }).port;
    site = await startLoopbackHost('127.0.0.2', (req) => {
      const path = req.url ?? '/';
      if (path === '/robots.txt') return [404, {}, ''];
      if (path === '/app.js') return [200, { 'content-type': 'text/javascript' }, appScript(canaryPort)];
      if (path === '/api/home.json')
        return [
          200,
          { 'content-type': 'application/json' },
          JSON.stringify({
            title: 'Home of the app',
            paragraphs: words('home'),
            links: ['/item/1', '/item/2'],
          }),
        ];
      // Item 2's API is behind the crawl's login: only a browser sending the crawl's cookie gets it.
      if (path === '/api/item/2.json' && req.headers.cookie !== 'session=s-render-1')
        return [401, { 'content-type': 'application/json' }, '{}'];
      const item = /^\/api\/item\/(\d)\.json$/.exec(path);
      if (item)
        return [
          200,
          { 'content-type': 'application/json' },
          JSON.stringify({ title: `Item ${item[1]}`, paragraphs: words(`item ${item[1]}`), links: [] }),
        ];
      if (path === '/endless')
        return [
          200,
          {},
          '<!doctype html><html><body><div id="app"></div><script>for (;;) {}</script></body></html>',
        ];
      return [200, {}, shell(path)];
    });
    rendered = await runCrawl(
      [`${site.origin}/`],
      [
        '--allow-private',
        '--delay',
        String(DELAY_MS),
        '--quiet',
        '--render',
        'auto',
        '--cookie',
        'session=s-render-1',
      ],
    );
    renderedRequests = [...site.requests];
    documentRequests = site.requests.filter((request) => PAGES.includes(request.path)).length;
    plain = await runCrawl([`${site.origin}/`], ['--allow-private', '--delay', '0', '--quiet']);
    endless = await runCrawl(
      [`${site.origin}/endless`],
      ['--allow-private', '--delay', '0', '--quiet', '--render', 'always'],
    );
  });
  after(async () => {
    await site?.close();
    await new Promise((resolve) => canary?.close(resolve));
  });

  it('reads links and content from the rendered DOM: the links added after load are crawled, an API behind the login read', async () => {
    const byPath = new Map(rendered.results.map((line) => [new URL(line.url).pathname, line]));
    assert.deepEqual([...byPath.keys()].sort(), ['/', '/item/1', '/item/2']);
    for (const line of byPath.values()) {
      assert.equal(line.status, 200);
      assert.equal(line.rendered, true, `${line.url} was rendered`);
    }
    const pages = (await readFile(join(rendered.outDir, 'pages.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { url: string; markdown?: string });
    const home = pages.find((page) => new URL(page.url).pathname === '/');
    assert.match(home?.markdown ?? '', /The home paragraph 0 says what the single-page app built/);
    const item = pages.find((page) => new URL(page.url).pathname === '/item/2');
    assert.match(
      item?.markdown ?? '',
      /The item 2 paragraph 1/,
      "the page's own API call carried the crawl's cookie",
    );
  });

  it('does not fetch a page twice: the browser is given the response the crawler has', () => {
    assert.equal(documentRequests, 3);
  });

  it("holds the host while a page renders: no request of the crawler meets the browser's, and the next waits a delay for each of them", () => {
    const timeline = renderedRequests.filter((request) => request.path !== '/robots.txt');
    const documents = timeline.filter((request) => PAGES.includes(request.path));
    assert.equal(documents.length, 3);
    for (const [index, document] of documents.entries()) {
      const next = documents[index + 1];
      // This page's render asked for its API after its document came, and before the next document.
      const api = timeline.find((request) => request.path === apiOf(document.path));
      assert.ok(api && api.at >= document.at, `${document.path}: its API was asked for after the page`);
      if (next === undefined) continue;
      assert.ok(api.at <= next.at, `${document.path}: rendered before ${next.path} was fetched`);
      const before = timeline.filter((request) => request.at <= next.at && !PAGES.includes(request.path));
      const lastSubrequest = Math.max(...before.map((request) => request.at));
      assert.ok(
        next.at - lastSubrequest >= 2 * DELAY_MS,
        `${next.path} came ${next.at - lastSubrequest} ms after the previous render's last request, not ${2 * DELAY_MS}`,
      );
    }
  });

  it('without --render the same app is an empty shell with no links', () => {
    assert.deepEqual(
      plain.results.map((line) => [new URL(line.url).pathname, line.outlinks ?? 0, line.rendered]),
      [['/', 0, undefined]],
    );
  });

  it('keeps the rendered DOM as a conversion record referring to the response, in a WARC file of the render function', async () => {
    // The response is in the fetch function's WARC file, its rendering in the render function's.
    const records = [];
    for (const name of rendered.warcFiles)
      for (const { record } of iterateWarcFile(await readFile(join(rendered.outDir, 'warc', name))))
        records.push({ name, record });
    const responses = new Map<string, { uri: string; file: string }>();
    for (const { name, record } of records)
      if (record.header('WARC-Type') === 'response')
        responses.set(record.header('WARC-Record-ID') ?? '', {
          uri: record.header('WARC-Target-URI') ?? '',
          file: name,
        });
    let conversions = 0;
    for (const { name, record } of records) {
      if (
        record.header('WARC-Type') !== 'conversion' ||
        !record.header('Content-Type')?.startsWith('text/html')
      )
        continue;
      conversions++;
      const response = responses.get(record.header('WARC-Refers-To') ?? '');
      assert.equal(response?.uri, record.header('WARC-Target-URI'));
      assert.notEqual(response?.file, name);
      assert.match(Buffer.from(record.block).toString('utf8'), /<h1>(Home of the app|Item \d)<\/h1>/);
    }
    assert.equal(conversions, 3);
  });

  it("keeps the page's script away from this machine and the metadata address", () => {
    assert.equal(canaryConnections, 0, 'the canary on 127.0.0.1 was reached');
  });

  it('ends a page whose script never yields at the render budget, kept as fetched', () => {
    assert.equal(endless.results.length, 1);
    const line = endless.results[0];
    assert.equal(line?.status, 200);
    assert.equal(line?.code, 'render-timeout');
    assert.equal(line?.rendered, undefined);
  });
});
