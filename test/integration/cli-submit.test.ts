// `crawler submit` and `crawler cancel` against a running local AWS found by `--endpoint` (the real
// stack locator), with every handler running and a node:http site on 127.0.0.1; plus the cancel
// adapter (lambdas/adapters/frontier-cancel.ts) on its own.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { cancelCommand } from '../../cli/cancel-command.ts';
import type { CliIo } from '../../cli/cli-io.ts';
import { extractOptions } from '../../cli/own-options.ts';
import { resultsCommand } from '../../cli/results-command.ts';
import type { CrawlStatus } from '../../cli/status-command.ts';
import { statusCommand } from '../../cli/status-command.ts';
import { submitCommand } from '../../cli/submit-command.ts';
import { UsageError } from '../../cli/usage-error.ts';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { CrawlCancellation, cancelCrawl } from '../../lambdas/adapters/frontier-cancel.ts';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import type { LocateStackOptions } from '../../local/stack-locator.ts';
import { LOCAL_INSTANCE_ID } from '../../local/state-dir.ts';
import { Capture } from '../fixtures/capture.ts';
import { tempDir } from '../fixtures/local-state.ts';
import { html, type Route, startSite, type TestSite } from '../fixtures/site.ts';

let site: TestSite;
let aws: LocalAws;
let endpoint: string;
let table: string;

async function cli(
  command: (args: string[], io?: Partial<CliIo>) => Promise<number>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await command([...args, '--endpoint', endpoint], { stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

async function status(crawlId: string): Promise<CrawlStatus> {
  const { code, stdout, stderr } = await cli(statusCommand, crawlId, '--json');
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout) as CrawlStatus;
}

async function results(crawlId: string): Promise<Array<Record<string, unknown>>> {
  const { code, stdout } = await cli(resultsCommand, crawlId);
  assert.equal(code, 0);
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** 30 pages linked from / (for a crawl that is still running when it is cancelled). */
const MANY = 30;
const routes: Record<string, Route> = {
  '/': html(`<a href="/a">a</a> <a href="/b">b</a>`),
  '/a': html('page a'),
  '/b': html('page b'),
  '/c': html('page c'),
  '/many/': html(Array.from({ length: MANY }, (_, i) => `<a href="/many/${i}">${i}</a>`).join(' ')),
};
for (let i = 0; i < MANY; i++) routes[`/many/${i}`] = html(`many ${i}`);

before(async () => {
  site = await startSite(routes);
  // The names the `--endpoint` locator computes: the real stack name and the local instance id.
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    instanceId: LOCAL_INSTANCE_ID,
    port: 0,
    handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    log: () => {},
  });
  endpoint = aws.endpoints.s3;
  table = aws.outputs.FrontierTableName!;
  await aws.start();
});

after(async () => {
  await aws?.stop();
  await site?.close();
});

describe('crawler submit --endpoint', () => {
  it('prints only the crawl id, stores the config and runs the crawl to the end', async () => {
    const { code, stdout, stderr } = await cli(
      submitCommand,
      `${site.origin}/`,
      '--allow-private',
      '--delay',
      '0',
    );
    assert.equal(code, 0, stderr);
    const crawlId = stdout.trim();
    assert.match(crawlId, /^c-\d{8}T\d{6}-[0-9a-f]{6}$/);
    assert.equal(stdout, `${crawlId}\n`, 'stdout is the id alone, for ID=$(crawler submit ...)');
    assert.match(stderr, new RegExp(`crawl ${crawlId} submitted to local stack ${STACK_NAME}`));
    assert.match(stderr, /1 tasks sent/);

    await aws.waitForIdle({ timeoutMs: 60_000 });
    const s = await status(crawlId);
    assert.equal(s.state, 'complete');
    assert.equal(s.byOutcome.fetched, 3);
    const urls = (await results(crawlId)).map((line) => line.url).sort();
    assert.deepEqual(urls, ['/', '/a', '/b'].map((p) => `${site.origin}${p}`).sort());
  });

  it('--file adds seeds (comments, blanks and duplicates skipped), --crawl-id names the crawl, --json reports', async (t) => {
    const dir = await tempDir(t, 'cli-submit-');
    const file = join(dir, 'seeds.txt');
    await writeFile(
      file,
      [
        `# seeds`,
        '',
        `  ${site.origin}/c  `,
        `${site.origin}/a`,
        `${site.origin}/a#again`,
        'not a url',
        '',
      ].join('\n'),
    );
    const crawlId = `file-${randomUUID().slice(0, 8)}`;
    const { code, stdout, stderr } = await cli(
      submitCommand,
      '--file',
      file,
      '--crawl-id',
      crawlId,
      '--allow-private',
      '--max-depth',
      '0',
      '--json',
    );
    assert.equal(code, 0, stderr);
    const report = JSON.parse(stdout) as Record<string, unknown>;
    assert.equal(report.crawlId, crawlId);
    // /c and /a admitted, "not a url" sent to end as invalid; /a#again normalizes to /a.
    assert.equal(report.tasks, 3);
    assert.equal(report.invalid, 1);
    assert.equal(report.duplicates, 1);
    assert.match(String(report.stack), /local stack/);

    await aws.waitForIdle({ timeoutMs: 60_000 });
    const lines = await results(crawlId);
    const byOutcome = lines.map((line) => `${line.outcome} ${line.url}`).sort();
    assert.deepEqual(
      byOutcome,
      [`fetched ${site.origin}/a`, `fetched ${site.origin}/c`, 'invalid not a url'].sort(),
    );

    const again = await cli(submitCommand, `${site.origin}/`, '--crawl-id', crawlId, '--allow-private');
    assert.equal(again.code, 1);
    assert.match(again.stderr, new RegExp(`crawl ${crawlId} already exists`));
  });

  it('rejects what a submit cannot mean before touching the stack', async () => {
    await assert.rejects(cli(submitCommand), (error: Error) => {
      assert.ok(error instanceof UsageError);
      assert.match(
        error.message,
        /submit needs at least one URL \(as arguments, with --file or with --seeds-file\)/,
      );
      return true;
    });
    await assert.rejects(cli(submitCommand, `${site.origin}/`, '--concurrency', '4'), /MaximumConcurrency/);
    await assert.rejects(cli(submitCommand, `${site.origin}/`, '--out', 'x'), /no --out/);
    await assert.rejects(cli(submitCommand, `${site.origin}/`, '--crawl-id', 'a b'), /--crawl-id expects/);
    await assert.rejects(cli(submitCommand, `${site.origin}/`, '--max-pages', '0'), /--max-pages expects/);
    await assert.rejects(cli(submitCommand, '--file', '/nonexistent/seeds.txt'), /--file \/nonexistent/);
  });

  it('without --endpoint or --state-dir it targets the deployed stack', async () => {
    const asked: LocateStackOptions[] = [];
    const code = await submitCommand([`${site.origin}/`], {
      stdout: new Capture(),
      stderr: new Capture(),
      locate: async (options) => {
        asked.push(options);
        throw new Error('no AWS here');
      },
      describeStackOutputs: async () => ({}),
    });
    assert.equal(code, 1);
    assert.deepEqual(
      asked.map(({ stackName, endpoint }) => ({ stackName, endpoint })),
      [{ stackName: STACK_NAME, endpoint: undefined }],
    );
  });

  it('a missing endpoint stack is one line on stderr and exit 1', async () => {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await submitCommand([`${site.origin}/`, '--state-dir', '/nonexistent/state'], {
      stdout,
      stderr,
    });
    assert.equal(code, 1);
    assert.match(stderr.text, /cannot open the local state in \/nonexistent\/state/);
    assert.equal(stdout.text, '');
  });

  it('seeds go in chunks; progress is reported per chunk; every seed is admitted once', async () => {
    const crawlId = `chunks-${randomUUID().slice(0, 8)}`;
    const seeds = ['/a', '/b', '/c', '/a', '/'].map((p) => `${site.origin}${p}`);
    const config = parseCrawlConfig({ crawlId, seeds, allowPrivate: true, maxDepth: 0, delayMs: 0 });
    const progress: number[] = [];
    const summary = await submitCrawl(aws, config, [], {
      chunkSize: 2,
      onProgress: (p) => progress.push(p.done),
    });
    assert.deepEqual(summary, { seeds: 5, tasks: 4, skipped: 0, invalid: 0, duplicates: 1 });
    // Every seed is handled in its chunk, the repeat too (the frontier drops it, in the second chunk).
    assert.deepEqual(progress, [2, 4, 5]);
    await aws.waitForIdle({ timeoutMs: 60_000 });
    const s = await status(crawlId);
    assert.equal(s.state, 'complete');
    assert.equal(s.queued, 4);
  });

  it('a config too large for one DynamoDB item is refused with a clear message (exit 2)', async () => {
    const seeds = Array.from({ length: 6000 }, (_, i) => `${site.origin}/seed/${'x'.repeat(50)}/${i}`);
    const { code, stdout, stderr } = await cli(submitCommand, ...seeds, '--allow-private');
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(
      stderr,
      /crawler submit: the crawl config is \d+ bytes with its 6000 seeds; .* give the seeds in a file with --seeds-file FILE/,
    );
    const config = parseCrawlConfig({ crawlId: `big-${randomUUID().slice(0, 8)}`, seeds });
    await assert.rejects(submitCrawl(aws, config), /one DynamoDB item holds at most/);
  });
});

describe('crawler cancel --endpoint', () => {
  it('a running crawl is cancelled once; its queued tasks end as `cancelled`; again is a no-op', async () => {
    const { code, stdout, stderr } = await cli(
      submitCommand,
      `${site.origin}/many/`,
      '--allow-private',
      '--delay',
      '400',
    );
    assert.equal(code, 0, stderr);
    const crawlId = stdout.trim();
    // Let the first page be fetched and its links admitted, then cancel.
    const deadline = Date.now() + 30_000;
    while ((await status(crawlId)).queued < MANY + 1 && Date.now() < deadline) await sleep(100);
    const cancel = await cli(cancelCommand, crawlId);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.match(
      cancel.stdout,
      new RegExp(`crawl ${crawlId} cancelled: \\d+ pending URLs end as \`cancelled\``),
    );
    assert.equal((await status(crawlId)).state, 'cancelled');

    const again = await cli(cancelCommand, crawlId, '--json');
    assert.equal(again.code, 0);
    assert.equal((JSON.parse(again.stdout) as { status: string }).status, 'already-cancelled');

    await aws.waitForIdle({ timeoutMs: 90_000 });
    const s = await status(crawlId);
    assert.equal(s.state, 'cancelled', 'a cancelled crawl never turns complete');
    assert.equal(s.pending, 0);
    const lines = await results(crawlId);
    assert.equal(lines.length, MANY + 1, 'every URL still has exactly one result');
    const cancelled = lines.filter((line) => line.outcome === 'cancelled');
    const fetched = lines.filter((line) => line.outcome === 'fetched');
    assert.ok(cancelled.length > 0, 'some tasks ended as cancelled');
    assert.equal(cancelled.length + fetched.length, MANY + 1);
    for (const line of cancelled) assert.equal(line.code, 'cancelled');
    // Cancelled tasks were not fetched: the site saw only the fetched pages.
    const hits = Object.keys(routes)
      .filter((p) => p.startsWith('/many/'))
      .reduce((sum, p) => sum + (site.hits.get(p) ?? 0), 0);
    assert.equal(hits, fetched.length);
  });

  it('a complete crawl has nothing to cancel; an unknown one is exit 1', async () => {
    const submitted = await cli(submitCommand, `${site.origin}/c`, '--allow-private', '--max-depth', '0');
    const crawlId = submitted.stdout.trim();
    await aws.waitForIdle({ timeoutMs: 60_000 });
    const done = await cli(cancelCommand, crawlId);
    assert.equal(done.code, 0);
    assert.match(done.stdout, /is already complete \(at .+\): nothing to cancel/);
    assert.equal((await status(crawlId)).state, 'complete');

    const unknown = await cli(cancelCommand, 'no-such-crawl');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no crawl no-such-crawl in local stack/);
    await assert.rejects(cli(cancelCommand), /cancel needs exactly one crawl id/);
  });
});

describe('frontier-cancel adapter', () => {
  it('a crawl with a stored config but no counters yet is born cancelled', async () => {
    const crawlId = `cfg-${randomUUID().slice(0, 8)}`;
    await new CrawlConfigStore(aws.clients.dynamodb, table).put(parseCrawlConfig({ crawlId, seeds: [] }));
    const outcome = await cancelCrawl(aws.clients.dynamodb, table, crawlId, new Date('2026-01-02T03:04:05Z'));
    assert.deepEqual(outcome, { status: 'cancelled', endedAt: '2026-01-02T03:04:05.000Z' });
    const counters = await createFrontierStore(aws.clients.dynamodb, table).readCounters(crawlId);
    assert.equal(counters?.state, 'cancelled');
    // Later counter writes keep the state.
    await createFrontierStore(aws.clients.dynamodb, table).addQueued(crawlId, 3);
    assert.equal(
      (await createFrontierStore(aws.clients.dynamodb, table).readCounters(crawlId))?.state,
      'cancelled',
    );
    assert.equal((await cancelCrawl(aws.clients.dynamodb, table, crawlId)).status, 'already-cancelled');
    assert.deepEqual(await cancelCrawl(aws.clients.dynamodb, table, `nope-${crawlId}`), {
      status: 'unknown',
    });
  });

  it('stateOf reads once per crawl per TTL, shares concurrent reads, and keeps a cancel for good', async () => {
    const crawlId = `cache-${randomUUID().slice(0, 8)}`;
    await createFrontierStore(aws.clients.dynamodb, table).addQueued(crawlId, 1);
    let now = 1_000_000;
    const check = new CrawlCancellation(aws.clients.dynamodb, table, { ttlMs: 5_000, clock: () => now });
    const answers = await Promise.all([check.stateOf(crawlId), check.stateOf(crawlId)]);
    assert.deepEqual(answers, ['running', 'running']);
    assert.equal(check.reads, 1, 'concurrent misses share one read');
    await cancelCrawl(aws.clients.dynamodb, table, crawlId);
    now += 4_999;
    assert.equal(await check.stateOf(crawlId), 'running', 'cached for the TTL');
    assert.equal(check.reads, 1);
    now += 2;
    assert.equal(await check.stateOf(crawlId), 'cancelled', 'seen once the TTL ran out');
    assert.equal(check.reads, 2);
    now += 3_600_000;
    assert.equal(await check.stateOf(crawlId), 'cancelled');
    assert.equal(check.reads, 2, 'cancelled is final: no more reads');
  });
  it('stateOf fails open: a failed read counts as running for one TTL and is reported', async () => {
    // Nothing listens on port 1: every call fails at once.
    const broken = new DynamoDBClient({
      endpoint: 'http://127.0.0.1:1',
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    });
    try {
      let now = 0;
      const errors: string[] = [];
      const check = new CrawlCancellation(broken, table, {
        ttlMs: 1_000,
        clock: () => now,
        onError: (crawlId) => errors.push(crawlId),
      });
      assert.equal(await check.stateOf('any'), 'running');
      assert.equal(await check.stateOf('any'), 'running');
      assert.deepEqual([check.reads, check.readErrors, errors], [1, 1, ['any']]);
      now += 1_000;
      assert.equal(await check.stateOf('any'), 'running');
      assert.equal(check.reads, 2, 'read again after the TTL');
    } finally {
      broken.destroy();
    }
  });
});

describe('extractOptions', () => {
  it('takes its own options out and leaves the rest in order', () => {
    const { own, rest } = extractOptions(
      ['a', '--file', 'f1', '--max-pages', '3', '--file=f2', '--json', '--stack=S', 'b'],
      { file: 'strings', stack: 'string', json: 'boolean' },
    );
    assert.deepEqual(own, { file: ['f1', 'f2'], stack: 'S', json: true });
    assert.deepEqual(rest, ['a', '--max-pages', '3', 'b']);
    assert.throws(() => extractOptions(['--stack'], { stack: 'string' }), /--stack expects a value/);
    assert.throws(() => extractOptions(['--json=1'], { json: 'boolean' }), /--json takes no value/);
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
