// `crawler submit --seeds-file` on the emulators: more seeds than a config item can hold (4,200 long
// URLs on 300 loopback hosts, ~480 KB, in a file; a gzip S3 object too), every seed admitted exactly once, the
// config item small, bad lines named, and the stored scope judging the links of the crawl's pages.
// No handler runs: the seeds are checked in the frontier, never fetched.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import type { CliIo } from '../../cli/cli-io.ts';
import { submitCommand } from '../../cli/submit-command.ts';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { configKey } from '../../lambdas/adapters/frontier-schema.ts';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { LruSet } from '../../lambdas/core/base/index.ts';
import { frontierHost, seedCount } from '../../lambdas/core/crawl/index.ts';
import { admitLinks } from '../../lambdas/core/frontier/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { MAX_CONFIG_BYTES } from '../../lambdas/submission/submit-crawl.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { LOCAL_INSTANCE_ID } from '../../local/state-dir.ts';
import { Capture } from '../fixtures/capture.ts';
import { allUrls } from '../fixtures/host-urls.ts';
import { tempDir } from '../fixtures/local-state.ts';

let aws: LocalAws;
let table: string;

before(async () => {
  // The names the `--endpoint` locator computes; the pollers are not started: nothing is fetched.
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    instanceId: LOCAL_INSTANCE_ID,
    port: 0,
    handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    log: () => {},
  });
  table = aws.outputs.FrontierTableName!;
});

after(async () => {
  await aws?.stop();
});

async function submit(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new Capture();
  const stderr = new Capture();
  const io: Partial<CliIo> = { stdout, stderr };
  const code = await submitCommand([...args, '--endpoint', aws.endpoints.s3], io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

const HOSTS = 300;
/** Loopback hosts by name and port: never dialled here. */
const hostOf = (h: number) => `127.0.${1 + (h >> 8)}.${h & 255}:${8000 + (h % 7)}`;
/** Long paths: fewer seeds than the 11,000 short ones a config item held, as many bytes, a faster test. */
const seedUrl = (h: number, p: number) => `http://${hostOf(h)}/s/${p}/${'long-path-segment-'.repeat(5)}.html`;

/** `perHost` seeds on each host, host by host, with comments, blanks, repeats and bad lines mixed in. */
function seedsText(perHost: number): { text: string; seeds: string[]; badLines: number[] } {
  const lines = ['# seeds at scale', ''];
  const seeds: string[] = [];
  const badLines: number[] = [];
  for (let h = 0; h < HOSTS; h++) {
    for (let p = 0; p < perHost; p++) {
      lines.push(seedUrl(h, p));
      seeds.push(seedUrl(h, p));
    }
    // A repeat of an earlier host's seed (another chunk admitted it), and one spelled otherwise.
    if (h > 0 && h % 3 === 0)
      lines.push(seedUrl(h - 3, 0), `${seedUrl(h - 1, 1).replace('http://', 'HTTP://')}#frag`);
    if (h % 100 === 50) {
      lines.push(`ftp://${hostOf(h)}/file`);
      badLines.push(lines.length);
    }
    lines.push('');
  }
  return { text: `${lines.join('\r\n')}\r\n`, seeds, badLines };
}

/** Every URL admitted under the crawl's hosts, with how often. */
async function admittedUrls(crawlId: string, hosts: Iterable<string>): Promise<Map<string, number>> {
  const frontier = createFrontierStore(aws.clients.dynamodb, table);
  const seen = new Map<string, number>();
  for (const host of hosts)
    for (const url of await allUrls(frontier, crawlId, host)) seen.set(url.url, (seen.get(url.url) ?? 0) + 1);
  return seen;
}

describe('crawler submit --seeds-file', () => {
  it('admits 4,200 seeds (~480 KB) on 300 hosts exactly once; the config stays small; the stored scope judges links', async (t) => {
    const { text, seeds, badLines } = seedsText(14);
    assert.ok(
      Buffer.byteLength(JSON.stringify(seeds)) > MAX_CONFIG_BYTES,
      'more seeds than a config item could hold',
    );
    const dir = await tempDir(t, 'seeds-file-');
    const file = join(dir, 'seeds.txt');
    await writeFile(file, text);
    const crawlId = `seeds-${randomUUID().slice(0, 8)}`;
    const { code, stdout, stderr } = await submit(
      '--seeds-file',
      file,
      '--crawl-id',
      crawlId,
      '--allow-private',
      '--json',
    );
    assert.equal(code, 0, stderr);
    const report = JSON.parse(stdout) as Record<string, number>;
    const repeats = 2 * Math.floor((HOSTS - 1) / 3);
    assert.deepEqual(
      { seeds: report.seeds, tasks: report.tasks, invalid: report.invalid, duplicates: report.duplicates },
      { seeds: seeds.length + repeats + 3, tasks: seeds.length + 3, invalid: 3, duplicates: repeats },
    );
    // One line per bad line, naming the file, the line and what is wrong.
    const named = stderr.split('\n').filter((line) => line.includes(' line '));
    assert.deepEqual(
      named.map((line) => line.replace(/: scheme.*$/, '')),
      badLines.map((n) => `--seeds-file ${file}: line ${n}`),
    );
    for (const line of named) assert.match(line, /scheme "ftp:" of .* is not crawlable/);

    // Every seed admitted once, fetchable, at depth 0; the bad ones under host `-`, to end invalid.
    const hosts = new Set(seeds.map(frontierHost));
    assert.equal(hosts.size, HOSTS);
    const admitted = await admittedUrls(crawlId, hosts);
    assert.equal(admitted.size, seeds.length);
    for (const seed of seeds) assert.equal(admitted.get(seed), 1, seed);
    const counters = await createFrontierStore(aws.clients.dynamodb, table).readCounters(crawlId);
    assert.equal(counters?.queued, seeds.length, 'each seed counted once');

    // The config item does not grow with the seeds.
    const item = await aws.clients.dynamodb.send(
      new GetItemCommand({ TableName: table, Key: configKey(crawlId), ConsistentRead: true }),
    );
    const configBytes = Buffer.byteLength(item.Item!.config!.S!);
    assert.ok(configBytes < 2_000, `config item of ${configBytes} bytes`);

    // A container reading the config gets its scope: a page's links on a seed host are admitted,
    // the others skipped as out of scope.
    const config = await new CrawlConfigStore(aws.clients.dynamodb, table).get(crawlId);
    assert.equal(seedCount(config), seeds.length + repeats + 3);
    const frontier = createFrontierStore(aws.clients.dynamodb, table);
    const linked = await admitLinks(
      [
        {
          config,
          parentKey: 'page-key',
          parentUrl: seedUrl(7, 0),
          depth: 0,
          links: [
            { url: `http://${hostOf(299)}/new/page`, nofollow: false },
            { url: `http://${hostOf(0)}/other`, nofollow: false },
            { url: 'http://127.9.9.9:8000/elsewhere', nofollow: false },
          ],
        },
      ],
      { frontier, hosts: frontier, seen: new LruSet(10), now: new Date() },
    );
    assert.deepEqual(
      linked.results.map((r) => [r.url, r.outcome, r.code]),
      [['http://127.9.9.9:8000/elsewhere', 'skipped', 'scope']],
    );
    assert.equal(linked.admitted, 3);
  });

  it('reads a gzip S3 object (s3://bucket/key) the same way', async () => {
    const { text, seeds } = seedsText(2);
    const bucket = aws.outputs.PageBucketName!;
    const key = `inputs/${randomUUID()}/seeds.txt.gz`;
    await aws.clients.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: gzipSync(text) }));
    const crawlId = `seeds-s3-${randomUUID().slice(0, 8)}`;
    const { code, stdout, stderr } = await submit(
      '--seeds-file',
      `s3://${bucket}/${key}`,
      '--crawl-id',
      crawlId,
      '--allow-private',
      '--json',
      '--quiet',
    );
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '', '--quiet: nothing on stderr');
    assert.equal((JSON.parse(stdout) as { tasks: number }).tasks, seeds.length + 3);
    const admitted = await admittedUrls(crawlId, new Set(seeds.map(frontierHost)));
    assert.deepEqual([...admitted.keys()].sort(), [...seeds].sort());

    await aws.clients.s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: 'inputs/empty.txt', Body: '# nothing yet\n\n' }),
    );
    const empty = await submit('--seeds-file', `s3://${bucket}/inputs/empty.txt`, '--allow-private');
    assert.equal(empty.code, 2);
    assert.equal(
      empty.stderr,
      `crawler submit: --seeds-file s3://${bucket}/inputs/empty.txt: no seed URL in it\n`,
    );

    const missing = await submit('--seeds-file', `s3://${bucket}/inputs/none.txt`, '--allow-private');
    assert.equal(missing.code, 2);
    assert.equal(
      missing.stderr,
      `crawler submit: --seeds-file s3://${bucket}/inputs/none.txt: no such S3 object\n`,
    );
  });
});
