/**
 * Ctrl-C stops the crawl at once, and what it prints is true (issue 22, points 1 and 7), on 5 hosts
 * (127.0.0.2 ... 127.0.0.6) whose servers log when each request arrives:
 *
 * - a SIGINT to the `crawler` shim (bin/crawler.js, the process `npx crawler` runs) winds the crawl
 *   down: no request reaches a server after the crawler says it is stopping, beyond the one each
 *   host may have had on its way; the progress says it is winding down; the summary printed, the
 *   summary.json, results.jsonl and pages.jsonl agree, and every page requested has its result;
 * - the second signal ends the shim and its child at once, even when the child cannot run a signal
 *   handler (stopped with SIGSTOP, as a handler busy on the CPU holds its event loop);
 * - the shim killed (SIGKILL, as a closed terminal or a dead npx may leave it) stops the child as on
 *   SIGTERM: it writes what exists and exits, instead of crawling on as an orphan.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CliProcess, startCli, until } from '../fixtures/cli-process.ts';
import { readCrawlOutput, tempDir } from '../fixtures/run-cli.ts';

const HOSTS = 5;
const PAGES_PER_HOST = 400;
/** Each answer takes this long: requests are in flight when the signal comes. */
const LATENCY_MS = 50;

interface Arrival {
  page: string;
  at: number;
}

/** The pid of the shim's one child (the Node 24 process that crawls), read once the crawl runs. */
async function childOf(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8');
  const child = Number(text.trim().split(/\s+/)[0]);
  assert.ok(child > 0, `the shim (pid ${pid}) runs the crawl in no child process`);
  return child;
}

function descendants(pid: number): number[] {
  let text = '';
  try {
    text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
  } catch {}
  const children = text.trim().split(/\s+/).filter(Boolean).map(Number);
  return children.flatMap((child) => [...descendants(child), child]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie (dead, not yet reaped) is gone for this purpose.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('crawler crawl: Ctrl-C', () => {
  const servers: Server[] = [];
  const origins: string[] = [];
  const arrivals: Arrival[] = [];

  before(async () => {
    for (let i = 0; i < HOSTS; i++) {
      const ip = `127.0.0.${i + 2}`;
      const server = createServer((request, response) => {
        const path = request.url ?? '/';
        if (path === '/robots.txt') {
          response.writeHead(404).end();
          return;
        }
        arrivals.push({ page: `${origins[i]}${path}`, at: Date.now() });
        const match = /^\/p\/(\d+)$/.exec(path);
        const n = path === '/' ? 0 : match ? Number(match[1]) : -1;
        setTimeout(() => {
          if (n < 0 || n >= PAGES_PER_HOST) {
            response.writeHead(404).end();
            return;
          }
          // A chain with a fan: each page links the next two, so every host always has work queued.
          const links = [n + 1, n + 2]
            .filter((k) => k < PAGES_PER_HOST)
            .map((k) => `<a href="/p/${k}">${k}</a>`)
            .join('\n');
          response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          response.end(`<!doctype html><title>${ip} ${n}</title><p>page ${n} of ${ip}</p>\n${links}\n`);
        }, LATENCY_MS);
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

  async function startCrawl(
    name: string,
    via: 'shim' | 'sh' = 'shim',
  ): Promise<{ cli: CliProcess; out: string; done: () => Promise<void> }> {
    const state = await tempDir(`crawler-${name}-state-`);
    const out = await tempDir(`crawler-${name}-out-`);
    const seeds = origins.map((origin) => `${origin}/`);
    const cli = startCli(
      ['crawl', ...seeds, '--allow-private', '--delay', '0', '--state-dir', state.path, '--out', out.path],
      state.path,
      { via },
    );
    return {
      cli,
      out: out.path,
      done: async () => {
        // A failed check leaves nothing running: every descendant, then the process started.
        for (const pid of descendants(cli.child.pid ?? 0)) process.kill(pid, 'SIGKILL');
        if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGKILL');
        await cli.exited;
        await state.remove();
        await out.remove();
      },
    };
  }

  it('the first SIGINT to the shim: no new request, winding down shown, summary and files agree', async () => {
    const { cli, out, done } = await startCrawl('interrupt');
    try {
      const before = arrivals.length;
      await until(() => arrivals.length >= before + 60, '60 pages were requested', cli);
      cli.child.kill('SIGINT');
      await cli.waitForStderr(/: SIGINT: stopping/);
      const stoppedAt = Date.now();
      const end = await cli.exited;
      assert.equal(end.code, 130, cli.stderr());
      const mine = arrivals.slice(before);
      const late = mine.filter((arrival) => arrival.at > stoppedAt);
      assert.ok(
        late.length <= HOSTS,
        `${late.length} requests reached the servers after the crawler said it was stopping (at most one per host was on its way): ${late
          .slice(0, 10)
          .map((a) => a.page)
          .join(' ')}`,
      );
      assert.match(cli.stderr(), /progress: winding down: no new requests/);

      // What it printed and what it wrote agree, and every page requested has its result.
      const output = await readCrawlOutput(out);
      assert.equal(output.summary.state, 'interrupted');
      assert.equal(output.results.length, output.summary.urls, 'summary.json urls = results.jsonl lines');
      const printed = /urls:\s+(\d+) \(([^)]*)\)/.exec(cli.stdout());
      assert.ok(printed, cli.stdout());
      assert.equal(Number(printed[1]), output.results.length, 'the printed urls = results.jsonl lines');
      const fetched = output.results.filter((line) => line.outcome === 'fetched');
      assert.match(printed[2] ?? '', new RegExp(`fetched ${fetched.length}\\b`));
      const pages = (await readFile(join(out, 'pages.jsonl'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { url: string }).url);
      const printedPages = /pages\.jsonl (\d+) pages/.exec(cli.stdout());
      assert.equal(Number(printedPages?.[1]), pages.length, 'the printed pages = pages.jsonl lines');
      const fetchedUrls = new Set(fetched.map((line) => line.url));
      assert.deepEqual(
        pages.filter((url) => !fetchedUrls.has(url)),
        [],
        'every page in pages.jsonl is a fetched line of results.jsonl',
      );
      assert.equal(pages.length, fetched.length, 'one content record per fetched page');
      const requested = new Set(mine.map((arrival) => arrival.page));
      assert.deepEqual(
        [...requested].filter((page) => !fetchedUrls.has(page)),
        [],
        'every page requested has its result: nothing fetched was lost',
      );
    } finally {
      await done();
    }
  });

  it('a SIGINT to the `sh -c` npx runs the shim in (npx passes it on there, the shell keeps it) stops the crawl', async () => {
    const { cli, out, done } = await startCrawl('npx', 'sh');
    try {
      const before = arrivals.length;
      await until(() => arrivals.length >= before + 20, '20 pages were requested', cli);
      cli.child.kill('SIGINT');
      await cli.waitForStderr(/: SIGINT: stopping/);
      const end = await cli.exited;
      assert.ok(end.code === 130 || end.signal === 'SIGINT', `${JSON.stringify(end)}\n${cli.stderr()}`);
      const output = await readCrawlOutput(out);
      assert.equal(output.summary.state, 'interrupted');
      assert.ok(arrivals.length - before < HOSTS * PAGES_PER_HOST, 'the crawl stopped before it was done');
    } finally {
      await done();
    }
  });

  it('the second signal ends the shim and its child at once, even a child that cannot handle signals', async () => {
    const { cli, done } = await startCrawl('second');
    try {
      const before = arrivals.length;
      await until(() => arrivals.length >= before + 10, '10 pages were requested', cli);
      const child = await childOf(cli.child.pid ?? 0);
      cli.child.kill('SIGINT');
      await cli.waitForStderr(/: SIGINT: stopping/);
      // Stopped, the child runs no signal handler: as a handler busy on the CPU holds its event loop.
      process.kill(child, 'SIGSTOP');
      cli.child.kill('SIGINT');
      const end = await cli.exited;
      assert.equal(end.code, 130, cli.stderr());
      await until(() => !alive(child), 'the child is gone');
    } finally {
      await done();
    }
  });

  it('the shim killed: its child stops as on SIGTERM, writing what exists, and does not crawl on', async () => {
    const { cli, out, done } = await startCrawl('orphan');
    try {
      const before = arrivals.length;
      await until(() => arrivals.length >= before + 10, '10 pages were requested', cli);
      const child = await childOf(cli.child.pid ?? 0);
      cli.child.kill('SIGKILL');
      await cli.exited;
      await until(() => !alive(child), 'the orphaned child ended');
      const output = await readCrawlOutput(out);
      assert.equal(output.summary.state, 'interrupted');
      assert.ok(
        arrivals.length - before < HOSTS * PAGES_PER_HOST,
        'the child stopped before the crawl was done',
      );
    } finally {
      await done();
    }
  });
});
