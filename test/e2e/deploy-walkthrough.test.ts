/**
 * docs/deploy.md's first deployment, run as written: every `sh` block of its "Deploy to AWS" section,
 * in order, as one bash script under `set -euo pipefail` (a command that fails, or a variable the
 * walk-through uses before it sets it, fails the test), against `crawler local`, which serves the
 * stack's queues, bucket and table and answers CloudFormation DescribeStacks for it.
 *
 * What cannot run here is checked against the code instead:
 * - `npx cdk bootstrap|deploy|diff|destroy`: the stack name is the app's, and every `-c key=value` is
 *   a context key the app reads, with a value its synth accepts;
 * - `aws iam attach-*-policy`: the policy ARN is the stack's operator policy output;
 * - `aws logs`: the log groups it finds and deletes are the stack's (CloudFormation's generated
 *   names begin with the stack name), after the stack is destroyed.
 *
 * What the script gets instead of a real account: the AWS endpoint (AWS_ENDPOINT_URL, which the AWS
 * CLI and SDKs honour), the profile the walk-through names (dummy keys), and loopback sites for its
 * example URLs. Crawls it submits add `--allow-private`: the sites are on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createCrawlerApp } from '../../cdk/crawler-app.ts';
import { CONTEXT_KEYS } from '../../cdk/limits.ts';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { OUTPUTS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { CRAWLER_BIN, NODE_BIN, REPO_ROOT, tempDir } from '../fixtures/run-cli.ts';
import { html, type Route, startSite, type TestSite } from '../fixtures/site.ts';

const DOC = join(REPO_ROOT, 'docs/deploy.md');
/**
 * The walk-through is dozens of commands, each a process start (AWS CLI v1 takes seconds of CPU on a
 * loaded machine): its time grows with them, so the limit is per command. `bash -x` traces each
 * command as it starts; a script that traces nothing for this long is stuck in one command.
 */
const COMMAND_TIMEOUT_MS = 120_000;
/** The watch loop's polls: a crawl of a few pages that is not complete after this many is stuck. */
const MAX_WATCH_POLLS = 300;
const SECTION = '## Deploy to AWS';

interface TemplateResource {
  Type: string;
  Properties?: { LogGroupName?: unknown };
}

/** The `sh` blocks of the walk-through section, in order. */
function walkthroughScript(markdown: string): string {
  const start = markdown.indexOf(`\n${SECTION}\n`);
  assert.ok(start >= 0, `${DOC} has a "${SECTION}" section`);
  const end = markdown.indexOf('\n## ', start + SECTION.length + 2);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
  assert.ok(blocks.length >= 8, 'the walk-through has its commands in sh blocks');
  return blocks.join('\n');
}

function findAwsCli(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v aws'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path !== '' ? path : undefined;
}

const AWS_CLI = process.env.CRAWLER_TEST_AWS_CLI ?? findAwsCli();
const NO_CLI =
  AWS_CLI || process.env.CI === 'true'
    ? false
    : 'the AWS CLI (aws) is not installed; `apt-get install -y awscli` to run this test';

const PAGES = ['/', '/about', '/docs/', '/docs/a', '/docs/b'];
const routes: Record<string, Route> = {
  '/robots.txt': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`User-agent: *\nAllow: /\nSitemap: ${site.origin}/sitemap.xml\n`);
  },
  '/sitemap.xml': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end(
      `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${PAGES.map(
        (p) => `<url><loc>${site.origin}${p}</loc></url>`,
      ).join('')}</urlset>`,
    );
  },
};
for (const path of PAGES) {
  routes[path] = html(
    `<html><head><title>${path}</title></head><body>${PAGES.map((p) => `<a href="${p}">${p}</a>`).join(' ')}</body></html>`,
  );
}

let site: TestSite;
let work: Awaited<ReturnType<typeof tempDir>>;
let local: ChildProcessWithoutNullStreams;
let endpoint: string;
let outputs: Record<string, string>;
let localErr = '';

before(async () => {
  site = await startSite(routes);
  work = await tempDir('deploy-walkthrough-');
  local = spawn(
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
    ],
    { cwd: REPO_ROOT, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  local.stderr.on('data', (chunk: Buffer) => {
    localErr += chunk.toString('utf8');
  });
  const ready = await new Promise<{ endpoint: string; outputs: Record<string, string> }>(
    (resolve, reject) => {
      let out = '';
      local.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        const first = out.split('\n')[0];
        if (out.includes('\n') && first?.startsWith('{')) resolve(JSON.parse(first));
      });
      local.on('exit', (code) => reject(new Error(`crawler local exited with ${code}\n${localErr}`)));
    },
  );
  endpoint = ready.endpoint;
  outputs = ready.outputs;
});

after(async () => {
  if (local && local.exitCode === null && local.signalCode === null) {
    local.kill('SIGTERM');
    await new Promise((resolve) => local.once('exit', resolve));
  }
  await site?.close();
  await work?.remove();
});

/** Stand-ins for what needs a real account, and the environment a user's shell would have. */
function prelude(log: string): string {
  const record = `printf '%s\\0' "$@" >> ${JSON.stringify(log)}; printf '\\n' >> ${JSON.stringify(log)}`;
  return `
set -euo pipefail
npm() { :; }                       # installing is the README's business
npx() {
  local tool=$1; shift
  case $tool in
    crawler)
      if [ "\${1:-}" = submit ]; then "$CRAWLER_NODE" "$CRAWLER_BIN" "$@" --allow-private
      else "$CRAWLER_NODE" "$CRAWLER_BIN" "$@"; fi ;;
    cdk) set -- cdk "$@"; ${record} ;;
    *) echo "the walk-through runs npx $tool, which this test does not know" >&2; return 97 ;;
  esac
}
aws() {
  if [ "\${1:-}" = iam ] || [ "\${1:-}" = logs ]; then ${record}; return 0; fi
  # AWS CLI v1 ignores AWS_ENDPOINT_URL for SQS (it does honour it for other services).
  "$CRAWLER_AWS_CLI" --endpoint-url "$AWS_ENDPOINT_URL" "$@"
}
polls=0
sleep() {                          # a watch loop's poll: the local crawl is small
  polls=$((polls + 1))
  if [ "$polls" -gt ${MAX_WATCH_POLLS} ]; then echo "a watch loop polled ${MAX_WATCH_POLLS} times" >&2; return 96; fi
  command sleep 1
}
`;
}

/** What the stand-ins recorded, in order: each command's arguments (`cdk ...`, `iam ...`). */
async function recorded(file: string): Promise<string[][]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\0').slice(0, -1)); // each argument ends in \0, empty ones too
}

describe('docs/deploy.md walk-through', { skip: NO_CLI }, () => {
  let run: { code: number | null; stdout: string; stderr: string };
  let log = '';

  before(async () => {
    assert.ok(AWS_CLI, 'CI installs the AWS CLI (.ci/run)');
    log = join(work.path, 'account.log');
    const doc = await readFile(DOC, 'utf8');
    const script = walkthroughScript(doc)
      .replaceAll('https://example.com/', `${site.origin}/`)
      .replaceAll('https://example.org/', `${site.origin}/`);
    const cwd = join(work.path, 'shell');
    await writeFile(join(work.path, 'walkthrough.sh'), prelude(log) + script);
    spawnSync('mkdir', ['-p', cwd]);
    await writeFile(join(cwd, 'seeds.txt'), `# seeds\n${site.origin}/docs/\n\n${site.origin}/about\n`);
    // The profile the walk-through exports, with dummy keys; URL parameters taken literally (CLI v1).
    const config = join(work.path, 'aws-config');
    await writeFile(
      config,
      '[default]\ncli_follow_urlparam = false\n[profile my-profile]\ncli_follow_urlparam = false\n',
    );
    const credentials = join(work.path, 'aws-credentials');
    await writeFile(credentials, '[my-profile]\naws_access_key_id = test\naws_secret_access_key = test\n');
    const env: Record<string, string | undefined> = {
      ...process.env,
      AWS_ENDPOINT_URL: endpoint,
      AWS_CONFIG_FILE: config,
      AWS_SHARED_CREDENTIALS_FILE: credentials,
      AWS_PAGER: '',
      AWS_EC2_METADATA_DISABLED: 'true',
      CRAWLER_NODE: NODE_BIN,
      CRAWLER_BIN,
      CRAWLER_AWS_CLI: AWS_CLI,
      // No local state here: every crawler command must name the deployed stack.
      CRAWLER_STATE_DIR: join(work.path, 'no-local-state'),
    };
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE']) {
      delete env[name];
    }
    run = await new Promise((resolve) => {
      // -x: the failure message shows the commands that ran last.
      const child = spawn('bash', ['-x', join(work.path, 'walkthrough.sh')], { cwd, env });
      let stalled = false;
      const stuck = () => {
        stalled = true;
        child.kill('SIGKILL');
        // A command it started may hold the pipes open: 'close' must not wait for it.
        child.stdout.destroy();
        child.stderr.destroy();
      };
      let timer = setTimeout(stuck, COMMAND_TIMEOUT_MS);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => {
        stdout += c.toString('utf8');
      });
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString('utf8');
        // A command started (its `+ ...` trace): the next one has its own time.
        if (/^\++ /m.test(c.toString('utf8'))) {
          clearTimeout(timer);
          timer = setTimeout(stuck, COMMAND_TIMEOUT_MS);
        }
      });
      // 'close', not 'exit': the last output may still be in the pipes when the shell exits.
      child.on('close', (code) => {
        clearTimeout(timer);
        if (stalled) stderr += `\nno command started for ${COMMAND_TIMEOUT_MS / 1000} s: killed\n`;
        resolve({ code, stdout, stderr });
      });
    });
  });

  it('runs to the end: every command succeeds and every variable is set before it is used', () => {
    assert.equal(
      run.code,
      0,
      `the walk-through failed:\n${run.stderr.slice(-4000)}\n${localErr.slice(-2000)}`,
    );
  });

  it('reads a finished crawl back: its summary from S3 and its results', () => {
    assert.match(run.stdout, /"state":\s*"complete"/, 'summary.json of the watched crawl');
    assert.ok(site.hits.get('/about'), 'the crawl fetched the site');
  });

  it('deploys, diffs and destroys the app stack with context keys the app reads and values it accepts', async () => {
    const commands = (await recorded(log)).filter((c) => c[0] === 'cdk').map((c) => c.slice(1));
    const verbs = commands.map((c) => c[0]);
    for (const verb of ['bootstrap', 'deploy', 'destroy']) assert.ok(verbs.includes(verb), `cdk ${verb}`);
    for (const args of commands) {
      assert.ok(['bootstrap', 'deploy', 'diff', 'destroy'].includes(args[0] ?? ''), `cdk ${args.join(' ')}`);
      const stacks = args
        .slice(1)
        .filter((a, i, all) => !a.startsWith('-') && all[i] !== '-c' && all[i - 1] !== '-c');
      for (const stack of stacks) assert.equal(stack, STACK_NAME, `cdk ${args.join(' ')} names the stack`);
      const context: Record<string, string> = {};
      args.forEach((a, i) => {
        if (a !== '-c') return;
        const [key = '', value = ''] = (args[i + 1] ?? '').split(/=(.*)/s);
        assert.ok(
          Object.values(CONTEXT_KEYS).includes(key as never),
          `-c ${key} is a context key the app reads`,
        );
        context[key] = value;
      });
      if (Object.keys(context).length > 0) {
        assert.doesNotThrow(() => createCrawlerApp({ skipBundling: true, cfnValidation: false, context }));
      }
    }
  });

  it('attaches the operator policy the stack outputs, and detaches it before the stack is destroyed', async () => {
    const commands = await recorded(log);
    const destroyAt = commands.findIndex((c) => c[0] === 'cdk' && c[1] === 'destroy');
    const attached = new Map<string, number>();
    for (const [at, args] of commands.entries()) {
      if (args[0] !== 'iam') continue;
      const [, verb = '', ...rest] = args;
      const match = /^(attach|detach)-(user|role|group)-policy$/.exec(verb);
      assert.ok(match, `aws iam ${verb}`);
      assert.equal(
        rest[rest.indexOf('--policy-arn') + 1],
        outputs[OUTPUTS.operatorPolicyArn],
        'the policy ARN is the stack output',
      );
      const who = `${match[2]} ${rest[rest.indexOf(`--${match[2]}-name`) + 1]}`;
      if (match[1] === 'attach') attached.set(who, at);
      else {
        assert.ok(attached.has(who), `${who} is detached after it was attached`);
        assert.ok(at < destroyAt, `${who} is detached before cdk destroy`);
        attached.delete(who);
      }
    }
    assert.ok(
      commands.some((c) => c[0] === 'iam'),
      'the walk-through attaches the policy',
    );
    assert.deepEqual([...attached.keys()], [], 'every attachment is detached before cdk destroy');
  });

  it("finds the stack's retained log groups after it is destroyed, by the prefix CloudFormation names them with", async () => {
    const commands = await recorded(log);
    const destroyAt = commands.findIndex((c) => c[0] === 'cdk' && c[1] === 'destroy');
    const lookup = commands.findIndex((c) => c[0] === 'logs' && c[1] === 'describe-log-groups');
    assert.ok(lookup > destroyAt && destroyAt >= 0, 'the log groups are looked up after cdk destroy');
    const args = commands[lookup]!;
    assert.equal(args[args.indexOf('--log-group-name-prefix') + 1], `${STACK_NAME}-`);
    const resources = Object.values(synthesizeTemplate().Resources as Record<string, TemplateResource>);
    const logGroups = resources
      .filter((resource) => resource.Type === 'AWS::Logs::LogGroup')
      .map((resource) => resource.Properties?.LogGroupName);
    assert.ok(logGroups.length >= 2, "the stack has its functions' log groups");
    assert.deepEqual(
      logGroups.filter((name) => name !== undefined),
      [],
      'no log group is given a name of its own: CloudFormation generates it from the stack name',
    );
  });

  it('tears down without the data, when asked: the bucket and the table are gone', () => {
    const env = {
      ...process.env,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_DEFAULT_REGION: 'us-east-1',
    };
    const table = spawnSync(
      AWS_CLI as string,
      [
        '--endpoint-url',
        endpoint,
        'dynamodb',
        'describe-table',
        '--table-name',
        outputs.FrontierTableName ?? '',
      ],
      { env, encoding: 'utf8' },
    );
    assert.notEqual(table.status, 0, 'the frontier table was deleted');
    assert.match(table.stderr, /ResourceNotFound/);
    const bucket = spawnSync(
      AWS_CLI as string,
      ['--endpoint-url', endpoint, 's3', 'ls', `s3://${outputs.PageBucketName ?? ''}`],
      { env, encoding: 'utf8' },
    );
    assert.notEqual(bucket.status, 0, 'the page bucket was deleted');
  });
});
