/**
 * Adversarial pages against content extraction and link extraction (issue 22): each construct is
 * timed at n and 4n in the same run, and the cost must grow linearly (a ratio well below the 16 of a
 * quadratic step), so the check holds on a loaded machine: the fastest of a few repeats, n doubled
 * until one run is long enough to time. Then the CPU budget: a page past it keeps a content record
 * marked `truncated: "time"`, and its stored body and links are the same as with no budget. Last, the
 * other writers of page text: the Markdown escaping, llms.txt and the front matter.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { betterHome, llmsTxt } from '../../cli/llms-txt.ts';
import { markdownDocument } from '../../cli/markdown-files.ts';
import { CONTENT_LIMITS, escapeMarkdownText } from '../../lambdas/core/base/index.ts';
import { extractLinks, extractMainContent } from '../../lambdas/core/content/index.ts';
import { type PageFetcher, type PageResponse, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { fetchUrl, type UrlDecision } from '../../lambdas/core/fetch/index.ts';
import type { ContentRecord } from '../../lambdas/core/results/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryHostSlots } from '../fakes/host-slots.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';

const PAGE = 'https://adversary.example/page';
/** A linear step gives ~4 for 4x the input, a quadratic one 16. */
const MAX_RATIO = 8;
/** One timed batch at n (ms): long enough for the clock, short enough to often run unpreempted. */
const BATCH_MS = 40;
const REPEATS = 3;
const MIN_RUN_MS = 16;

function elapsed(run: () => void, times = 1): number {
  const start = performance.now();
  for (let i = 0; i < times; i++) run();
  return performance.now() - start;
}

/**
 * The growth of `work(page(n))` from n to 4n: a batch at n repeats the work 4 times as often as one
 * at 4n, so both take as long and are as exposed to preemption; the fastest of REPEATS batches at
 * each size, alternating, are compared (on a loaded machine the fastest batch is the least
 * preempted).
 */
function growth(page: (n: number) => string, work: (html: string) => void, n: number, once: number) {
  const small = page(n);
  const large = page(4 * n);
  work(small);
  work(large);
  const times = Math.max(1, Math.ceil(BATCH_MS / 4 / once));
  let tSmall = Number.POSITIVE_INFINITY;
  let tLarge = Number.POSITIVE_INFINITY;
  for (let i = 0; i < REPEATS; i++) {
    tSmall = Math.min(tSmall, elapsed(() => work(small), 4 * times) / 4);
    tLarge = Math.min(
      tLarge,
      elapsed(() => work(large), times),
    );
  }
  const ratio = tLarge / tSmall;
  return {
    ratio,
    report: `n=${n} ×${times}: ${tSmall.toFixed(1)} ms, 4n ${tLarge.toFixed(1)} ms, ratio ${ratio.toFixed(1)}`,
  };
}

/**
 * Content extraction, and link extraction unless `links` is false (a run of text is one token to
 * it), grow linearly: n starts at `start` and doubles (up to `max`) while a run takes under
 * MIN_RUN_MS (small inputs run in V8's young generation and caches, large ones do not, and that step
 * is not the algorithm's); a ratio over MAX_RATIO is measured once more, at 2n (one step past `max`
 * at most), since a quadratic step fails again and a preempted or collected measurement does not.
 */
function assertLinear(page: (n: number) => string, start: number, max: number, links = true): void {
  const works = [
    ['extractMainContent', (html: string) => extractMainContent(html, PAGE, { cpuBudgetMs: Infinity })],
    ['extractLinks', (html: string) => extractLinks(html, PAGE)],
  ] as const;
  for (const [name, work] of links ? works : works.slice(0, 1)) {
    const fastest = (size: number) => {
      const html = page(size);
      return Math.min(
        elapsed(() => work(html)),
        elapsed(() => work(html)),
        elapsed(() => work(html)),
      );
    };
    let n = start;
    let once = fastest(n);
    while (n < max && once < MIN_RUN_MS) {
      n *= 2;
      once = fastest(n);
    }
    let { ratio, report } = growth(page, work, n, once);
    if (ratio >= MAX_RATIO) {
      // Once past `max` too: the search may stop at `max` with a run barely long enough to time.
      if (n <= max) {
        n *= 2;
        once = fastest(n);
      }
      const again = growth(page, work, n, once);
      ({ ratio } = again);
      report = `${report}; again ${again.report}`;
    }
    assert.ok(ratio < MAX_RATIO, `${name}: ${report}`);
  }
}

const SIGNIFICANT = ['`', '*', '_', '#', '|', '[', '>', '-'];

/** Where a run of characters sits. */
const CONTEXTS: Record<string, (run: string) => string> = {
  paragraph: (run) => `<article><p>${run}</p></article>`,
  pre: (run) => `<article><pre>${run}</pre></article>`,
  'pre > code': (run) => `<article><pre><code class="language-js">${run}</code></pre></article>`,
  code: (run) => `<article><p>see <code>${run}</code></p></article>`,
  table: (run) =>
    `<article><table><tr><th>a</th><th>b</th></tr><tr><td>${run}</td><td>x</td></tr></table></article>`,
  'code in table': (run) =>
    `<article><table><tr><th>a</th><th>b</th></tr><tr><td><code>${run}</code></td><td>x</td></tr></table></article>`,
  heading: (run) => `<article><h2>${run}</h2><p>text</p></article>`,
  list: (run) => `<article><ul><li>${run}</li></ul></article>`,
  link: (run) => `<article><p><a href="/x">${run}</a></p></article>`,
};

describe('extraction is linear: runs of Markdown-significant characters', () => {
  for (const char of SIGNIFICANT) {
    for (const [context, wrap] of Object.entries(CONTEXTS)) {
      test(`${JSON.stringify(char)} in ${context}`, () => {
        assertLinear((n) => wrap(char.repeat(n)), 20_000, 400_000, context === 'paragraph');
      });
    }
    test(`${JSON.stringify(char)} runs of growing length, separated, in pre and paragraphs`, () => {
      // runs of 1, 2, 3, ... characters: every fence length up to sqrt(n) appears
      const runs = (n: number) => {
        const parts: string[] = [];
        for (let len = 1, total = 0; total < n; len++, total += len + 1) parts.push(char.repeat(len));
        return parts.join(' ');
      };
      assertLinear((n) => `<article><pre>${runs(n)}</pre><p>${runs(n)}</p></article>`, 5_000, 400_000);
    });
  }
  test('spaces then text in pre (a trailing-space regex backtracks)', () => {
    assertLinear((n) => `<article><pre>x${' '.repeat(n)}y</pre></article>`, 5_000, 400_000);
  });
  test('many short backtick runs in inline code', () => {
    assertLinear((n) => `<article><p>${'<code>a`b``c</code> '.repeat(n)}</p></article>`, 500, 50_000);
  });
});

describe('extraction is linear: structure', () => {
  test('deeply nested divs, each with a scored paragraph', () => {
    const p = '<p>Some paragraph text, long enough to be scored, with commas.</p>';
    assertLinear((n) => `${`<div class="c">${p}`.repeat(n)}${'</div>'.repeat(n)}`, 50, 2_000);
  });
  test('deeply nested block quotes, lists and inline elements', () => {
    // from 16,000 levels: the parser's cost per element steps up once between ~12,000 and ~50,000
    // open elements (V8's memory, not the algorithm: it is 4x again from 50,000 to 200,000)
    for (const level of ['<blockquote><p>q</p>', '<ul><li>item', '<b><i><a href="/a">x']) {
      assertLinear((n) => `<article><p>${level.repeat(n)}</p></article>`, 16_000, 64_000);
    }
  });
  test('nested tables inside deep containers', () => {
    assertLinear(
      (n) => `<article>${'<div>'.repeat(400)}${'<table><tr><td>cell a</td><td>b'.repeat(n)}</article>`,
      50,
      2_000,
    );
  });
  test('a wide table: one row of n cells and n rows of one cell', () => {
    // 8n cells at most stay under the 10,000-cell cap, which would cut the 4n page short
    assertLinear(
      (n) =>
        `<article><table><tr>${'<td>w</td>'.repeat(n)}</tr>${'<tr><td>r</td></tr>'.repeat(n)}</table></article>`,
      100,
      1_200,
    );
  });
  test('many table rows and cells with colspan', () => {
    assertLinear(
      (n) => `<article><table>${'<tr><td colspan="100">a</td><td>b</td></tr>'.repeat(n)}</table></article>`,
      20,
      2_400,
    );
  });
  test('many links, many distinct and repeated', () => {
    assertLinear(
      (n) => {
        const links: string[] = [];
        for (let i = 0; i < n; i++) links.push(`<a href="/p${i}">link ${i}</a> <a href="/same">same</a>`);
        return `<article><p>${links.join(' ')}</p></article>`;
      },
      500,
      100_000,
    );
  });
  test('many sibling paragraphs and list items', () => {
    assertLinear(
      (n) => `<article>${'<p>para, text.</p><ul><li>a</li></ul>'.repeat(n)}</article>`,
      500,
      100_000,
    );
  });
});

describe('extraction is linear: listing pages', () => {
  const card = (i: number, title = `Card ${i}`, about = `About card ${i}.`) =>
    `<div class="card"><a href="/c${i}"><img src="/i${i}.jpg" alt=""></a><h3><a href="/c${i}">${title}</a></h3><p>${about}</p></div>`;

  test('100,000 cards in a grid (and n of them in the growth check) render as one list', () => {
    assertLinear(
      (n) => {
        const cards: string[] = [];
        for (let i = 0; i < n; i++) cards.push(card(i));
        return `<main><h1>All</h1><div class="grid">${cards.join('')}</div></main>`;
      },
      1_000,
      50_000,
    );
    const cards: string[] = [];
    for (let i = 0; i < 100_000; i++) cards.push(card(i));
    // 2.7 million characters of text: past the default bound, which would cut the grid short
    const out = extractMainContent(`<main><div class="grid">${cards.join('')}</div></main>`, PAGE, {
      cpuBudgetMs: Infinity,
      maxTextChars: Infinity,
    });
    const lines = out.markdown.split('\n');
    assert.equal(lines.length, 100_000);
    assert.equal(lines[99_999], '- [Card 99999](https://adversary.example/c99999) — About card 99999.');
  });

  test('cards nested in cards, and deep wrappers around each card', () => {
    assertLinear(
      (n) => `<main>${`<div class="card"><h3><a href="/x">t</a></h3>`.repeat(n)}</main>`,
      200,
      2_000,
    );
    assertLinear(
      (n) =>
        `<main><div class="grid">${`${'<div>'.repeat(40)}${card(1)}${'</div>'.repeat(40)}`.repeat(n)}</div></main>`,
      50,
      5_000,
    );
    assertLinear(
      (n) =>
        `<main>${'<ul><li><a href="/a">a</a></li><li><a href="/b">b</a></li><li><a href="/c">c</a>'.repeat(n)}</main>`,
      200,
      2_000,
    );
  });

  test('a card with a megabyte title and a megabyte description keeps a line of bounded length', () => {
    assertLinear(
      (n) =>
        `<main><div class="grid">${card(1, 'T'.repeat(n), 'd '.repeat(n))}${card(2)}${card(3)}</div></main>`,
      20_000,
      100_000,
    );
    const mega = 'word '.repeat(200_000);
    const out = extractMainContent(
      `<main><div class="grid">${card(1, mega, mega)}${card(2)}${card(3)}</div></main>`,
      PAGE,
      { maxTextChars: Infinity },
    );
    const first = out.markdown.split('\n')[0] ?? '';
    assert.ok(first.startsWith('- [word word'), first.slice(0, 40));
    assert.ok(
      first.length < CONTENT_LIMITS.titleChars + CONTENT_LIMITS.itemDescriptionChars + 100,
      `a line of ${first.length} characters`,
    );
  });

  test('link text with Markdown-significant characters stays text; javascript: links are not made', () => {
    for (const text of ['](', '`', '<']) {
      assertLinear(
        (n) => `<main><ul>${`<li><a href="/x">${text.repeat(4)}</a></li>`.repeat(n)}</ul></main>`,
        500,
        20_000,
      );
    }
    const out = extractMainContent(
      `<main><ul>${[1, 2, 3]
        .map((i) => `<li><a href="javascript:alert(${i})">](javascript:alert(${i})) \`x\` &lt;b&gt;</a></li>`)
        .join('')}</ul></main>`,
      PAGE,
    );
    assert.equal(
      out.markdown,
      [1, 2, 3].map((i) => `- \\](javascript:alert(${i})) \\\`x\\\` \\<b>`).join('\n'),
    );
  });
});

describe('extraction is linear: attributes and metadata', () => {
  test('a huge class, id, style and href', () => {
    assertLinear(
      (n) => `<article><div class="${'comment '.repeat(n)}"><p>text</p></div></article>`,
      1_000,
      200_000,
    );
    assertLinear(
      (n) => `<article><p id="${'a'.repeat(n)}" style="display${' '.repeat(n)}x">t</p></article>`,
      5_000,
      400_000,
    );
    assertLinear((n) => `<article><p><a href="/${'x('.repeat(n)}">t</a></p></article>`, 5_000, 400_000);
    // a host of many dots ending in one (its trailing dots are trimmed when the link is normalized)
    assertLinear(
      (n) => `<article><p><a href="http://a${'.'.repeat(n)}b./">t</a></p></article>`,
      2_000,
      200_000,
    );
  });
  test('an element with many attributes, and many elements with classes', () => {
    assertLinear(
      (n) => {
        const attrs: string[] = [];
        for (let i = 0; i < n; i++) attrs.push(`a${i}="${i}"`);
        return `<article><p ${attrs.join(' ')}>t</p></article>`;
      },
      1_000,
      100_000,
    );
    assertLinear(
      (n) => {
        const divs: string[] = [];
        for (let i = 0; i < n; i++) divs.push(`<div class="post-${i} sidebar-${i}"><p>text ${i}</p></div>`);
        return `<body>${divs.join('')}</body>`;
      },
      500,
      50_000,
    );
  });
  test('many meta tags, a long title and nested JSON-LD', () => {
    assertLinear(
      (n) => `<head>${'<meta name="description" content="d">'.repeat(n)}</head><p>t</p>`,
      500,
      100_000,
    );
    assertLinear((n) => `<title>${'t '.repeat(n)}</title><p>t</p>`, 5_000, 200_000);
    assertLinear(
      (n) =>
        `<script type="application/ld+json">{"author": ${'['.repeat(n)}${']'.repeat(n)}}</script><p>t</p>`,
      1_000,
      100_000,
    );
  });
  test('a megabyte title, even split over many text runs, is kept to its first CONTENT_LIMITS.titleChars', () => {
    const words = 'word '.repeat(200_000);
    for (const html of [
      `<title>${words}</title><p>t</p>`,
      `<title>${words.replaceAll(' ', ' &amp; ')}</title><p>t</p>`,
    ]) {
      const title = extractMainContent(html, PAGE).metadata.title ?? '';
      assert.ok(title.startsWith('word '), title.slice(0, 40));
      assert.ok(title.length <= CONTENT_LIMITS.titleChars, `a title of ${title.length} characters`);
    }
  });
  test('nested JSON-LD author lists do not throw', () => {
    const deep = 200_000;
    const html = `<script type="application/ld+json">{"author": ${'['.repeat(deep)}"x"${']'.repeat(deep)}}</script><p>t</p>`;
    const out = extractMainContent(html, PAGE);
    assert.equal(out.metadata.author, undefined);
    assert.equal(out.text, 't');
  });
});

describe('the CPU budget of an extraction', () => {
  const many = (n: number) => {
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(`<p>Paragraph ${i}, with <a href="/p${i}">a link</a> in it.</p>`);
    return `<html><head><title>Long</title></head><body><article>${parts.join('')}</article></body></html>`;
  };

  test('past the budget the output is what was read so far, marked truncated: "time"', () => {
    // a clock that advances 1 ms per read: the budget of 20 ms is spent after ~20 × 256 events
    let clock = 0;
    const out = extractMainContent(many(20_000), PAGE, { cpuBudgetMs: 20, cpuClock: () => clock++ });
    assert.equal(out.truncated, 'time');
    assert.equal(out.metadata.title, 'Long');
    assert.match(out.markdown, /^Paragraph 0, with \[a link\]\(https:\/\/adversary\.example\/p0\) in it\./);
    assert.ok(!out.markdown.includes('Paragraph 19999'), 'the rest of the page was not read');
  });

  test('a budget never reached leaves the output whole and unmarked', () => {
    const out = extractMainContent(many(2_000), PAGE);
    assert.equal(out.truncated, undefined);
    assert.ok(out.markdown.includes('Paragraph 1999'));
  });

  test('a page past the budget keeps its stored body, its links and its result', async () => {
    const html = many(5_000);
    const body = new TextEncoder().encode(html);
    const fetcher: PageFetcher = {
      fetch: async () =>
        ({
          url: PAGE,
          requestLine: 'GET /page HTTP/1.1',
          requestHeaders: [['host', 'adversary.example']],
          httpVersion: '1.1',
          status: 200,
          statusText: 'OK',
          headers: [['Content-Type', 'text/html; charset=utf-8']],
          body,
          truncated: undefined,
          remoteAddress: '127.0.0.1',
          startedAt: new Date(0),
          elapsedMs: 1,
        }) satisfies PageResponse,
    };
    const decide = async (extractionCpuMs: number): Promise<UrlDecision> => {
      const crawl = parseCrawlConfig({
        crawlId: 'budget',
        allowPrivate: true,
        respectRobots: false,
        delayMs: 0,
      });
      const page = normalizeUrl(PAGE);
      if (!page.ok) throw new Error(page.reason);
      return fetchUrl('budget', { key: page.key, url: page.url, depth: 0, st: 'new' }, crawl, {
        fetcher,
        pace: new MemoryHostSlots(),
        robots: new MemoryRobotsStore(),
        robotsCache: createRobotsCache(),
        extractionCpuMs,
        now: () => 0,
        sleep: async () => {},
      });
    };
    const cut = await decide(0);
    const whole = await decide(60_000);
    assert.equal(cut.kind, 'captured');
    assert.equal(whole.kind, 'captured');
    if (cut.kind !== 'captured' || whole.kind !== 'captured') return;
    assert.equal(cut.page.content?.truncated, 'time');
    assert.equal(whole.page.content?.truncated, undefined);
    assert.ok((whole.page.content?.markdown ?? '').includes('Paragraph 4999'));
    // what the WARC record is written from, and the links, do not depend on the extraction
    assert.equal(cut.page.response.body, body);
    assert.equal(cut.links.length, 5_000);
    assert.deepEqual(cut.links, whole.links);
    assert.deepEqual(cut.page.result, whole.page.result);
    assert.equal(cut.page.result.outcome, 'fetched');
    assert.equal(cut.page.result.truncated, undefined);
  });
});

describe('the other Markdown writers are linear', () => {
  /** Like assertLinear, for any function of n. */
  function assertLinearWork(work: (n: number) => () => void, start: number, max: number): void {
    let n = start;
    const fastest = (size: number) => {
      const run = work(size);
      return Math.min(elapsed(run), elapsed(run), elapsed(run));
    };
    let once = fastest(n);
    while (n < max && once < MIN_RUN_MS) {
      n *= 2;
      once = fastest(n);
    }
    const measure = (size: number) => {
      const small = work(size);
      const large = work(4 * size);
      const times = Math.max(1, Math.ceil(BATCH_MS / 4 / once));
      let tSmall = Number.POSITIVE_INFINITY;
      let tLarge = Number.POSITIVE_INFINITY;
      for (let i = 0; i < REPEATS; i++) {
        tSmall = Math.min(tSmall, elapsed(small, 4 * times) / 4);
        tLarge = Math.min(tLarge, elapsed(large, times));
      }
      return tLarge / tSmall;
    };
    let ratio = measure(n);
    if (ratio >= MAX_RATIO) ratio = Math.min(ratio, measure(n));
    assert.ok(ratio < MAX_RATIO, `n=${n}: ratio ${ratio.toFixed(1)}`);
  }

  test('escaping runs of every significant character', () => {
    for (const char of ['\\', '`', '*', '_', '#', '|', '[', '>', '-', '&', '1.', ' #']) {
      assertLinearWork(
        (n) => {
          const text = char.repeat(n);
          return () => escapeMarkdownText(text, true);
        },
        10_000,
        1_000_000,
      );
    }
  });

  test('llms.txt of n pages, all of them seeds, with hostile titles', () => {
    assertLinearWork(
      (n) => {
        const urls = Array.from({ length: n }, (_, i) => `https://s${i % 7}.example/p${(i * 7919) % n}`);
        const entries = urls.map((url, i) => ({
          url,
          title: `[t${i}](javascript:x) *${i}*`,
          description: '<b>d</b>',
        }));
        const seeds = [...urls].reverse();
        return () => {
          let home: ContentRecord | undefined;
          for (const url of urls) home = betterHome(home, record(url), seeds);
          llmsTxt(entries, home, seeds);
        };
      },
      4_000,
      16_000,
    );
  });

  test('front matter with long and many values', () => {
    assertLinearWork(
      (n) => {
        const og: Record<string, string> = {};
        for (let i = 0; i < n; i++) og[`k${i}<`] = `v\u2028${i}&`;
        const doc = record('https://a.example/', { title: '<[&]>\u0085'.repeat(n), og, markdown: 'x' });
        return () => markdownDocument(doc);
      },
      500,
      100_000,
    );
  });
});

function record(url: string, extra: Partial<ContentRecord> = {}): ContentRecord {
  return {
    v: 1,
    crawlId: 'c',
    key: url,
    url,
    fetchedAt: '2026-12-03T00:00:00.000Z',
    mime: 'text/html',
    kind: 'html',
    wordCount: 1,
    ...extra,
  };
}
