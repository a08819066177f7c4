// `crawler status`, `results` and `get` after a real pipeline run on the emulators: the stack from the
// synthesized template, a crawl config, seed tasks to the TaskQueue, every handler running, a
// node:http site on 127.0.0.1. The commands find the stack by `--endpoint` (the real stack locator).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import type { CliIo } from '../../cli/cli-io.ts';
import { getCommand } from '../../cli/get-command.ts';
import { resultsCommand } from '../../cli/results-command.ts';
import type { CrawlStatus } from '../../cli/status-command.ts';
import { statusCommand } from '../../cli/status-command.ts';
import { UsageError } from '../../cli/usage-error.ts';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { SqsTaskSender } from '../../lambdas/adapters/queues.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { ResultSchema } from '../../lambdas/core/results/index.ts';
import { STACK_NAME, summaryKey } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { LOCAL_INSTANCE_ID } from '../../local/state-dir.ts';
import { Capture } from '../fixtures/capture.ts';
import { startSite, type TestSite } from '../fixtures/site.ts';

const HOME = '<html><body><a href="/a">a</a> <a href="/gz">gz</a> <a href="/old">old</a></body></html>';
const PAGE_A = '<html><body>page a, with "quotes", commas and ünïcødé</body></html>';
const GZ_TEXT = `<html><body>${'compressed '.repeat(200)}</body></html>`;
const GZ_BYTES = gzipSync(GZ_TEXT);
const PAGE_NEW = '<html><body>new home of old</body></html>';

/** Exactly what the site served per path (the body bytes on the wire). */
const SERVED: Record<string, Uint8Array> = {
  '/': Buffer.from(HOME),
  '/a': Buffer.from(PAGE_A),
  '/gz': GZ_BYTES,
  '/new': Buffer.from(PAGE_NEW),
};

function serve(path: string, headers: Record<string, string> = {}) {
  return (_request: IncomingMessage, response: ServerResponse) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
    response.end(SERVED[path]);
  };
}

let site: TestSite;
let aws: LocalAws;
let endpoint: string;
let crawlId: string;
const logs: string[] = [];

async function cli(
  command: (args: string[], io?: Partial<CliIo>) => Promise<number>,
  ...args: string[]
): Promise<{ code: number; stdout: Capture; stderr: Capture }> {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await command([...args, '--endpoint', endpoint], { stdout, stderr });
  return { code, stdout, stderr };
}

async function status(): Promise<CrawlStatus> {
  const { code, stdout } = await cli(statusCommand, crawlId, '--json');
  assert.equal(code, 0);
  return JSON.parse(stdout.text) as CrawlStatus;
}

async function jsonl(): Promise<Array<Record<string, unknown>>> {
  const { code, stdout } = await cli(resultsCommand, crawlId);
  assert.equal(code, 0);
  return stdout.text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

before(async () => {
  site = await startSite({
    '/': serve('/'),
    '/a': serve('/a'),
    '/gz': serve('/gz', { 'content-encoding': 'gzip' }),
    '/old': (_request, response) => {
      response.writeHead(301, { location: '/new', 'content-type': 'text/plain' });
      response.end('moved');
    },
    '/new': serve('/new'),
  });
  // The names the `--endpoint` locator computes: the real stack name and the local instance id,
  // all services on one port.
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    instanceId: LOCAL_INSTANCE_ID,
    port: 0,
    handlerEnvOverrides: { LOG_LEVEL: 'info' },
    log: () => {},
  });
  endpoint = aws.endpoints.s3;
  crawlId = `reads-${randomUUID().slice(0, 8)}`;
  const config = parseCrawlConfig({
    crawlId,
    seeds: [`${site.origin}/`],
    allowPrivate: true,
    delayMs: 0,
    createdAt: new Date().toISOString(),
  });
  await new CrawlConfigStore(aws.clients.dynamodb, aws.outputs.FrontierTableName!).put(config);
  await new SqsTaskSender(aws.clients.sqs, aws.outputs.TaskQueueUrl!).sendTasks([
    { v: 1, crawlId, url: `${site.origin}/`, depth: 0 },
  ]);
  // The handlers log JSON lines to stderr; keep them to count completions.
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (text.startsWith('{"level"')) {
      logs.push(...text.split('\n').filter(Boolean));
      return true;
    }
    return write(chunk, ...rest);
  }) as typeof process.stderr.write;
  try {
    await aws.start();
    await aws.waitForIdle({ timeoutMs: 120_000 });
  } finally {
    process.stderr.write = write;
  }
});

after(async () => {
  await aws?.stop();
  await site?.close();
});

const PATHS = ['/', '/a', '/gz', '/old', '/new'];

describe('crawler status / results / get after a pipeline run', () => {
  it('the index has exactly one line per URL, and the counters are exact', async () => {
    const lines = await jsonl();
    const urls = lines.map((line) => line.url);
    assert.deepEqual([...urls].sort(), PATHS.map((p) => `${site.origin}${p}`).sort());
    const byUrl = new Map(lines.map((line) => [line.url, line]));
    assert.equal(byUrl.get(`${site.origin}/old`)?.outcome, 'redirected');
    for (const p of ['/', '/a', '/gz', '/new']) {
      const line = byUrl.get(`${site.origin}${p}`)!;
      assert.equal(line.outcome, 'fetched', p);
      assert.equal(line.status, 200);
      assert.equal(line.mime, 'text/html');
      assert.match(String(line.digest), /^sha1:[A-Z2-7]{32}$/);
      assert.equal(line.bytes, SERVED[p]!.byteLength, `${p}: stored bytes are the served bytes`);
    }
    for (const p of PATHS) assert.equal(site.hits.get(p), 1, `${p} fetched once`);

    const s = await status();
    assert.equal(s.state, 'complete');
    assert.equal(s.queued, PATHS.length);
    assert.equal(s.done, PATHS.length);
    assert.equal(s.pending, 0);
    assert.equal(s.byOutcome.fetched, 4);
    assert.equal(s.byOutcome.redirected, 1);
    assert.equal(s.requests, PATHS.length);
    const servedBytes = Object.values(SERVED).reduce((sum, body) => sum + body.byteLength, 0);
    assert.equal(s.bytes, servedBytes + Buffer.byteLength('moved'));
    assert.ok(s.startedAt && s.endedAt && s.startedAt <= s.endedAt);
    assert.equal(typeof s.pagesPerSecond, 'number');
  });

  it('completion fired once and crawls/<id>/summary.json holds the final counters', async () => {
    const completions = logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.message === 'crawl complete, summary written' && entry.crawlId === crawlId);
    assert.deepEqual(
      completions.map((entry) => entry.completedNow),
      [true],
    );
    const blobs = new S3Blobs(aws.clients.s3, aws.outputs.PageBucketName!);
    const summary = JSON.parse(new TextDecoder().decode(await blobs.get(summaryKey(crawlId))));
    const s = await status();
    assert.equal(summary.state, 'complete');
    assert.equal(summary.done, s.done);
    assert.equal(summary.queued, s.queued);
    assert.deepEqual(summary.byOutcome, s.byOutcome);
    assert.equal(summary.bytes, s.bytes);
    assert.equal(summary.requests, s.requests);
    assert.equal(summary.startedAt, s.startedAt);
    assert.equal(summary.endedAt, s.endedAt);
  });

  it('a duplicate result message changes neither the index nor the counters', async () => {
    const before = await status();
    const line = (await jsonl()).find((l) => l.url === `${site.origin}/a`)!;
    const body = JSON.stringify(ResultSchema.parse(line));
    const out = await aws.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: aws.outputs.ResultsQueueUrl!,
        Entries: [
          { Id: '0', MessageBody: body },
          { Id: '1', MessageBody: body },
        ],
      }),
    );
    assert.deepEqual(out.Failed ?? [], []);
    await aws.waitForIdle({ timeoutMs: 60_000 });
    const lines = await jsonl();
    assert.equal(lines.length, PATHS.length);
    assert.equal(lines.filter((l) => l.url === `${site.origin}/a`).length, 1);
    assert.deepEqual(await status(), before);
  });

  it('status prints text by default and fails for an unknown crawl', async () => {
    const { code, stdout } = await cli(statusCommand, crawlId);
    assert.equal(code, 0);
    assert.match(stdout.text, new RegExp(`^crawl ${crawlId}: complete\\n`));
    assert.match(stdout.text, /urls: +5 done of 5 queued \(0 pending\)/);
    assert.match(stdout.text, /outcomes: +fetched 4, redirected 1/);
    const unknown = await cli(statusCommand, 'no-such-crawl');
    assert.equal(unknown.code, 1);
    assert.match(
      unknown.stderr.text,
      /^no crawl no-such-crawl in local stack ServerlessCrawler at http:\/\/127\.0\.0\.1:\d+; check the id, or point at where it ran \(--endpoint, --stack, --state-dir\)\n$/,
    );
  });

  it('results filters by outcome and writes CSV', async () => {
    const redirected = await cli(resultsCommand, crawlId, '--outcome', 'redirected');
    assert.equal(redirected.code, 0);
    const only = redirected.stdout.text.trim().split('\n');
    assert.equal(only.length, 1);
    assert.equal(JSON.parse(only[0]!).url, `${site.origin}/old`);
    assert.equal(JSON.parse(only[0]!).location, `${site.origin}/new`);

    const csv = await cli(resultsCommand, crawlId, '--format', 'csv');
    assert.equal(csv.code, 0);
    const records = csv.stdout.text.split('\r\n');
    assert.equal(records.at(-1), '');
    assert.match(records[0]!, /^url,status,outcome,/);
    assert.equal(records.length, 1 + PATHS.length + 1);

    const none = await cli(resultsCommand, 'no-such-crawl');
    assert.equal(none.code, 1);
    assert.match(none.stderr.text, /^no crawl no-such-crawl in /);
    await assert.rejects(cli(resultsCommand, crawlId, '--format', 'xml'), UsageError);
    await assert.rejects(cli(resultsCommand, crawlId, '--outcome', 'great'), UsageError);
  });

  it('get --body returns exactly the bytes the site served', async () => {
    for (const p of ['/', '/a', '/new']) {
      const { code, stdout } = await cli(getCommand, `${site.origin}${p}`, '--crawl', crawlId);
      assert.equal(code, 0, p);
      assert.deepEqual(stdout.bytes, Buffer.from(SERVED[p]!), p);
    }
    // A URL given in another spelling is the same URL (normalized).
    const spelled = await cli(getCommand, `${site.origin.toUpperCase()}/./a#frag`, '--crawl', crawlId);
    assert.deepEqual(spelled.stdout.bytes, Buffer.from(PAGE_A));
  });

  it('get --body decodes a gzip content-encoding; --raw keeps the served bytes', async () => {
    const decoded = await cli(getCommand, `${site.origin}/gz`, '--crawl', crawlId, '--body');
    assert.equal(decoded.code, 0);
    assert.equal(decoded.stdout.text, GZ_TEXT);
    assert.match(decoded.stderr.text, /decoded from Content-Encoding gzip/);
    const raw = await cli(getCommand, `${site.origin}/gz`, '--crawl', crawlId, '--body', '--raw');
    assert.equal(raw.code, 0);
    assert.deepEqual(raw.stdout.bytes, GZ_BYTES);
  });

  it('get --headers and --warc print the stored response', async () => {
    const headers = await cli(getCommand, `${site.origin}/old`, '--crawl', crawlId, '--headers');
    assert.equal(headers.code, 0);
    assert.match(headers.stdout.text, /^HTTP\/1\.1 301 Moved Permanently\r\n/);
    assert.match(headers.stdout.text, /\r\nlocation: \/new\r\n/i);
    assert.ok(headers.stdout.text.endsWith('\r\n\r\n'));
    const warc = await cli(getCommand, `${site.origin}/a`, '--crawl', crawlId, '--warc');
    assert.equal(warc.code, 0);
    assert.match(warc.stdout.text, /^WARC\/1\.1\r\n/);
    assert.match(warc.stdout.text, /\r\nWARC-Type: response\r\n/);
    assert.match(warc.stdout.text, new RegExp(`\\r\\nWARC-Target-URI: ${site.origin}/a\\r\\n`));
    assert.ok(warc.stdout.bytes.includes(Buffer.from(PAGE_A)));
  });

  it('get fails clearly for a URL not in the crawl, an unknown crawl, and bad usage', async () => {
    // Neither has a frontier item: the lookup says so, scans the index, and finds nothing.
    const missing = await cli(getCommand, `${site.origin}/never`, '--crawl', crawlId);
    assert.equal(missing.code, 1);
    assert.equal(missing.stdout.bytes.length, 0);
    assert.match(
      missing.stderr.text,
      /^note: .*: the frontier has no item for this URL .*; scanning the whole index/,
    );
    assert.match(missing.stderr.text, new RegExp(`\n${site.origin}/never is not in crawl ${crawlId} .*\n$`));
    const unknown = await cli(getCommand, `${site.origin}/`, '--crawl', 'no-such-crawl');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr.text, /\nno crawl no-such-crawl in [^\n]*\n$/);
    await assert.rejects(cli(getCommand, `${site.origin}/`), /needs --crawl/);
    await assert.rejects(
      cli(getCommand, `${site.origin}/`, '--crawl', crawlId, '--warc', '--headers'),
      UsageError,
    );
    await assert.rejects(cli(getCommand, 'ftp://x/', '--crawl', crawlId), /not a crawlable URL/);
  });
});
