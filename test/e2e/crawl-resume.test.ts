/**
 * Ctrl-C, kill -9 and resume (issue 14, part 2), on a 2,000-page site checked by the servers' own
 * counts: 100 hosts (127.0.0.2 ... 127.0.0.101) of 20 pages each, so visits end often and a Ctrl-C
 * finds work both in flight and still queued.
 *
 * 1. `crawler crawl` is interrupted with SIGINT (as Ctrl-C sends it): it lets the invocations in
 *    flight finish, writes what exists to --out marked `interrupted`, prints the resume command and
 *    exits 130. `crawler list` shows the crawl `interrupted`.
 * 2. `crawler crawl --resume ID` is killed with SIGKILL part way.
 * 3. The same resume, run to the end: it takes the dead process's lock over (and says so), and the
 *    crawl completes with every URL exactly once in results.jsonl.
 *
 * By the servers' counts every page is requested; nothing the Ctrl-C run fetched is fetched again,
 * and a page requested twice was first requested by the killed run, which had not sent its result
 * yet: the resume finalizes the results the killed run sent before it fetches anything, so only what
 * the killed invocations held unsent (at most two flushes' worth each) is fetched again.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startCli, until } from '../fixtures/cli-process.ts';
import { readCrawlOutput, runCli, tempDir } from '../fixtures/run-cli.ts';

const HOSTS = 100;
const PAGES_PER_HOST = 20;
const PAGES = HOSTS * PAGES_PER_HOST;
const CONCURRENCY = 2;
/** What one killed fetch invocation may hold unsent: a flush on its way and the 50 pages beside it. */
const UNSENT_PER_INVOCATION = 100;

interface Request {
  page: string;
  phase: number;
}

describe('crawler crawl: Ctrl-C, kill -9 and --resume', () => {
  const servers: Server[] = [];
  const origins: string[] = [];
  const requests: Request[] = [];
  let phase = 0;

  before(async () => {
    for (let i = 0; i < HOSTS; i++) {
      const ip = `127.0.0.${i + 2}`;
      const server = createServer((request, response) => {
        const path = request.url ?? '/';
        if (path === '/robots.txt') {
          response.writeHead(404).end();
          return;
        }
        const origin = origins[i];
        requests.push({ page: `${origin}${path}`, phase });
        const match = /^\/p\/(\d+)$/.exec(path);
        const n = path === '/' ? 0 : match ? Number(match[1]) : -1;
        if (n < 0 || n >= PAGES_PER_HOST) {
          response.writeHead(404).end();
          return;
        }
        const links =
          n === 0
            ? Array.from({ length: PAGES_PER_HOST - 1 }, (_, k) => `<a href="/p/${k + 1}">${k + 1}</a>`).join(
                '\n',
              )
            : '<a href="/">home</a>';
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        response.end(`<!doctype html><title>${ip} ${n}</title><p>page ${n} of ${ip}</p>\n${links}\n`);
      });
      await new Promise<void>((resolve) => server.listen(0, ip, resolve));
      servers.push(server);
      origins.push(`http://${ip}:${(server.address() as AddressInfo).port}`);
    }
  });

  after(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('resumes an interrupted and a killed crawl: every URL one result line, nothing the Ctrl-C run fetched is fetched again', async () => {
    const state = await tempDir('crawler-resume-state-');
    const out = await tempDir('crawler-resume-out-');
    try {
      const common = ['--state-dir', state.path, '--out', out.path, '--concurrency', String(CONCURRENCY)];
      const seeds = origins.map((origin) => `${origin}/`);

      // 1. Ctrl-C part way.
      phase = 1;
      const first = startCli(['crawl', ...seeds, '--allow-private', '--delay', '0', ...common], state.path);
      const crawlId = (await first.waitForStderr(/crawl (c-[\w-]+): /))[1]!;
      await until(() => requests.length >= PAGES / 10, `${PAGES / 10} pages were requested`, first);
      first.child.kill('SIGINT');
      const firstEnd = await first.exited;
      const firstRequests = requests.length;
      assert.equal(firstEnd.code, 130, `exit code after Ctrl-C\n${first.stderr()}`);
      assert.match(first.stderr(), new RegExp(`crawler crawl --resume ${crawlId}`));
      const interrupted = await readCrawlOutput(out.path);
      assert.equal(interrupted.summary.state, 'interrupted');
      assert.ok(firstRequests < PAGES, `the Ctrl-C run did not stop: ${firstRequests} requests`);
      assert.ok(
        interrupted.results.length <= firstRequests,
        `${interrupted.results.length} result lines for ${firstRequests} requests`,
      );

      const listed = await runCli(['list', '--json', '--state-dir', state.path], { stateDir: state.path });
      assert.equal(listed.code, 0, listed.stderr);
      const entry = listed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { crawlId: string; state: string })
        .find((crawl) => crawl.crawlId === crawlId);
      assert.equal(entry?.state, 'interrupted', listed.stdout);

      // 2. Resume, then kill -9 part way.
      phase = 2;
      const second = startCli(['crawl', '--resume', crawlId, ...common], state.path);
      await until(
        () => requests.length >= firstRequests + (PAGES - firstRequests) / 3,
        'the resumed run fetched a third of the rest',
        second,
      );
      second.child.kill('SIGKILL');
      await second.exited;

      // 3. Resume to the end: the dead run's lock is taken over, with a message.
      phase = 3;
      const third = startCli(['crawl', '--resume', crawlId, ...common], state.path);
      const thirdEnd = await third.exited;
      assert.equal(thirdEnd.code, 0, third.stderr());
      assert.match(third.stderr(), /which is gone: taking the lock over/);

      const final = await readCrawlOutput(out.path);
      assert.equal(final.summary.state, 'complete');
      const expected = origins.flatMap((origin) => [
        `${origin}/`,
        ...Array.from({ length: PAGES_PER_HOST - 1 }, (_, k) => `${origin}/p/${k + 1}`),
      ]);
      assert.equal(final.results.length, PAGES, 'one result line per URL');
      assert.deepEqual(final.results.map((line) => line.url).sort(), [...expected].sort());
      assert.ok(
        final.results.every((line) => line.outcome === 'fetched'),
        'every page fetched',
      );

      // The servers' counts.
      const byPage = new Map<string, Request[]>();
      for (const request of requests)
        byPage.set(request.page, [...(byPage.get(request.page) ?? []), request]);
      assert.deepEqual([...byPage.keys()].sort(), [...expected].sort(), 'every page requested, nothing else');
      const twice = [...byPage.entries()].filter(([, list]) => list.length > 1);
      process.stderr.write(`crawl-resume: ${twice.length} pages requested twice after the kill\n`);
      assert.ok(
        twice.length <= CONCURRENCY * UNSENT_PER_INVOCATION,
        `${twice.length} pages requested again after the kill: more than its invocations held unsent`,
      );
      for (const [page, list] of twice) {
        assert.equal(
          list[0]!.phase,
          2,
          `${page} was requested again after the ${list[0]!.phase === 1 ? 'Ctrl-C' : 'last'} run fetched it`,
        );
        assert.equal(list.length, 2, `${page} requested ${list.length} times`);
      }
    } finally {
      await state.remove();
      await out.remove();
    }
  });
});
