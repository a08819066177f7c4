// `crawler get` and `crawler results` on synthetic crawls in the emulators (test/fixtures/synthetic-crawl.ts:
// WARC files and index parts written by the crawler's own writers, URL items with their `part`):
// a lookup reads one index part, not the index; damaged parts and lines are skipped and named; a
// stored decompression bomb stops at the crawl's caps; a bad WARC pointer is one line naming the
// object and offset. The commands find the stack by `--endpoint`, as cli-reads.test.ts does.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import type { CliIo } from '../../cli/cli-io.ts';
import { getCommand } from '../../cli/get-command.ts';
import { resultsCommand } from '../../cli/results-command.ts';
import { indexLine } from '../../lambdas/core/archive/index.ts';
import { diffSnapshots, type OperationCount } from '../../lambdas/shared/aws-call-counter.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { processMeters } from '../../local/process-meters.ts';
import { LOCAL_INSTANCE_ID } from '../../local/state-dir.ts';
import { Capture } from '../fixtures/capture.ts';
import {
  frontierItemKey,
  plainPages,
  rewritePart,
  type SyntheticPage,
  type SyntheticTarget,
  writeSyntheticCrawl,
} from '../fixtures/synthetic-crawl.ts';

let aws: LocalAws;
let target: SyntheticTarget;

async function cli(
  command: (args: string[], io?: Partial<CliIo>) => Promise<number>,
  ...args: string[]
): Promise<{ code: number; stdout: Capture; stderr: Capture; ops: Record<string, OperationCount> }> {
  const stdout = new Capture();
  const stderr = new Capture();
  const from = processMeters.counter.snapshot();
  const code = await command([...args, '--endpoint', aws.endpoints.s3], { stdout, stderr });
  return { code, stdout, stderr, ops: diffSnapshots(from, processMeters.counter.snapshot()).operations };
}

const calls = (ops: Record<string, OperationCount>, op: string) => ops[op]?.calls ?? 0;
const newCrawlId = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

before(async () => {
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    instanceId: LOCAL_INSTANCE_ID,
    port: 0,
    log: () => {},
  });
  target = {
    s3: aws.clients.s3,
    dynamodb: aws.clients.dynamodb,
    bucket: aws.outputs.PageBucketName!,
    table: aws.outputs.FrontierTableName!,
  };
});

after(async () => {
  await aws?.stop();
});

describe('get reads a bounded amount', () => {
  const pages = plainPages('http://bounded.test', 500);
  let crawlId: string;
  let parts: string[];

  before(async () => {
    crawlId = newCrawlId('bounded');
    ({ parts } = await writeSyntheticCrawl(target, crawlId, pages, { partLines: 10 }));
    assert.equal(parts.length, 50);
  });

  it('one GetItem and at most 2 GetObject (the part, the record) on a crawl of 50 parts, no listing', async () => {
    for (const index of [0, 251, 499]) {
      const page = pages[index]!;
      const got = await cli(getCommand, page.url, '--crawl', crawlId);
      assert.equal(got.code, 0, got.stderr.text);
      assert.deepEqual(got.stdout.bytes, Buffer.from(page.body));
      assert.equal(got.stderr.text, '');
      assert.ok(
        calls(got.ops, 'S3:GetObject') <= 2,
        `URL #${index}: ${calls(got.ops, 'S3:GetObject')} GetObject`,
      );
      assert.equal(calls(got.ops, 'S3:ListObjectsV2'), 0, `URL #${index}: listed the index`);
      assert.equal(calls(got.ops, 'DynamoDB:GetItem'), 1, `URL #${index}: one frontier read`);
    }
  });

  it('falls back to scanning the index, saying why, when the frontier cannot say where the line is', async () => {
    const url = (i: number) => pages[i]!.url;
    const item = (i: number) => frontierItemKey(crawlId, pages[i]!.url);
    // An item without `part` (a crawl from before it, or not finalized)...
    await target.dynamodb.send(
      new UpdateItemCommand({
        TableName: target.table,
        Key: item(10),
        UpdateExpression: 'REMOVE #p',
        ExpressionAttributeNames: { '#p': 'part' },
      }),
    );
    // ...no item at all (expired)...
    await target.dynamodb.send(new DeleteItemCommand({ TableName: target.table, Key: item(20) }));
    // ...and a part that is not there.
    await target.dynamodb.send(
      new UpdateItemCommand({
        TableName: target.table,
        Key: item(30),
        UpdateExpression: 'SET #p = :p',
        ExpressionAttributeNames: { '#p': 'part' },
        ExpressionAttributeValues: { ':p': { S: `results/${crawlId}/gone.jsonl.gz` } },
      }),
    );
    const why: Record<number, RegExp> = {
      10: /its frontier item names no index part \(state done\)/,
      20: /the frontier has no item for this URL/,
      30: new RegExp(`its index part results/${crawlId}/gone\\.jsonl\\.gz does not exist`),
    };
    for (const [i, reason] of Object.entries(why)) {
      const got = await cli(getCommand, url(Number(i)), '--crawl', crawlId);
      assert.equal(got.code, 0, got.stderr.text);
      assert.deepEqual(got.stdout.bytes, Buffer.from(pages[Number(i)]!.body));
      const lines = got.stderr.text.split('\n').filter(Boolean);
      assert.equal(lines.length, 1, got.stderr.text);
      assert.match(lines[0]!, new RegExp(`^note: ${escapeRe(url(Number(i)))}: `));
      assert.match(lines[0]!, reason);
      assert.match(lines[0]!, new RegExp(`; scanning the whole index of crawl ${crawlId}$`));
      assert.equal(calls(got.ops, 'S3:ListObjectsV2'), 1);
    }
  });
});

describe('damaged index parts', () => {
  const pages = plainPages('http://damaged.test', 30);
  let crawlId: string;
  let parts: string[];
  let warnings: string[];

  before(async () => {
    crawlId = newCrawlId('damaged');
    const crawl = await writeSyntheticCrawl(target, crawlId, pages, { partLines: 10 });
    parts = crawl.parts;
    // Part 2 is not gzip at all; part 3 keeps its lines but two are broken.
    await aws.clients.s3.send(
      new PutObjectCommand({
        Bucket: target.bucket,
        Key: parts[1],
        Body: 'definitely not gzip',
      }),
    );
    const third = crawl.results.slice(20, 30).map(indexLine);
    await rewritePart(target, parts[2]!, [
      ...third.slice(0, 5),
      '{"cut": ',
      { v: 1, crawlId, url: 'http://damaged.test/no-key' },
      ...third.slice(5),
    ]);
    warnings = [
      `warning: skipped ${parts[1]}: not gzip (incorrect header check)`,
      `warning: skipped ${parts[2]} line 6: not JSON (`,
      `warning: skipped ${parts[2]} line 7: not an index line (`,
    ];
  });

  function assertWarnings(stderr: string): void {
    const lines = stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, warnings.length, stderr);
    for (const [i, start] of warnings.entries())
      assert.ok(lines[i]!.startsWith(start), `${lines[i]} vs ${start}`);
  }

  it('results streams every good line, warns once per damage naming the object, and exits 1 at the end', async () => {
    const jsonl = await cli(resultsCommand, crawlId);
    assert.equal(jsonl.code, 1);
    const urls = jsonl.stdout.text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line).url as string);
    assert.deepEqual(
      urls,
      [...pages.slice(0, 10), ...pages.slice(20)].map((page) => page.url),
    );
    assertWarnings(jsonl.stderr.text);

    const csv = await cli(resultsCommand, crawlId, '--format', 'csv', '--outcome', 'fetched');
    assert.equal(csv.code, 1);
    assert.equal(csv.stdout.text.split('\r\n').filter(Boolean).length, 1 + 20);
    assertWarnings(csv.stderr.text);
  });

  it('get finds a URL in a good part without a warning, and names the damage when its part is damaged', async () => {
    const good = await cli(getCommand, pages[25]!.url, '--crawl', crawlId);
    assert.equal(good.code, 0, good.stderr.text);
    assert.deepEqual(good.stdout.bytes, Buffer.from(pages[25]!.body));
    assert.equal(good.stderr.text, '');

    const lost = await cli(getCommand, pages[15]!.url, '--crawl', crawlId);
    assert.equal(lost.code, 1);
    assert.equal(lost.stdout.bytes.length, 0);
    const lines = lost.stderr.text.split('\n').filter(Boolean);
    assert.match(
      lines[0]!,
      new RegExp(
        `^note: .*: its index part ${escapeRe(parts[1]!)} is damaged: not gzip \\(incorrect header check\\); scanning`,
      ),
    );
    assertWarnings(lines.slice(1, -1).join('\n'));
    assert.match(
      lines.at(-1)!,
      new RegExp(
        `^${escapeRe(pages[15]!.url)} is not in crawl ${crawlId} .*\\(3 damaged index parts or lines were skipped: it may be in one\\)$`,
      ),
    );
  });
});

describe('get --body on a stored decompression bomb', () => {
  // 64 gzip members of 16 MiB of zeros: ~1 MiB stored (under the 5 MiB body cap), 1 GiB decoded.
  const member = gzipSync(Buffer.alloc(16 * 1024 * 1024));
  const bomb = Buffer.concat(Array.from({ length: 64 }, () => member));
  const pages: SyntheticPage[] = [
    { url: 'http://bomb.test/bomb', body: bomb, headers: [['content-encoding', 'gzip']] },
    {
      url: 'http://bomb.test/text',
      body: gzipSync(Array.from({ length: 4000 }, (_, i) => `<p>line ${i}</p>\n`).join('')),
      headers: [['content-encoding', 'gzip']],
    },
  ];
  let crawlId: string;
  let tightId: string;

  before(async () => {
    crawlId = newCrawlId('bomb');
    await writeSyntheticCrawl(target, crawlId, pages);
    tightId = newCrawlId('tight');
    await writeSyntheticCrawl(target, tightId, pages, { config: { limits: { maxDecodedBytes: 32 * 1024 } } });
  });

  it('refuses with one line, exit 1, and a bounded buffer (RSS grows < 200 MB)', async () => {
    global.gc?.();
    const rss = process.memoryUsage().rss;
    const got = await cli(getCommand, pages[0]!.url, '--crawl', crawlId, '--body');
    const grown = process.memoryUsage().rss - rss;
    assert.equal(got.code, 1);
    assert.equal(got.stdout.bytes.length, 0);
    assert.match(
      got.stderr.text,
      /^the body of http:\/\/bomb\.test\/bomb is larger than the crawl's decode cap when decoded: gzip body decodes to more than 20971520 bytes; --raw writes it as stored\n$/,
    );
    assert.ok(grown < 200 * 1024 * 1024, `RSS grew by ${(grown / 2 ** 20).toFixed(0)} MiB`);
    const raw = await cli(getCommand, pages[0]!.url, '--crawl', crawlId, '--body', '--raw');
    assert.equal(raw.code, 0);
    assert.ok(raw.stdout.bytes.equals(bomb));
  });

  it("uses the crawl's own stored caps", async () => {
    const loose = await cli(getCommand, pages[1]!.url, '--crawl', crawlId);
    assert.equal(loose.code, 0, loose.stderr.text);
    assert.match(loose.stdout.text, /^<p>line 0<\/p>\n/);
    const tight = await cli(getCommand, pages[1]!.url, '--crawl', tightId);
    assert.equal(tight.code, 1);
    assert.match(
      tight.stderr.text,
      /larger than the crawl's decode cap when decoded: gzip body decodes to more than 32768 bytes; --raw/,
    );
  });
});

describe('a bad WARC pointer', () => {
  const pages = plainPages('http://pointer.test', 4);
  let crawlId: string;

  before(async () => {
    crawlId = newCrawlId('pointer');
    const crawl = await writeSyntheticCrawl(target, crawlId, pages);
    const lines = crawl.results.map(indexLine);
    const first = lines[0]!;
    // 0: an object that does not exist; 1: the file's first records, not a response; 2: inside a
    // member; 3: past the end of the object.
    await rewritePart(target, crawl.parts[0]!, [
      { ...first, filename: `warc/${crawlId}/gone.warc.gz` },
      { ...lines[1]!, offset: 0, length: first.offset! },
      { ...lines[2]!, offset: lines[2]!.offset! + 7 },
      { ...lines[3]!, offset: 50_000_000 },
    ]);
  });

  it('is one line naming the object and offset, exit 1, no stack trace', async () => {
    const expected = [
      /: no such object$/,
      /: a WARC warcinfo record, not a response$/,
      /: not a WARC record \(/,
      /: (got \d+ bytes, the index says \d+|cannot read it \(.*\))$/,
    ];
    for (const [i, what] of expected.entries()) {
      const got = await cli(getCommand, pages[i]!.url, '--crawl', crawlId);
      assert.equal(got.code, 1, got.stderr.text);
      assert.equal(got.stdout.bytes.length, 0);
      const lines = got.stderr.text.split('\n').filter(Boolean);
      assert.equal(lines.length, 1, got.stderr.text);
      assert.match(
        lines[0]!,
        new RegExp(
          `^stored record s3://${escapeRe(target.bucket)}/warc/${crawlId}/\\S+\\.warc\\.gz at offset \\d+ \\(length \\d+\\): `,
        ),
      );
      assert.match(lines[0]!, what);
    }
  });
});

function escapeRe(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
