/**
 * Read commands on a local state dir (issue 25: each ≤ 1 s): a crawl at delay 0 of the bench site
 * (bench/site.ts) with 500 content pages, then `status`, `list`, `results` (streamed to nowhere),
 * `get` and `get --markdown`, each run `runs` times as a user runs them (`node bin/crawler.js`, the
 * shim, on this process's Node), wall time of the whole process. The crawl's own process has ended:
 * each command opens the state.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE, ROOT, run } from './processes.ts';
import { serveBenchSite } from './site.ts';

/** Target (issue 25): each read command within this on this machine's kind. */
export const READ_TARGET_SECONDS = 1;
const PAGES = 500;

export interface ReadCommandRun {
  command: string;
  wallSeconds: number[];
}

export async function runReadCommands(runs: number, log: (line: string) => void): Promise<ReadCommandRun[]> {
  const site = await serveBenchSite({ pages: PAGES });
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
    const { crawlId } = JSON.parse(await readFile(join(dir, 'out', 'summary.json'), 'utf8')) as {
      crawlId: string;
    };
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
    await site.close();
    await rm(dir, { recursive: true, force: true });
  }
}
