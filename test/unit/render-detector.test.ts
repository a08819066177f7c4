/**
 * The rendering detector (lambdas/core/content/render-detector.ts) and the render decision
 * (lambdas/core/content/page-render.ts): application shells are found, pages with their content are not,
 * hostile HTML costs time linear in its size, and the modes and patterns decide as documented.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderChoice, renderDecision, renderPage, renderVerdict } from '../../lambdas/core/content/index.ts';
import { type PageRenderer, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { assertLinear } from '../fixtures/linear-time.ts';

const page = (body: string, head = '') =>
  `<!doctype html><html><head><title>t</title>${head}</head><body>${body}</body></html>`;
const text = (n: number) => 'word '.repeat(Math.ceil(n / 4));

describe('renderVerdict', () => {
  it('finds the shells of the common frameworks', () => {
    for (const body of [
      '<div id="root"></div><script src="/main.js"></script>',
      '<div id="app"></div>',
      '<app-root></app-root>',
      '<div id="__next"></div><script id="__NEXT_DATA__" type="application/json">{}</script>',
      '<div data-reactroot=""></div>',
      '<noscript>You need to enable JavaScript to run this app.</noscript><main></main><script src="x.js"></script>',
      '<script src="/bundle.js"></script>',
    ])
      assert.equal(renderVerdict(page(body)).render, true, body);
  });

  it('leaves pages whose content is in the HTML', () => {
    for (const body of [
      `<div id="root"><article>${text(800)}</article></div><script src="/main.js"></script>`,
      `<div id="__next"><p>${text(600)}</p></div><script id="__NEXT_DATA__">{}</script>`,
      `<noscript>Please enable JavaScript for comments.</noscript><article>${text(3000)}</article>`,
      `<script src="/a.js"></script><ul>${Array.from({ length: 20 }, (_, i) => `<a href="/${i}">${i}</a>`).join('')}</ul>`,
      '<p>Short page, no scripts at all.</p>',
    ])
      assert.equal(renderVerdict(page(body)).render, false, body);
  });

  it('counts the text outside scripts, styles and templates only, and says why', () => {
    const verdict = renderVerdict(
      page(
        `<script>var s = "${text(5000)}";</script><style>${text(5000)}</style><template>${text(5000)}</template><p>hi</p>`,
      ),
    );
    assert.equal(verdict.render, true);
    assert.match(verdict.reason, /3 script\(s\)|1 script\(s\), 2 characters of text/);
  });

  it('takes time linear in hostile HTML: deep nesting, many mount points, stray closing tags', () => {
    const hostile = (n: number) =>
      page(`${'<div id="app">x'.repeat(n)}${'</span>'.repeat(n)}${'<noscript>enable javascript'.repeat(n)}`);
    assertLinear({
      what: 'hostile HTML',
      n: 10_000,
      time: (n) => {
        const html = hostile(n);
        const started = performance.now();
        renderVerdict(html);
        return performance.now() - started;
      },
    });
  });
});

describe('renderDecision', () => {
  const url = new URL('http://docs.example/guide/intro');
  const shell = page('<div id="root"></div>');
  const article = page(`<article>${text(2000)}</article><script src="x.js"></script>`);
  const config = (render: 'never' | 'auto' | 'always', renderPatterns: string[] = []) => ({
    render,
    renderPatterns,
  });

  it('never renders by default, always with always, and a pattern in any mode', () => {
    assert.equal(renderDecision(config('never'), url, shell, true).render, false);
    assert.equal(renderDecision(config('always'), url, article, false).render, true);
    assert.equal(renderDecision(config('never', ['/guide/']), url, article, false).render, true);
    assert.equal(renderDecision(config('never', ['/blog/']), url, shell, false).render, false);
  });

  it('auto: the detector, or a host one of whose pages needed it', () => {
    assert.equal(renderDecision(config('auto'), url, shell, false).render, true);
    assert.equal(renderDecision(config('auto'), url, article, false).render, false);
    const remembered = renderDecision(config('auto'), url, article, true);
    assert.equal(remembered.render, true);
    assert.match(remembered.reason, /an earlier page of its host needed rendering/);
  });
});

describe('renderChoice and renderPage', () => {
  const url = new URL('http://app.example:8080/');
  const shell = page('<div id="root"></div><script src="/x.js"></script>');
  const config = parseCrawlConfig({ crawlId: 'c', seeds: [url.href], render: 'auto', delayMs: 500 });
  const hosts = (remembered = new Set<string>()) => ({
    has: (key: string) => remembered.has(key),
    add: (key: string) => void remembered.add(key),
  });
  const counts = { sameHostRequests: 3, refused: 0 };

  it('sends a shell to the render function and remembers its host; a stack without one keeps it, saying why', () => {
    const remembered = new Set<string>();
    assert.deepEqual(
      renderChoice('c', url, shell, config, { renders: true, renderedHosts: hosts(remembered) }),
      {
        kind: 'send',
        reason: 'an empty app mount point and 0 characters of text',
      },
    );
    assert.deepEqual([...remembered], ['c app.example:8080']);
    const later = new URL('http://app.example:8080/about');
    assert.deepEqual(
      renderChoice('c', later, page(`<p>${text(600)}</p>`), config, {
        renders: true,
        renderedHosts: hosts(remembered),
      }),
      { kind: 'send', reason: 'an earlier page of its host needed rendering' },
    );
    assert.deepEqual(renderChoice('c', url, page(`<p>${text(600)}</p>`), config, { renders: true }), {
      kind: 'skip',
    });
    assert.deepEqual(renderChoice('c', url, shell, config, { renders: false }), {
      kind: 'unavailable',
      note: {
        code: 'render-unavailable',
        reason:
          'not rendered (an empty app mount point and 0 characters of text): this stack has no render function (deploy it with -c render=true)',
      },
    });
  });

  it("renders, counting the browser's requests to the page's host; a browser that fails keeps the page as fetched", async () => {
    const renderer: PageRenderer = {
      render: async () => ({ ok: true, html: '<p>built</p>', ...counts }),
      close: async () => {},
    };
    assert.deepEqual(await renderPage(url, shell, config, { renderer, now: () => 1_000 }), {
      kind: 'rendered',
      html: '<p>built</p>',
      sameHostRequests: 3,
    });
    const broken: PageRenderer = {
      render: async () => Promise.reject(new Error('chromium: no such file')),
      close: async () => {},
    };
    assert.deepEqual(await renderPage(url, shell, config, { renderer: broken, now: () => 1_000 }), {
      kind: 'failed',
      note: { code: 'render-failed', reason: 'not rendered: chromium: no such file' },
      sameHostRequests: 0,
    });
    const endless: PageRenderer = {
      render: async () => ({
        ok: false,
        code: 'render-timeout',
        reason: 'not rendered within 15000 ms',
        ...counts,
      }),
      close: async () => {},
    };
    assert.deepEqual(await renderPage(url, shell, config, { renderer: endless, now: () => 1_000 }), {
      kind: 'failed',
      note: { code: 'render-timeout', reason: 'not rendered within 15000 ms' },
      sameHostRequests: 3,
    });
  });
});
