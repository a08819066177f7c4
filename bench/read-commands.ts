/**
 * Read commands on a local state dir (issue 25: each ≤ 1 s): a 500-page crawl of a loopback site at
 * delay 0, then `status`, `list`, `results` (streamed to nowhere), `get` and `get --markdown`, each
 * run `runs` times as a user runs them (`node bin/crawler.js`, the shim, on this process's Node),
 * wall time of the whole process. The crawl's own process has ended: each command opens the state.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE, ROOT, run } from './processes.ts';

/** Target (issue 25): each read command within this on this machine's kind. */
export const READ_TARGET_SECONDS = 1;
const PAGES = 500;

export interface ReadCommandRun {
  command: string;
  wallSeconds: number[];
}

/** A site of PAGES pages: `/` links to each (all at depth 1), and each to the next three. */
function serveSite(): Promise<{ origin: string; close: () => void }> {
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    if (path === '/robots.txt') {
      response.writeHead(404).end();
      return;
    }
    const n = path === '/' ? 0 : Number(/^\/p\/(\d+)$/.exec(path)?.[1] ?? Number.NaN);
    if (!Number.isInteger(n) || n >= PAGES) {
      response.writeHead(404).end();
      return;
    }
    const targets = path === '/' ? Array.from({ length: PAGES - 1 }, (_, i) => i + 1) : [n + 1, n + 2, n + 3];
    const links = targets
      .filter((next) => next < PAGES)
      .map((next) => `<a href="/p/${next}">page ${next}</a>`)
      .join(' ');
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(
      `<!doctype html><title>Page ${n}</title><main><h1>Page ${n}</h1><p>Paragraph of page ${n}, long enough to be its main content and not boilerplate around it.</p><nav>${links}</nav></main>`,
    );
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => server.close(),
      }),
    ),
  );
}

export async function runReadCommands(runs: number, log: (line: string) => void): Promise<ReadCommandRun[]> {
  const site = await serveSite();
  const dir = await mkdtemp(join(tmpdir(), 'bench-reads-'));
  const state = join(dir, 'state');
  const shim = join(ROOT, 'bin', 'crawler.js');
  try {
    const crawl = await run(
      [
        NODE,
        shim,
        'crawl',
        `${site.origin}/`,
        '--allow-private',
        '--delay',
        '0',
        '--quiet',
        '--out',
        join(dir, 'out'),
        '--state-dir',
        state,
      ],
      { cpu: 0, timeoutMs: 600_000 },
    );
    if (crawl.code !== 0)
      throw new Error(`crawler crawl failed (${crawl.code}): ${crawl.stderr.slice(-2000)}`);
    const crawlId = /\b(c-\d{8}T\d{6}-[0-9a-f]+)\b/.exec(`${crawl.stdout}\n${crawl.stderr}`)?.[1];
    if (crawlId === undefined)
      throw new Error(`no crawl id in the crawl's output: ${crawl.stdout.slice(0, 500)}`);
    log(`  read commands: crawled ${PAGES} pages (${crawl.wallSeconds.toFixed(1)} s) as ${crawlId}`);
    const page = `${site.origin}/p/250`;
    const commands: Array<[string, string[]]> = [
      ['status', ['status', crawlId]],
      ['list', ['list']],
      ['results', ['results', crawlId]],
      ['get', ['get', page, '--crawl', crawlId]],
      ['get --markdown', ['get', page, '--crawl', crawlId, '--markdown']],
    ];
    const results: ReadCommandRun[] = [];
    for (const [command, args] of commands) {
      const wallSeconds: number[] = [];
      for (let i = 0; i < runs; i++) {
        const done = await run([NODE, shim, ...args, '--state-dir', state], { cpu: 0, timeoutMs: 120_000 });
        if (done.code !== 0)
          throw new Error(`crawler ${command} failed (${done.code}): ${done.stderr.slice(-1000)}`);
        wallSeconds.push(done.wallSeconds);
      }
      results.push({ command, wallSeconds });
      log(`  crawler ${command}: ${wallSeconds.map((s) => s.toFixed(2)).join(', ')} s`);
    }
    return results;
  } finally {
    site.close();
    await rm(dir, { recursive: true, force: true });
  }
}
