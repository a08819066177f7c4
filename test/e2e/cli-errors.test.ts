/**
 * Mistakes people make with the real `crawler` CLI: each is one line on stderr that names the option
 * or the failure and says what to do, exit code 2 for the command line, 1 for a failure, never a
 * stack trace unless --debug. And signals sent to the Node-20 shim reach the crawler.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { partitionCeiling } from '../../cdk/partition-budget.ts';
import { type CliRun, NODE_BIN, REPO_ROOT, runCli } from '../fixtures/run-cli.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

const STACK_FRAME = /^ {4}at /m;

/** One line on stderr, the expected exit code, no stack frame; returns the line. */
function oneLine(run: CliRun, exitCode: number): string {
  const where = `crawler ${run.args.join(' ')}\n--- stderr ---\n${run.stderr}`;
  assert.equal(run.code, exitCode, where);
  assert.doesNotMatch(run.stderr, STACK_FRAME, where);
  const lines = run.stderr.split('\n').filter((line) => line !== '');
  assert.equal(lines.length, 1, where);
  return lines[0] as string;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

let site: TestSite;
let work: string;
before(async () => {
  site = await startSite({ '/': html('<html><body>hello</body></html>') });
  work = await mkdtemp(join(tmpdir(), 'cli-errors-'));
});
after(async () => {
  await site.close();
  await rm(work, { recursive: true, force: true });
});

describe('usage mistakes: one line naming the option and what it accepts, exit 2', () => {
  it('a mistyped command gets a suggestion', async () => {
    const line = oneLine(await runCli(['crawel', `${site.origin}/`]), 2);
    assert.match(line, /unknown command "crawel"; did you mean crawl\?/);
  });

  it('--max-pages -5 says what --max-pages accepts', async () => {
    const line = oneLine(await runCli(['crawl', `${site.origin}/`, '--max-pages', '-5']), 2);
    assert.match(line, /--max-pages expects an integer >= 1, got "-5"/);
  });

  it('a near-miss option gets a suggestion and what the option accepts, in every command', async () => {
    assert.match(
      oneLine(await runCli(['crawl', `${site.origin}/`, '--max-page', '5']), 2),
      /unknown option --max-page; did you mean --max-pages\? \(--max-pages N: fetch at most N pages/,
    );
    assert.match(
      oneLine(await runCli(['status', 'c-1', '--jsn']), 2),
      /unknown option --jsn; did you mean --json\? \(--json: /,
    );
    assert.match(
      oneLine(await runCli(['submit', `${site.origin}/`, '--crawl-idd', 'x']), 2),
      /unknown option --crawl-idd; did you mean --crawl-id\?/,
    );
    assert.match(
      oneLine(await runCli(['local', '--prot', '0']), 2),
      /unknown option --prot; did you mean --port\? \(--port N: /,
    );
    assert.match(
      oneLine(await runCli(['crawl', `${site.origin}/`, '--out']), 2),
      /--out expects a value \(--out DIR: where to write/,
    );
  });

  it('a malformed seed URL is rejected before anything starts, unless --keep-going', async () => {
    const stateDir = join(work, 'state-seed');
    const line = oneLine(await runCli(['crawl', 'htp//oops', `${site.origin}/`], { stateDir }), 2);
    assert.match(line, /"htp\/\/oops" is not a valid absolute URL.*--keep-going/);
    assert.equal(existsSync(stateDir) ? (await readdir(stateDir)).length : 0, 0, 'nothing started');
    // submit too, before it even looks for the endpoint (which is down).
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    assert.match(
      oneLine(await runCli(['submit', 'htp//oops', `${site.origin}/`, '--endpoint', endpoint]), 2),
      /"htp\/\/oops" is not a valid absolute URL/,
    );
  });
});

describe('failures: one line saying what to do, exit 1, the trace only with --debug', () => {
  it('re-crawl, event, adaptive, schedule and credential options: each mistake is one line naming what is wrong, exit 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['crawl', 'http://127.0.0.1:9/', '--page-events'], /--page-events .* give --since with it/],
      [['crawl', 'http://127.0.0.1:9/', '--min-interval', '1h'], /give --adaptive with them/],
      [
        ['crawl', 'http://127.0.0.1:9/', '--adaptive', '--min-interval', '90 minutes'],
        /--min-interval expects a duration such as 90s/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--adaptive', '--min-interval', '2d', '--max-interval', '1d'],
        /must not exceed --max-interval/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--events', '/no/such/dir/events.jsonl'],
        /--events .*: its directory does not exist/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--events', 'e.jsonl', '--endpoint', 'http://127.0.0.1:9'],
        /with --endpoint, read the events/,
      ],
      [['submit', 'http://127.0.0.1:9/', '--events', 'e.jsonl'], /submit has no --events/],
      [['local', '--since', 'latest'], /local has no --since/],
      [['results', 'c-1', '--change', 'modified'], /--change expects one of new, same, changed, removed/],
      [['diff', 'c-1'], /diff needs a crawl id and a URL/],
      [['schedule'], /schedule needs a subcommand: add, list, remove, run/],
      [['schedule', 'pause', 'x'], /unknown subcommand "pause"; expected one of add, list, remove, run/],
      [['schedule', 'add', 'x', '--cron', '0 3 * * *'], /schedule add needs at least one URL to crawl/],
      [['schedule', 'add', 'x', 'http://127.0.0.1:9/'], /schedule add needs --cron "EXPR"/],
      [
        ['schedule', 'add', 'x', '--cron', '*/0 * * * *', 'http://127.0.0.1:9/'],
        /step "0" must be at least 1/,
      ],
      [
        ['schedule', 'add', 'x', '--cron', '0 3 * * *', '--timezone', 'Mars/Base', 'http://127.0.0.1:9/'],
        /--timezone "Mars\/Base" is not an IANA time zone/,
      ],
      [
        ['schedule', 'add', 'x', '--cron', '0 3 * * *', '--since', 'latest', 'http://127.0.0.1:9/'],
        /schedule add has no --since/,
      ],
      [
        ['schedule', 'add', 'a b', '--cron', '0 3 * * *', 'http://127.0.0.1:9/'],
        /schedule name expects 1-47 of/,
      ],
      [['schedule', 'remove'], /schedule remove needs exactly one schedule NAME/],
      [
        ['schedule', 'add', 'x', '--cron', '0 3 * * *', '--header', 'X-A: b', 'http://127.0.0.1:9/'],
        /schedule add has no --header, --cookie, --cookie-file or --basic-auth/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--header', 'X-A: b\r\nX-B: c'],
        /--header X-A: the value has a control character/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--header', 'Host: evil'],
        /--header Host: set by the crawler itself/,
      ],
      [['crawl', 'http://127.0.0.1:9/', '--cookie', 'a=b; c=d'], /--cookie "a=b; c=d": expected name=value/],
      [['crawl', 'http://127.0.0.1:9/', '--basic-auth', 'nocolon'], /--basic-auth: expected user:password/],
      [
        ['crawl', 'http://127.0.0.1:9/', '--cookie-file', '/no/such/cookies.txt'],
        /--cookie-file \/no\/such\/cookies.txt: no such file/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--credentials-hosts', 'a.example'],
        /--credentials-hosts scopes --header/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--header', 'X-A: b', '--credentials-hosts', 'http://a.example/'],
        /--credentials-hosts: "http:\/\/a.example\/" is not a host\[:port\]/,
      ],
      [
        ['local', '--header', 'X-A: b'],
        /local has no --header, --cookie, --cookie-file, --basic-auth or a --proxy user/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--render', 'sometimes'],
        /--render expects one of never, auto, always, got "sometimes"/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--render-pattern', '(['],
        /--render-pattern expects a JavaScript regular expression/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--proxy-hosts', 'a.example'],
        /--proxy-hosts says which hosts go through --proxy/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--proxy', 'https://p.example:3128'],
        /--proxy: expected http:\/\/\[user:password@\]host:port/,
      ],
      [
        ['crawl', '--resume', 'c-1', '--proxy', 'http://p.example:3128'],
        /--resume goes on with the credentials and proxy/,
      ],
      [
        ['crawl', 'http://127.0.0.1:9/', '--header', `X-Big: ${'x'.repeat(5000)}`],
        /the crawl's credentials take \d+ bytes; at most 4096 are kept/,
      ],
    ];
    for (const [args, message] of cases)
      assert.match(oneLine(await runCli(args), 2), message, args.join(' '));
  });

  it('a locked state dir', async () => {
    const stateDir = await mkdtemp(join(work, 'state-locked-'));
    // This test process is alive: it holds the lock as far as the CLI can tell.
    await writeFile(join(stateDir, 'lock'), `${process.pid}\n`);
    const line = oneLine(await runCli(['crawl', `${site.origin}/`, '--quiet'], { stateDir }), 1);
    assert.match(line, new RegExp(`in use by process ${process.pid}.*--state-dir`));
  });

  it('an unreachable --endpoint, for crawl and the read commands; --debug adds the trace', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const crawl = oneLine(await runCli(['crawl', `${site.origin}/`, '--endpoint', endpoint, '--quiet']), 1);
    assert.match(
      crawl,
      /cannot reach 127\.0\.0\.1:\d+ \(ECONNREFUSED\); start .*crawler local.* or fix --endpoint/,
    );
    const status = oneLine(await runCli(['status', 'c-1', '--endpoint', endpoint]), 1);
    assert.match(status, /cannot reach 127\.0\.0\.1:\d+ \(ECONNREFUSED\); start/);
    const debug = await runCli(['--debug', 'crawl', `${site.origin}/`, '--endpoint', endpoint, '--quiet']);
    assert.equal(debug.code, 1);
    assert.match(debug.stderr, /cannot reach 127\.0\.0\.1/);
    assert.match(debug.stderr, STACK_FRAME);
  });

  it('a bad -c context value of the CDK app', async () => {
    const outdir = await mkdtemp(join(work, 'cdk-out-'));
    const run = spawnSync(NODE_BIN, ['bin/app.ts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        ...process.env,
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify({ fetchConcurrency: '1', 'aws:cdk:bundling-stacks': [] }),
      },
    });
    const line = oneLine(
      {
        args: ['(cdk app)', '-c', 'fetchConcurrency=1'],
        code: run.status,
        signal: null,
        stdout: '',
        stderr: run.stderr,
        ms: 0,
        timedOut: false,
      },
      1,
    );
    const max = partitionCeiling().maxFetchConcurrency;
    assert.match(
      line,
      new RegExp(
        `context fetchConcurrency: expected an integer 2\\.\\.${max} .*-c fetchConcurrency=${max}\\b`,
      ),
    );
  });

  it('--sitemap auto with a blocked seed warns, crawls on, and exits 1 as no seed could be crawled', async () => {
    const run = await runCli([
      'crawl',
      `${site.origin}/`,
      '--sitemap',
      'auto',
      '--out',
      join(work, 'out-sitemap'),
    ]);
    assert.equal(run.code, 1, run.stderr);
    assert.doesNotMatch(run.stderr, STACK_FRAME);
    assert.match(run.stderr, /sitemap: .*robots\.txt: address-blocked: .*--allow-private/);
    assert.match(run.stderr, /^crawler crawl: no seed could be crawled: 1 blocked: .*--allow-private$/m);
    assert.ok(existsSync(join(work, 'out-sitemap', 'summary.json')), 'the output is written all the same');
  });
});

/** A `node` older than 24 on PATH (outside node_modules): the one bin/crawler.js re-runs the CLI from. */
function olderSystemNode(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'node');
    if (dir.includes('node_modules') || !existsSync(candidate)) continue;
    const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
    if (Number(/^v(\d+)/.exec(version)?.[1]) < 24) return candidate;
  }
  return undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const systemNode = olderSystemNode();

describe('signals sent to the shim reach the crawler', {
  skip: systemNode ? false : 'no Node < 24 on PATH',
}, () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to bin/crawler.js alone stops the Node 24 child, and the shim exits as it did`, async () => {
      const stateDir = await mkdtemp(join(work, 'state-signal-'));
      // Its own process group: a signal to the shim's pid is the only one sent (not a terminal's to the group).
      const shim: ChildProcess = spawn(
        systemNode as string,
        ['bin/crawler.js', 'local', '--port', '0', '--json'],
        {
          cwd: REPO_ROOT,
          env: { ...process.env, CRAWLER_STATE_DIR: stateDir },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        },
      );
      let stdout = '';
      let stderr = '';
      shim.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
      });
      shim.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      const exited = once(shim, 'exit');
      // The last lines may still be in the pipes at 'exit': the output is whole at 'close'.
      const closed = once(shim, 'close');
      let childPid: number | undefined;
      try {
        while (childPid === undefined) {
          const line = stdout.split('\n').find((l) => l.startsWith('{'));
          if (line) childPid = (JSON.parse(line) as { pid: number }).pid;
          else if (shim.exitCode !== null) assert.fail(`the shim exited early:\n${stderr}`);
          else await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.notEqual(childPid, shim.pid, 'the CLI runs in a child of the shim');
        shim.kill(signal);
        const [code, killedBy] = (await exited) as [number | null, NodeJS.Signals | null];
        // `crawler local` stops cleanly on SIGINT/SIGTERM and exits 0: the shim exits with that.
        assert.deepEqual({ code, killedBy }, { code: 0, killedBy: null }, stderr);
        // An orphan would hold the pipes open (no 'close'): it is looked for first.
        assert.equal(isAlive(childPid), false, `child ${childPid} still runs (orphaned)`);
        await closed;
        assert.match(stderr, new RegExp(`${signal}: stopping`));
      } finally {
        if (childPid !== undefined && isAlive(childPid)) process.kill(childPid, 'SIGKILL');
        if (shim.exitCode === null && shim.signalCode === null) shim.kill('SIGKILL');
        await rm(stateDir, { recursive: true, force: true });
      }
    });
  }
});
