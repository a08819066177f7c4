/**
 * Seeds at scale (`--seeds-file`): a seeds file is read as a stream (local file or gzip), its lines
 * numbered, blank lines and comments skipped, each seed normalized, and the crawl's scope collected as
 * its distinct keys. A generated file of 1,000,000 lines goes through the whole stage with the live
 * heap bounded (it does not grow with the lines) and time linear in them.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gzipSync } from 'node:zlib';
import { parseSeedSource, SeedSourceError, seedSourceLines } from '../../lambdas/adapters/seed-source.ts';
import { readSeed, type SeedLine, scanSeeds, seedLines } from '../../lambdas/core/urls/index.ts';
import { assertLinearAsync } from '../fixtures/linear-time.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'seed-lines-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const file = (path: string) => seedSourceLines({ kind: 'file', path });

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('seed lines', () => {
  const text = [
    '# seeds for the test',
    '',
    '  https://a.test/x  ',
    'https://user:secret@b.test/y\r',
    '   # indented comment',
    'not a url',
    'https://a.test/x#again',
  ].join('\n');

  it('numbers the lines as in the file, skips blanks and comments, drops user:pass@', async () => {
    const path = join(dir, 'small.txt');
    await writeFile(path, text);
    assert.deepEqual(await collect(seedLines(file(path))), [
      { line: 3, text: 'https://a.test/x' },
      { line: 4, text: 'https://b.test/y' },
      { line: 6, text: 'not a url' },
      { line: 7, text: 'https://a.test/x#again' },
    ]);
  });

  it('reads a gzip file the same, whatever its name', async () => {
    const path = join(dir, 'small.txt.gz');
    await writeFile(path, gzipSync(text));
    const gz = await collect(seedLines(file(path)));
    await writeFile(join(dir, 'plain.txt'), text);
    assert.deepEqual(gz, await collect(seedLines(file(join(dir, 'plain.txt')))));
  });

  it('a seed that is not a URL is reported with its line number and why; the scope is its seeds hosts', async () => {
    const path = join(dir, 'bad.txt');
    await writeFile(path, text);
    const bad: string[] = [];
    const scan = await scanSeeds(seedLines(file(path)), { scope: 'host', maxUrlLength: 2048 }, (seed) =>
      bad.push(`line ${seed.line}: ${seed.reason}: ${seed.text}`),
    );
    assert.equal(scan.seeds, 4);
    assert.equal(scan.invalid, 1);
    assert.equal(bad.length, 1);
    assert.match(bad[0]!, /^line 6: .+: not a url$/);
    assert.deepEqual([...scan.scopeKeys].sort(), ['a.test', 'b.test']);
    const first = readSeed({ line: 7, text: 'https://a.test/x#again' }, 2048);
    assert.ok(first.ok);
    assert.equal(first.key, (readSeed({ line: 3, text: 'https://a.test/x' }, 2048) as { key: string }).key);
  });

  it('a file that cannot be read is one SeedSourceError naming it', async () => {
    await assert.rejects(collect(file(join(dir, 'missing.txt'))), (error: Error) => {
      assert.ok(error instanceof SeedSourceError);
      assert.equal(error.message, `--seeds-file ${join(dir, 'missing.txt')}: no such file`);
      return true;
    });
    const cut = join(dir, 'cut.txt.gz');
    const gz = gzipSync(Buffer.from('https://a.test/\n'.repeat(10_000)));
    await writeFile(cut, gz.subarray(0, gz.length >> 1));
    await assert.rejects(collect(file(cut)), /--seeds-file .*cut\.txt\.gz: damaged gzip/);
  });

  it('s3://bucket/key names an S3 object; an s3:// without both is refused', () => {
    assert.deepEqual(parseSeedSource('s3://b/k/seeds.txt.gz'), {
      kind: 's3',
      bucket: 'b',
      key: 'k/seeds.txt.gz',
    });
    assert.deepEqual(parseSeedSource('./s3:/x'), { kind: 'file', path: './s3:/x' });
    assert.equal(parseSeedSource('s3://bucket'), undefined);
    assert.equal(parseSeedSource('s3://bucket/'), undefined);
    assert.equal(parseSeedSource('s3:///key'), undefined);
  });
});

describe('a million seeds', () => {
  const HOSTS = 1000;
  const MiB = 1024 * 1024;

  /** `lines` seed lines on HOSTS hosts, a comment and a blank line every 1,000, a bad line every 100,000. */
  async function seedsFile(lines: number): Promise<string> {
    const path = join(dir, `seeds-${lines}.txt`);
    const out = createWriteStream(path);
    let chunk = '';
    for (let i = 0; i < lines; i++) {
      if (i % 1000 === 0) chunk += `# block ${i}\n\n`;
      chunk +=
        i % 100_000 === 99_999 ? `bad seed ${i}\n` : `https://h${i % HOSTS}.example.com/p/${i}?q=${i}\n`;
      if (chunk.length > 64 * 1024) {
        if (!out.write(chunk)) await once(out, 'drain');
        chunk = '';
      }
    }
    out.end(chunk);
    await once(out, 'finish');
    return path;
  }

  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;

  /** Scans the file; the live heap (after a full collection) is sampled every 50,000 lines. */
  async function measure(path: string) {
    gc();
    const base = process.memoryUsage().heapUsed;
    let peakLive = 0;
    let count = 0;
    async function* sampled(lines: AsyncIterable<SeedLine>): AsyncGenerator<SeedLine> {
      for await (const line of lines) {
        if (++count % 50_000 === 0) {
          gc();
          peakLive = Math.max(peakLive, process.memoryUsage().heapUsed - base);
        }
        yield line;
      }
    }
    // CPU time, not wall time: a machine shared with other work preempts a run, and that is not its cost.
    const start = process.cpuUsage();
    let invalid = 0;
    const scan = await scanSeeds(
      sampled(seedLines(file(path))),
      { scope: 'host', maxUrlLength: 2048 },
      () => {
        invalid++;
      },
    );
    const used = process.cpuUsage(start);
    const ms = (used.user + used.system) / 1000;
    return { scan, invalid, ms, peakLive };
  }

  it('streams 1,000,000 lines with a bounded live heap, in CPU time linear in the lines', {
    timeout: 600_000,
  }, async () => {
    const N = 250_000;
    const files = new Map([
      [N, await seedsFile(N)],
      [4 * N, await seedsFile(4 * N)],
    ]);
    // Every run, small and large, is checked and recorded: its live heap at its highest and its CPU time.
    const runs = new Map<number, { peakLive: number[]; ms: number[] }>([
      [N, { peakLive: [], ms: [] }],
      [4 * N, { peakLive: [], ms: [] }],
    ]);
    const list = (values: number[], unit: number) =>
      values.map((v) => (v / unit).toFixed(unit === 1 ? 0 : 1)).join(', ');
    const report = () => {
      const [small, large] = [runs.get(N)!, runs.get(4 * N)!];
      return (
        `live heap ${list(small.peakLive, MiB)} MiB at 250k lines, ${list(large.peakLive, MiB)} MiB at 1M; ` +
        `CPU ${list(small.ms, 1)} ms, ${list(large.ms, 1)} ms`
      );
    };
    // Linear: ~4 for 4x the lines, 16 for a quadratic step; the fastest of a few alternating runs.
    await assertLinearAsync({
      what: 'seed lines (CPU time)',
      n: N,
      rounds: 2,
      time: async (lines) => {
        const run = await measure(files.get(lines)!);
        assert.equal(run.scan.seeds, lines);
        assert.equal(run.scan.invalid, Math.floor(lines / 100_000));
        assert.equal(run.invalid, run.scan.invalid, 'each bad line reported');
        assert.equal(run.scan.scopeKeys.size, HOSTS, 'what is kept is the scope: one key per host');
        runs.get(lines)!.peakLive.push(run.peakLive);
        runs.get(lines)!.ms.push(run.ms);
        return run.ms;
      },
    });
    // Held in memory at once: a chunk of the file and the scope, not the lines read so far (the
    // million lines alone are ~50 MB of strings). The peak of the runs at each size (a run may see
    // less than the one before it left behind, down to 0).
    const [peakSmall, peakLarge] = [
      Math.max(...runs.get(N)!.peakLive),
      Math.max(...runs.get(4 * N)!.peakLive),
    ];
    assert.ok(peakLarge < 16 * MiB, report());
    assert.ok(peakLarge < peakSmall + 4 * MiB, report());
    console.log(`seed stage: ${report()}`);
  });
});
