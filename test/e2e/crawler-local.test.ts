/**
 * `crawler local` as a user runs it: a child process serving the local AWS on 127.0.0.1, driven by
 * the real AWS CLI (send a plain URL to the task queue, list and copy the results and the WARC from
 * S3) and by `crawler submit/status/results/get/cancel --endpoint`, then stopped with SIGTERM.
 *
 * The AWS CLI is `aws` on PATH (or $CRAWLER_TEST_AWS_CLI). Without it the AWS CLI tests skip, except
 * in CI (CI=true), where they fail: .ci/run installs it (Debian's `awscli`).
 */
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { CRAWLER_BIN, NODE_BIN, REPO_ROOT, runCli, tempDir } from '../fixtures/run-cli.ts';
import { html, type Route, startSite, type TestSite } from '../fixtures/site.ts';

const exec = promisify(execFile);
const AGENT = 'crawler-local-e2e/1.0';
const MANY = 25;

interface Ready {
  endpoint: string;
  stateDir: string;
  outputs: Record<string, string>;
  pid: number;
}

function findAwsCli(): string | undefined {
  const explicit = process.env.CRAWLER_TEST_AWS_CLI;
  if (explicit) return explicit;
  const found = spawnSync('sh', ['-c', 'command -v aws'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path !== '' ? path : undefined;
}

const AWS_CLI = findAwsCli();
const NO_CLI = AWS_CLI
  ? false
  : process.env.CI === 'true'
    ? false // fail below, loudly: CI must have it
    : 'the AWS CLI (aws) is not installed; `apt-get install -y awscli` to run these tests';

const routes: Record<string, Route> = {
  '/': html('<html><body>local home <a href="/a">a</a></body></html>'),
  '/a': html('<html><body>page a</body></html>'),
  '/plain': html('<html><body>sent with the AWS CLI <a href="/a">a</a></body></html>'),
  '/many/': html(Array.from({ length: MANY }, (_, i) => `<a href="/many/${i}">${i}</a>`).join(' ')),
};
for (let i = 0; i < MANY; i++) routes[`/many/${i}`] = html(`many ${i}`);
// The cancel test's pages answer only once the cancel is done: the crawl cannot end before it,
// however slow the machine.
let releaseHeld: () => void = () => {};
const held = new Promise<void>((resolve) => {
  releaseHeld = resolve;
});
routes['/held/'] = html(Array.from({ length: MANY }, (_, i) => `<a href="/held/${i}">${i}</a>`).join(' '));
for (let i = 0; i < MANY; i++) {
  routes[`/held/${i}`] = (request, response) => {
    void held.then(() => html(`held ${i}`)(request, response));
  };
}

let site: TestSite;
let work: Awaited<ReturnType<typeof tempDir>>;
let child: ChildProcessWithoutNullStreams;
let ready: Ready;
let stdout = '';
let stderr = '';
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

before(async () => {
  site = await startSite(routes);
  work = await tempDir('crawler-local-e2e-');
  child = spawn(
    NODE_BIN,
    [
      CRAWLER_BIN,
      'local',
      '--port',
      '0',
      '--json',
      '--state-dir',
      join(work.path, 'state'),
      '--allow-private',
      '--delay',
      '50',
      '--user-agent',
      AGENT,
    ],
    { cwd: REPO_ROOT, env: { ...process.env }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  // 'close', not 'exit': its last stderr lines may still be in the pipe when it exits.
  exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    if (process.env.CRAWLER_E2E_VERBOSE === '1') process.stderr.write(chunk);
  });
  ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`crawler local not ready in 60 s\n${stderr}`)), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const first = stdout.split('\n')[0];
      if (stdout.includes('\n') && first?.startsWith('{"endpoint"')) {
        clearTimeout(timer);
        resolve(JSON.parse(first) as Ready);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`crawler local exited with ${code} before it was ready\n${stderr}`));
    });
  });
});

after(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await exited;
  }
  await site?.close();
  await work?.remove();
});

/** The AWS CLI with dummy credentials, no profile, and URL parameters taken literally (CLI v1). */
async function aws(...args: string[]): Promise<string> {
  const config = join(work.path, 'aws-config');
  if (!existsSync(config)) {
    // AWS CLI v1 fetches parameters that look like URLs (--message-body https://...) unless told not to.
    await writeFile(config, '[default]\nregion = us-east-1\ncli_follow_urlparam = false\n');
  }
  const env: Record<string, string | undefined> = {
    ...process.env,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_DEFAULT_REGION: 'us-east-1',
    AWS_REGION: 'us-east-1',
    AWS_CONFIG_FILE: config,
    AWS_SHARED_CREDENTIALS_FILE: join(work.path, 'no-credentials'),
    AWS_PAGER: '',
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  delete env.AWS_PROFILE;
  delete env.AWS_SESSION_TOKEN;
  try {
    const { stdout } = await exec(AWS_CLI as string, ['--endpoint-url', ready.endpoint, ...args], {
      env,
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`aws ${args.join(' ')} failed: ${e.stderr || e.message}`);
  }
}

async function crawler(...args: string[]) {
  const run = await runCli([...args, '--endpoint', ready.endpoint], { timeoutMs: 60_000 });
  assert.ok(!run.timedOut, `crawler ${args.join(' ')} timed out`);
  return run;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}\n--- crawler local stderr ---\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('crawler local', () => {
  it('prints its endpoint and the stack outputs, every queue URL naming that endpoint', () => {
    assert.match(ready.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
    for (const key of [
      'TaskQueueUrl',
      'TaskDlqUrl',
      'ResultsQueueUrl',
      'ResultsDlqUrl',
      'PageBucketName',
      'FrontierTableName',
    ]) {
      assert.ok(ready.outputs[key], `output ${key}`);
    }
    for (const key of ['TaskQueueUrl', 'TaskDlqUrl', 'ResultsQueueUrl', 'ResultsDlqUrl']) {
      assert.ok(ready.outputs[key]?.startsWith(`${ready.endpoint}/`), `${key} ${ready.outputs[key]}`);
    }
  });

  it('the AWS CLI sends a plain URL; the crawl runs with the defaults given to `crawler local`; results and pages are read from S3', {
    skip: NO_CLI,
  }, async () => {
    assert.ok(AWS_CLI, 'CI=true and no AWS CLI: .ci/run must install it (apt-get install -y awscli)');
    const queues = JSON.parse(await aws('sqs', 'list-queues')) as { QueueUrls: string[] };
    assert.ok(
      queues.QueueUrls.includes(ready.outputs.TaskQueueUrl!),
      'list-queues names the task queue as printed',
    );

    const sent = JSON.parse(
      await aws(
        'sqs',
        'send-message',
        '--queue-url',
        ready.outputs.TaskQueueUrl!,
        '--message-body',
        `${site.origin}/plain`,
      ),
    ) as { MessageId: string };
    assert.ok(sent.MessageId);

    const bucket = ready.outputs.PageBucketName!;
    const target = `${site.origin}/plain`;
    const line = await until('the index line of the plain URL', async () => {
      const listing = await aws('s3', 'ls', `s3://${bucket}/results/default/`).catch(() => '');
      if (!listing.includes('.jsonl.gz')) return undefined;
      const dir = join(work.path, `results-${Date.now()}`);
      await aws('s3', 'cp', `s3://${bucket}/results/default/`, dir, '--recursive');
      const lines = (await readdir(dir))
        .filter((name) => name.endsWith('.jsonl.gz'))
        .map(async (name) => gunzipSync(await readFile(join(dir, name))).toString('utf8'));
      const all = (await Promise.all(lines)).join('\n').split('\n').filter(Boolean);
      return all.map((text) => JSON.parse(text) as Record<string, unknown>).find((l) => l.url === target);
    });
    // --allow-private reached the default crawl: 127.0.0.1 was fetched, not blocked.
    assert.equal(line.outcome, 'fetched', JSON.stringify(line));
    assert.equal(line.crawlId, 'default');
    assert.equal(line.status, 200);
    const request = site.requests.find((r) => r.path === '/plain');
    assert.equal(request?.headers['user-agent'], AGENT, '--user-agent reached the default crawl');

    // The page itself, from the WARC file the index line names.
    const warc = join(work.path, 'page.warc.gz');
    await aws('s3', 'cp', `s3://${bucket}/${String(line.filename)}`, warc);
    const text = gunzipSync(await readFile(warc)).toString('utf8');
    assert.match(text, /WARC-Type: response/);
    assert.match(text, /sent with the AWS CLI/);

    const dlq = JSON.parse(
      await aws(
        'sqs',
        'get-queue-attributes',
        '--queue-url',
        ready.outputs.TaskDlqUrl!,
        '--attribute-names',
        'ApproximateNumberOfMessages',
      ),
    ) as { Attributes: Record<string, string> };
    assert.equal(dlq.Attributes.ApproximateNumberOfMessages, '0');
  });

  it('crawler redrive and the AWS CLI against it: what is not moved stays visible in the DLQ at once', {
    skip: NO_CLI,
  }, async () => {
    assert.ok(AWS_CLI, 'CI=true and no AWS CLI: .ci/run must install it (apt-get install -y awscli)');
    const dlq = ready.outputs.TaskDlqUrl!;
    /** The DLQ's messages as a reader sees them now: received without hiding them. */
    const inDlq = async () => {
      const out = await aws(
        'sqs',
        'receive-message',
        '--queue-url',
        dlq,
        '--max-number-of-messages',
        '10',
        '--visibility-timeout',
        '0',
        '--wait-time-seconds',
        '0',
        '--message-attribute-names',
        'All',
      );
      return out.trim() === ''
        ? []
        : ((JSON.parse(out) as { Messages?: Array<{ Body: string }> }).Messages ?? []);
    };
    const bodies = async () => (await inDlq()).map((message) => message.Body);
    // Malformed: the fetch function dead-letters it at once, with its reason.
    const malformed = `not a task ${Date.now()}`;
    await aws('sqs', 'send-message', '--queue-url', ready.outputs.TaskQueueUrl!, '--message-body', malformed);
    await until('the malformed task in the DLQ', async () =>
      (await bodies()).includes(malformed) ? true : undefined,
    );
    // Retryable: a task that ran out of receives (no reason attribute), put in the DLQ as SQS would.
    const retryable = JSON.stringify({ v: 1, crawlId: 'redrive-e2e', url: `${site.origin}/a`, depth: 0 });
    await aws('sqs', 'send-message', '--queue-url', dlq, '--message-body', retryable);

    // Another crawl's redrive moves neither: both are visible again the moment it ends.
    const none = await crawler('redrive', 'no-such-crawl', '--queue', 'tasks');
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /tasks: moved 0 message\(s\) back/);
    const kept = await bodies();
    assert.ok(kept.includes(malformed) && kept.includes(retryable), JSON.stringify(kept));

    // All crawls': the retryable one goes back, the malformed one stays, visible.
    const all = await crawler('redrive', '--queue', 'tasks');
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /tasks: moved 1 message\(s\) back, .*left 1 dead-lettered as malformed/);
    assert.ok((await bodies()).includes(malformed), 'the malformed task is still visible in the DLQ');

    // The AWS CLI: receive it (hidden for 10 minutes), then make it visible again.
    const received = JSON.parse(
      await aws(
        'sqs',
        'receive-message',
        '--queue-url',
        dlq,
        '--max-number-of-messages',
        '10',
        '--visibility-timeout',
        '600',
      ),
    ) as { Messages: Array<{ Body: string; ReceiptHandle: string }> };
    const hidden = received.Messages.find((message) => message.Body === malformed);
    assert.ok(hidden, 'received the malformed task');
    assert.ok(!(await bodies()).includes(malformed), 'hidden while received');
    await aws(
      'sqs',
      'change-message-visibility',
      '--queue-url',
      dlq,
      '--receipt-handle',
      hidden.ReceiptHandle,
      '--visibility-timeout',
      '0',
    );
    assert.ok((await bodies()).includes(malformed), 'visible again at once');
    const others = received.Messages.filter((message) => message !== hidden);
    if (others.length > 0) {
      await aws(
        'sqs',
        'change-message-visibility-batch',
        '--queue-url',
        dlq,
        '--entries',
        JSON.stringify(
          others.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 })),
        ),
      );
    }

    // --include-malformed moves it too.
    const forced = await crawler('redrive', '--queue', 'tasks', '--include-malformed');
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /tasks: moved [1-9]\d* message\(s\) back/);
  });

  it('crawler submit / status / results / get --endpoint run a crawl end to end', async () => {
    const submitted = await crawler('submit', `${site.origin}/`, '--allow-private', '--delay', '0');
    assert.equal(submitted.code, 0, submitted.stderr);
    const crawlId = submitted.stdout.trim();
    assert.match(crawlId, /^c-/);

    const status = await until('the crawl to complete', async () => {
      const run = await crawler('status', crawlId, '--json');
      assert.equal(run.code, 0, run.stderr);
      const parsed = JSON.parse(run.stdout) as { state: string; byOutcome: Record<string, number> };
      return parsed.state === 'complete' ? parsed : undefined;
    });
    assert.equal(status.byOutcome.fetched, 2);

    const results = await crawler('results', crawlId);
    assert.equal(results.code, 0, results.stderr);
    const urls = results.stdout
      .split('\n')
      .filter(Boolean)
      .map((text) => (JSON.parse(text) as { url: string }).url)
      .sort();
    assert.deepEqual(urls, [`${site.origin}/`, `${site.origin}/a`]);

    const page = await crawler('get', `${site.origin}/a`, '--crawl', crawlId);
    assert.equal(page.code, 0, page.stderr);
    assert.equal(page.stdout, '<html><body>page a</body></html>');

    const cancel = await crawler('cancel', crawlId);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.match(cancel.stdout, /already complete/);
  });

  it('crawler cancel stops a running crawl: its queued tasks end as `cancelled`', async () => {
    const submitted = await crawler('submit', `${site.origin}/held/`, '--allow-private', '--delay', '400');
    assert.equal(submitted.code, 0, submitted.stderr);
    const crawlId = submitted.stdout.trim();
    await until('the links of the first page to be queued', async () => {
      const run = await crawler('status', crawlId, '--json');
      return (JSON.parse(run.stdout) as { queued: number }).queued > MANY ? true : undefined;
    });
    const cancel = await crawler('cancel', crawlId);
    releaseHeld();
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.match(cancel.stdout, new RegExp(`crawl ${crawlId} cancelled`));

    const final = await until(
      'every task of the cancelled crawl to end',
      async () => {
        const run = await crawler('status', crawlId, '--json');
        const parsed = JSON.parse(run.stdout) as {
          state: string;
          pending: number;
          byOutcome: Record<string, number>;
        };
        return parsed.pending === 0 ? parsed : undefined;
      },
      90_000,
    );
    assert.equal(final.state, 'cancelled');
    assert.ok((final.byOutcome.cancelled ?? 0) > 0, JSON.stringify(final));
    assert.equal((final.byOutcome.cancelled ?? 0) + (final.byOutcome.fetched ?? 0), MANY + 1);
  });

  it('runs the schedules added to it: fired by its clock, each run a re-crawl of the last completed one', async () => {
    const added = await crawler(
      'schedule',
      'add',
      'every-minute',
      '--cron',
      '* * * * *',
      `${site.origin}/`,
      '--allow-private',
      '--delay',
      '0',
    );
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stderr, /schedule every-minute added .*cron\(\* \* \* \* \? \*\) in UTC; next run /);
    interface Listed {
      runs: number;
      running?: string;
      last?: string;
    }
    const listed = async (): Promise<Listed | undefined> => {
      const run = await crawler('schedule', 'list', '--json');
      assert.equal(run.code, 0, run.stderr);
      return run.stdout.trim() === '' ? undefined : (JSON.parse(run.stdout) as Listed);
    };
    const state = async (crawlId: string) =>
      (JSON.parse((await crawler('status', crawlId, '--json')).stdout) as { state: string }).state;
    // The next minute's start fires it: no message is sent by hand.
    const first = await until('the schedule to fire', async () => (await listed())?.running, 150_000);
    assert.match(first, /^every-minute-\d{8}T\d{4}00Z$/, 'named by the minute it fired for');
    await until('the first run to complete', async () =>
      (await state(first)) === 'complete' ? true : undefined,
    );
    // Fired now by hand (or by the clock meanwhile): a later run re-crawls a completed one.
    const run = await crawler('schedule', 'run', 'every-minute');
    assert.equal(run.code, 0, run.stderr);
    const later = await until('a later run', async () => {
      const now = await listed();
      return now?.running !== undefined && now.running !== first && now.last !== undefined ? now : undefined;
    });
    assert.match(String(later.last), /^every-minute-/);
    const recrawl = String(later.running);
    await until('the later run to complete', async () =>
      (await state(recrawl)) === 'complete' ? true : undefined,
    );
    const results = await crawler('results', recrawl);
    const changes = results.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { change?: string }).change);
    assert.ok(changes.length > 0 && changes.every((change) => change === 'same'), changes.join(' '));
    const removed = await crawler('schedule', 'remove', 'every-minute');
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(await listed(), undefined);
  });

  it('a second `crawler local` on a port in use says so and exits 1', async () => {
    const port = new URL(ready.endpoint).port;
    const other = await runCli(['local', '--port', port, '--state-dir', join(work.path, 'other-state')], {
      timeoutMs: 60_000,
    });
    assert.equal(other.code, 1, other.stderr);
    assert.match(other.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is in use`));
  });

  it('SIGTERM stops it cleanly: exit 0 and the state dir is free again', async () => {
    child.kill('SIGTERM');
    const { code } = await Promise.race([
      exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`not stopped 30 s after SIGTERM\n${stderr}`)), 30_000),
      ),
    ]);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /crawler local: stopped/);
    assert.ok(!existsSync(join(work.path, 'state', 'lock')), 'the state lock is released');
  });
});
