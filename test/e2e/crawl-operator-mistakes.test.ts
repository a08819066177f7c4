/**
 * Operator mistakes get one clear line (issue 22, point 8): an --out that is, holds or sits in the
 * state directory is refused before anything is cleared; a state directory that cannot be made ends
 * at once with a line naming it; a --delay past its cap names the cap; a crawl whose seeds were all
 * refused (blocked without --allow-private) says why, names --allow-private and exits 1.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CRAWL_LIMITS } from '../../lambdas/core/base/index.ts';
import { readCrawlOutput, runCli, tempDir } from '../fixtures/run-cli.ts';

/** One line on stderr, no stack trace. */
function oneLine(stderr: string): string {
  const lines = stderr
    .trim()
    .split('\n')
    .filter((line) => !/^crawl c-[\w-]+: starting local AWS$/.test(line));
  assert.equal(lines.length, 1, stderr);
  assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
  return lines[0] ?? '';
}

describe('crawler crawl: operator mistakes', () => {
  it('--out equal to, inside or holding the state dir is refused with --force, and the state stays', async () => {
    const root = await tempDir('crawler-overlap-');
    try {
      const state = join(root.path, 'state');
      await mkdir(state, { recursive: true });
      const kept = join(state, 'earlier-crawl');
      await writeFile(kept, 'state of an earlier crawl\n');
      for (const out of [state, join(state, 'out'), root.path]) {
        const run = await runCli(
          ['crawl', 'http://127.0.0.1:9/', '--out', out, '--force', '--state-dir', state],
          {
            stateDir: state,
            timeoutMs: 120_000,
          },
        );
        assert.equal(run.code, 2, `--out ${out}\n${run.stderr}`);
        assert.match(
          oneLine(run.stderr),
          /--out .* the state directory .*; give --out a directory apart from it/,
        );
        assert.ok(existsSync(kept), `--out ${out} --force cleared the state directory`);
      }
    } finally {
      await root.remove();
    }
  });

  it('a state dir that cannot be made (under /proc) ends at once with one line', async () => {
    const run = await runCli(['crawl', 'http://127.0.0.1:9/', '--state-dir', '/proc/nope/state'], {
      stateDir: '/proc/nope/state',
      timeoutMs: 120_000,
    });
    assert.equal(run.timedOut, false, 'it hung');
    assert.equal(run.code, 2, run.stderr);
    assert.match(oneLine(run.stderr), /--state-dir \/proc\/nope\/state cannot be made the state directory/);
  });

  it('--delay past its cap names the cap', async () => {
    const run = await runCli(['crawl', 'http://127.0.0.1:9/', '--delay', '99999999999'], {
      timeoutMs: 120_000,
    });
    assert.equal(run.code, 2, run.stderr);
    assert.match(
      oneLine(run.stderr),
      new RegExp(`--delay expects milliseconds from 0 to ${CRAWL_LIMITS.maxDelayMs} .*got "99999999999"`),
    );
  });

  it('a crawl whose only seed is blocked says why, names --allow-private and exits 1', async () => {
    const out = await tempDir('crawler-blocked-out-');
    try {
      const run = await runCli(['crawl', 'http://127.0.0.1:9/', '--out', out.path, '--progress', 'none'], {
        timeoutMs: 120_000,
      });
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /^crawler crawl: no seed could be crawled: 1 blocked: .*--allow-private$/m);
      const output = await readCrawlOutput(out.path);
      assert.deepEqual(output.summary.byOutcome, { blocked: 1 }, 'the output is still written');
    } finally {
      await out.remove();
    }
  });
});
