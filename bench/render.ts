/**
 * `npm run bench -- --only render` (issue 27, point 1):
 *
 * - the detector's precision and recall on test/fixtures/render-corpus.ts (44 pages of our own
 *   making, 22 of which need a browser; written with the detector, so an upper bound);
 * - rendered pages per second and the browser's peak memory (RSS of Chromium's processes, sampled),
 *   rendering a loopback single-page app (content from a JSON API, links added after load) with the
 *   crawler's BrowserRenderer, one page at a time as a fetch container does;
 * - content recall of rendered against unrendered pages on that app (shingle recall of each page's
 *   main content against the text its API served);
 * - the cost per million rendered pages on AWS: the same app crawled by `crawler crawl` with
 *   `--render always` and without, the AWS calls of every function counted and each function's
 *   handler time priced at its memory and architecture (the render function: 2,048 MB, x86_64).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserRenderer } from '../lambdas/adapters/browser-renderer.ts';
import { renderLookups } from '../lambdas/adapters/http-fetcher.ts';
import { RENDER_LIMITS } from '../lambdas/core/base/index.ts';
import { extractMainContent, renderVerdict } from '../lambdas/core/content/index.ts';
import { RENDER_CORPUS } from '../test/fixtures/render-corpus.ts';
import { NODE, ROOT, run } from './processes.ts';
import { shingleScore } from './shingle-f1.ts';

const CHROMIUM = process.env.CRAWLER_CHROMIUM ?? '/usr/bin/chromium';
const APP_PAGES = 40;
/** Pages of the app each counted crawl fetches. */
const CRAWL_PAGES = 200;

/** A counted crawl of the app: its cost per million pages by service, and the render function's time. */
interface CountedCrawl {
  pages: number;
  rendered: number;
  seconds: number;
  perMillion: Record<string, number>;
  renderFunction?: { invocations: number; seconds: number; gbSeconds: number };
}

export interface RenderReport {
  detector: { pages: number; needing: number; precision: number; recall: number; misjudged: string[] };
  browser?: {
    pages: number;
    pagesPerSecond: number;
    msPerPage: number;
    peakChromiumRssMb: number;
    recallRendered: number;
    recallUnrendered: number;
  };
  /** The app crawled with `--render always`, and the same pages served whole crawled without it. */
  crawls?: { rendered: CountedCrawl; plain: CountedCrawl };
  skipped?: string;
}

function detector(): RenderReport['detector'] {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  const misjudged: string[] = [];
  for (const page of RENDER_CORPUS) {
    const render = renderVerdict(page.html).render;
    if (render && page.needsRendering) tp++;
    else if (render) fp++;
    else if (page.needsRendering) fn++;
    if (render !== page.needsRendering) misjudged.push(page.name);
  }
  return {
    pages: RENDER_CORPUS.length,
    needing: RENDER_CORPUS.filter((page) => page.needsRendering).length,
    precision: tp / (tp + fp),
    recall: tp / (tp + fn),
    misjudged,
  };
}

const paragraphs = (i: number) =>
  Array.from(
    { length: 4 },
    (_, p) =>
      `Item ${i} paragraph ${p}: the application builds this text from its API after the page has loaded, and only a browser sees it.`,
  );

async function startApp(): Promise<{ server: Server; origin: string }> {
  const script = `fetch('/api' + location.pathname + '.json').then((r) => r.json()).then((data) => {
    const root = document.getElementById('root');
    for (const text of data.paragraphs) { const p = document.createElement('p'); p.textContent = text; root.appendChild(p); }
    for (const href of data.links) { const a = document.createElement('a'); a.href = href; a.textContent = href; root.appendChild(a); }
  });`;
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const api = /^\/api\/item\/(\d+)\.json$/.exec(url);
    // The same pages served whole (content and links in the HTML): the crawl without a browser.
    const served = /^\/ssr\/item\/(\d+)$/.exec(url);
    if (url === '/app.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    if (api) {
      const i = Number(api[1]);
      return res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ paragraphs: paragraphs(i), links: childrenOf(i).map((n) => `/item/${n}`) }));
    }
    if (served) {
      const i = Number(served[1]);
      const body = [
        ...paragraphs(i).map((text) => `<p>${text}</p>`),
        ...childrenOf(i).map((n) => `<a href="/ssr/item/${n}">/ssr/item/${n}</a>`),
      ].join('');
      return res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<!doctype html><html><head><title>${url}</title></head><body><main>${body}</main></body></html>`,
        );
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end(shell(url));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', () => resolve()));
  return { server, origin: `http://127.0.0.2:${(server.address() as { port: number }).port}` };
}

/** Item i links to items 2i and 2i+1: a tree, so the crawl reaches its pages within its depth limit. */
const childrenOf = (i: number) => [2 * i, 2 * i + 1];

const shell = (path: string) =>
  `<!doctype html><html><head><title>${path}</title></head><body><div id="root"></div><script src="/app.js"></script></body></html>`;

/** RSS of the Chromium processes (MB), summed: the browser, its GPU/utility and renderer processes. */
function chromiumRssMb(): number {
  try {
    const out = execFileSync('ps', ['-C', 'chromium', '-o', 'rss='], { encoding: 'utf8' });
    return out.split('\n').reduce((sum, line) => sum + (Number(line.trim()) || 0), 0) / 1024;
  } catch {
    return 0;
  }
}

async function browser(): Promise<RenderReport['browser']> {
  const app = await startApp();
  const renderer = new BrowserRenderer({ executablePath: CHROMIUM, lookups: renderLookups(false) });
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, chromiumRssMb());
  }, 100);
  try {
    const render = (i: number) =>
      renderer.render({
        url: new URL(`${app.origin}/item/${i}`),
        html: shell(`/item/${i}`),
        userAgent: 'bench',
        allowPrivate: true,
        timeMs: RENDER_LIMITS.timeMs,
        maxRequests: RENDER_LIMITS.maxRequests,
        maxBytes: RENDER_LIMITS.maxBytes,
        maxDomChars: RENDER_LIMITS.maxDomChars,
      });
    await render(0); // the browser's start is the container's, not a page's
    let rendered = 0;
    let unrendered = 0;
    const started = performance.now();
    for (let i = 1; i <= APP_PAGES; i++) {
      const page = await render(i);
      const expected = paragraphs(i).join('\n');
      const url = `${app.origin}/item/${i}`;
      if (page.ok) rendered += shingleScore(extractMainContent(page.html, url).text, expected).recall;
      unrendered += shingleScore(extractMainContent(shell(`/item/${i}`), url).text, expected).recall;
    }
    const seconds = (performance.now() - started) / 1000;
    const perPage = seconds / APP_PAGES;
    return {
      pages: APP_PAGES,
      pagesPerSecond: APP_PAGES / seconds,
      msPerPage: perPage * 1000,
      peakChromiumRssMb: peak,
      recallRendered: rendered / APP_PAGES,
      recallUnrendered: unrendered / APP_PAGES,
    };
  } finally {
    clearInterval(sampler);
    await renderer.close();
    await new Promise((resolve) => app.server.close(resolve));
  }
}

/**
 * `crawler crawl` of CRAWL_PAGES pages of the app with `--render always`, or of the same pages served
 * whole without it, with its counted cost.
 */
async function countedCrawl(origin: string, render: boolean): Promise<CountedCrawl> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-render-'));
  try {
    const done = await run(
      [
        NODE,
        join(ROOT, 'bin', 'crawler.ts'),
        'crawl',
        render ? `${origin}/item/1` : `${origin}/ssr/item/1`,
        '--allow-private',
        '--delay',
        '0',
        '--max-pages',
        String(CRAWL_PAGES),
        '--render',
        render ? 'always' : 'never',
        '--quiet',
        '--out',
        join(dir, 'out'),
        '--state-dir',
        join(dir, 'state'),
      ],
      { cpu: 0, timeoutMs: 900_000 },
    );
    if (done.code !== 0) throw new Error(`crawler crawl failed (${done.code}): ${done.stderr.slice(-2000)}`);
    const summary = JSON.parse(await readFile(join(dir, 'out', 'summary.json'), 'utf8'));
    const results = (await readFile(join(dir, 'out', 'results.jsonl'), 'utf8')).trim().split('\n');
    const renderFunction = summary.aws.lambda?.RenderFunction;
    return {
      pages: summary.aws.pages,
      rendered: results.filter((line) => JSON.parse(line).rendered === true).length,
      seconds: summary.seconds,
      perMillion: summary.aws.costPerMillionPages,
      ...(renderFunction ? { renderFunction } : {}),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function runRender(): Promise<RenderReport> {
  const report: RenderReport = { detector: detector() };
  if (!existsSync(CHROMIUM)) return { ...report, skipped: `no Chromium at ${CHROMIUM}` };
  const measured = await browser();
  const app = await startApp();
  try {
    const rendered = await countedCrawl(app.origin, true);
    const plain = await countedCrawl(app.origin, false);
    return {
      ...report,
      ...(measured === undefined ? {} : { browser: measured }),
      crawls: { rendered, plain },
    };
  } finally {
    await new Promise((resolve) => app.server.close(resolve));
  }
}

export function renderTable(report: RenderReport): string {
  const d = report.detector;
  const lines = [
    '## Rendering (`--render`)',
    '',
    `Detector on test/fixtures/render-corpus.ts (${d.pages} pages of our own making, ${d.needing} need a browser; written with the detector: an upper bound): precision ${d.precision.toFixed(3)}, recall ${d.recall.toFixed(3)}${d.misjudged.length ? `; misjudged: ${d.misjudged.join(', ')}` : ''}.`,
  ];
  const b = report.browser;
  if (b === undefined) {
    lines.push('', `Browser figures not measured: ${report.skipped ?? 'no browser'}.`);
    return lines.join('\n');
  }
  lines.push(
    '',
    `A loopback single-page app (content from a JSON API, a link added after load), ${b.pages} pages rendered one at a time by BrowserRenderer (Debian Chromium), the browser already started:`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| rendered pages per second | ${b.pagesPerSecond.toFixed(2)} (${b.msPerPage.toFixed(0)} ms a page) |`,
    `| peak RSS of the browser's processes | ${b.peakChromiumRssMb.toFixed(0)} MB |`,
    `| content recall, rendered | ${b.recallRendered.toFixed(3)} |`,
    `| content recall, unrendered (the shell) | ${b.recallUnrendered.toFixed(3)} |`,
  );
  const c = report.crawls;
  if (c !== undefined) {
    const usd = (crawl: CountedCrawl, service: string) => `$${(crawl.perMillion[service] ?? 0).toFixed(2)}`;
    const row = (name: string, crawl: CountedCrawl) =>
      `| ${name} | ${crawl.pages} (${crawl.rendered} rendered) | ${crawl.seconds.toFixed(1)} | ${usd(crawl, 'lambda')} | ${usd(crawl, 'sqs')} | ${usd(crawl, 's3')} | ${usd(crawl, 'dynamodb')} | ${usd(crawl, 'total')} |`;
    const fn = c.rendered.renderFunction;
    const added = (c.rendered.perMillion.total ?? 0) - (c.plain.perMillion.total ?? 0);
    lines.push(
      '',
      `Cost per million pages on AWS, counted: \`crawler crawl\` of ${CRAWL_PAGES} pages at delay 0, the app with \`--render always\` and the same pages served whole without it; every function's AWS calls counted and its handler time priced at its memory and architecture (list prices of lambdas/shared/aws-prices.ts):`,
      '',
      '| crawl | pages | seconds | Lambda | SQS | S3 | DynamoDB | total |',
      '| --- | --- | --- | --- | --- | --- | --- | --- |',
      row('the app, --render always', c.rendered),
      row('served whole, --render never', c.plain),
      '',
      `Rendering adds $${added.toFixed(2)} per million pages.`,
      fn === undefined
        ? 'The render function did not run.'
        : `The render function: ${fn.invocations} invocations, ${fn.seconds.toFixed(1)} s of handler time (${((fn.seconds / Math.max(1, fn.invocations)) * 1000).toFixed(0)} ms a page, the browser started once per container), ${fn.gbSeconds.toFixed(1)} GB-s at 2,048 MB (x86_64).`,
    );
  }
  return lines.join('\n');
}
