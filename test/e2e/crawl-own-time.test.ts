/**
 * Two crawls in one state directory (issue 14, part 1): the first is stopped with work delayed for
 * minutes, then cancelled; the second must neither wait for that work nor report its time.
 *
 * Site A answers its only page `503 Retry-After: 600`, so crawl A's URL is postponed 600 s and its
 * host's visit message is handed back delayed by as much. A is stopped (Ctrl-C) and cancelled
 * (`crawler cancel ID`), which leaves that delayed message in the state dir. Crawl B, a small site at
 * `--delay 0`, then runs in the same state dir: it must finish long before A's message is due, with
 * its own time in summary.json and only its own URLs in results.jsonl. Before, `crawler crawl` waited
 * until every queue of the state dir was empty, A's delayed message included.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startCli } from '../fixtures/cli-process.ts';
import { readCrawlOutput, runCli, tempDir } from '../fixtures/run-cli.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

const RETRY_AFTER_S = 600;
const B_PAGES = 10;

describe('crawler crawl: a crawl waits for its own work only', () => {
  let siteA: TestSite;
  let siteB: TestSite;

  before(async () => {
    siteA = await startSite({
      '/': (_request, response) => {
        response.writeHead(503, { 'retry-after': String(RETRY_AFTER_S), 'content-type': 'text/plain' });
        response.end('busy');
      },
    });
    const links = Array.from({ length: B_PAGES - 1 }, (_, i) => `<a href="/p/${i + 1}">${i + 1}</a>`).join(
      '\n',
    );
    const routes: Record<string, ReturnType<typeof html>> = { '/': html(`<h1>B</h1>\n${links}`) };
    for (let i = 1; i < B_PAGES; i++) routes[`/p/${i}`] = html(`<p>page ${i}</p>`);
    siteB = await startSite(routes);
  });

  after(async () => {
    await siteA.close();
    await siteB.close();
  });

  it("does not wait for a cancelled crawl's delayed tasks, and reports its own time", async () => {
    const state = await tempDir('crawler-own-state-');
    const outA = await tempDir('crawler-own-a-');
    const outB = await tempDir('crawler-own-b-');
    try {
      const a = startCli(
        [
          'crawl',
          `${siteA.origin}/`,
          '--allow-private',
          '--delay',
          '0',
          '--out',
          outA.path,
          '--state-dir',
          state.path,
        ],
        state.path,
      );
      const crawlA = (await a.waitForStderr(/crawl (c-[\w-]+): /))[1]!;
      // A's visit has met the 503 and handed its host back for Retry-After once its invocation ended;
      // Ctrl-C lets that invocation finish.
      while ((siteA.hits.get('/') ?? 0) === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      a.child.kill('SIGINT');
      await a.exited;
      const cancel = await runCli(['cancel', crawlA, '--state-dir', state.path], { stateDir: state.path });
      assert.equal(cancel.code, 0, cancel.stderr);

      const startedB = Date.now();
      const b = await runCli(
        ['crawl', `${siteB.origin}/`, '--allow-private', '--delay', '0', '--out', outB.path],
        // Killed well before A's delayed message is due: waiting for it fails the test.
        { stateDir: state.path, timeoutMs: (RETRY_AFTER_S / 2) * 1000 },
      );
      const wallB = (Date.now() - startedB) / 1000;
      assert.equal(b.timedOut, false, `crawl B waited for crawl A's delayed work:\n${b.stderr}`);
      assert.equal(b.code, 0, b.stderr);
      const output = await readCrawlOutput(outB.path);
      assert.equal(output.summary.state, 'complete');
      assert.equal(output.results.length, B_PAGES);
      assert.ok(
        output.results.every((line) => line.url.startsWith(siteB.origin) && line.outcome === 'fetched'),
        'only crawl B, every page fetched',
      );
      const seconds = output.summary.seconds as number;
      assert.ok(seconds <= wallB, `crawl B reports ${seconds} s, its process ran ${wallB.toFixed(1)} s`);
      assert.ok(seconds < RETRY_AFTER_S, `crawl B reports ${seconds} s: A's delayed work counted`);
      assert.equal(siteA.hits.get('/'), 1, "crawl A's page was not requested again");
    } finally {
      await state.remove();
      await outA.remove();
      await outB.remove();
    }
  });
});
