/**
 * IAM, checked instead of assumed (the emulators enforce none). A real crawl runs through the local
 * runtime on the synthesized stack, and the operator drives it with the CLI's own code the way it
 * drives a deployed stack (`--stack NAME`: outputs from CloudFormation DescribeStacks, here a stand-in
 * in front of the emulators): every command that reaches a stack (submit, status, results, get, cancel,
 * redrive, list, export, llms-txt, diff, schedule; STACK_COMMANDS, checked against cli/). Malformed messages take
 * the failure paths that need their own permissions (a task parked in its DLQ; a result hastened back
 * to its queue). Every AWS call is in the ledger (lambdas/shared/aws-call-ledger.ts) with its
 * principal, IAM action and resource ARN; then, against the template's policies resolved to the local
 * names:
 *
 * - every call of each function is allowed by its role, every call of the CLI by the operator policy
 *   (the stack's managed policy, output OperatorPolicyArn);
 * - least privilege: every (action, resource) a policy grants is used by some call, except ALLOWED_UNUSED;
 * - every environment variable the stack gives a function is one its handler reads.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { REPO_ROOT } from '../../cdk/paths.ts';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { cancelCommand } from '../../cli/cancel-command.ts';
import type { CliIo } from '../../cli/cli-io.ts';
import { diffCommand } from '../../cli/diff-command.ts';
import { exportCommand } from '../../cli/export-command.ts';
import { getCommand } from '../../cli/get-command.ts';
import { listCommand } from '../../cli/list-command.ts';
import { llmsTxtCommand } from '../../cli/llms-txt-command.ts';
import { redriveCommand } from '../../cli/redrive-command.ts';
import { resultsCommand } from '../../cli/results-command.ts';
import { scheduleCommand } from '../../cli/schedule-command.ts';
import { statusCommand } from '../../cli/status-command.ts';
import { submitCommand } from '../../cli/submit-command.ts';
import { type LedgerEntry, OPERATOR } from '../../lambdas/shared/aws-call-ledger.ts';
import { IDS, OUTPUTS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { AggregateEnvSchema, FetchEnvSchema, RenderEnvSchema } from '../../lambdas/shared/env.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { processMeters } from '../../local/process-meters.ts';
import { roleName } from '../../local/provision.ts';
import { resource } from '../cdk/template.ts';
import { Capture } from '../fixtures/capture.ts';
import {
  type CloudFormationStandIn,
  startCloudFormationStandIn,
} from '../fixtures/cloudformation-stand-in.ts';
import {
  deniedCalls,
  principalPolicies,
  type ResolvedStatement,
  unusedGrants,
} from '../fixtures/iam-policy.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

/**
 * Granted but never called through the SDK here, each for a reason outside this test's reach. Keyed
 * by the function's logical id; matched on the action, on that function's resources.
 */
const ALLOWED_UNUSED: Record<string, Record<string, string>> = {
  FetchFunction: {
    'logs:CreateLogStream': "Lambda's own log delivery (stdout to the function's log group), not an SDK call",
    'logs:PutLogEvents': "Lambda's own log delivery (stdout to the function's log group), not an SDK call",
    'sqs:GetQueueAttributes':
      'the SQS event source mapping reads the queue with the function role (AWSLambdaSQSQueueExecutionRole); the local poller does not',
    'sqs:ChangeMessageVisibility':
      "a retried task's backoff (lambdas/adapters/sqs-redelivery.ts delay) after a failed AWS write; faults.test.ts drives it",
    's3:ListBucket':
      'a HEAD of an index part not yet written (lambdas/core/fetch/host-visit.ts allPartsWritten) answers 404 only with it, 403 without',
  },
  RenderFunction: {
    'logs:CreateLogStream': "Lambda's own log delivery (stdout to the function's log group), not an SDK call",
    'logs:PutLogEvents': "Lambda's own log delivery (stdout to the function's log group), not an SDK call",
    'sqs:GetQueueAttributes':
      'the SQS event source mapping reads the queue with the function role (AWSLambdaSQSQueueExecutionRole); the local poller does not',
    'sqs:ChangeMessageVisibility':
      "a retried page's backoff (lambdas/adapters/sqs-redelivery.ts delay) after a failed AWS write",
    'events:PutEvents':
      "Crawl Cancelled when a render's charge spends the crawl's --max-cost-usd (core/crawl/budget.ts); the fetch function's charge, which comes first, mostly spends it",
  },
  AggregateFunction: {
    'logs:CreateLogStream': "Lambda's own log delivery (stdout to the function's log group), not an SDK call",
    'logs:PutLogEvents': "Lambda's own log delivery (stdout to the function's log group), not an SDK call",
    'sqs:SendMessage':
      'results an invocation had no time to start, sent back as new messages (aggregate-deadline.test.ts drives it)',
    'sqs:GetQueueAttributes':
      'the SQS event source mapping reads the queue with the function role (AWSLambdaSQSQueueExecutionRole); the local poller does not',
  },
};

/**
 * Allowed grants that a run may or may not use, by timing: the allow-list check asks only that they
 * are granted. (ci17: a visit's HEAD of a part the aggregate function had not written yet.)
 */
const USED_BY_TIMING: Record<string, ReadonlySet<string>> = {
  FetchFunction: new Set(['s3:ListBucket']),
};

/** Every env var a handler reads: its schema's keys, plus what Node itself reads. */
const READ_ENV: Record<string, Set<string>> = {
  FetchFunction: new Set([...Object.keys(FetchEnvSchema.shape), 'NODE_OPTIONS']),
  AggregateFunction: new Set([...Object.keys(AggregateEnvSchema.shape), 'NODE_OPTIONS']),
  RenderFunction: new Set([...Object.keys(RenderEnvSchema.shape), 'NODE_OPTIONS']),
};

/** The functions whose calls are checked both ways. */
const FUNCTIONS = [IDS.fetchFunction, IDS.aggregateFunction, IDS.renderFunction];

const STACK_ID = 'arn:aws:cloudformation:us-east-1:000000000000:stack/ServerlessCrawler/iam-test';
const MANY = 20;

let template: Record<string, unknown>;
let aws: LocalAws;
let site: TestSite;
let cfn: CloudFormationStandIn;
let entries: LedgerEntry[];
let policies: Map<string, ResolvedStatement[]>;
let out: string | undefined;

/** The CLI's commands that reach a stack (they use cli/stack-access.ts), by their file: each runs below. */
const STACK_COMMANDS = new Map<string, (args: string[], io?: Partial<CliIo>) => Promise<number>>([
  ['submit-command.ts', submitCommand],
  ['status-command.ts', statusCommand],
  ['results-command.ts', resultsCommand],
  ['get-command.ts', getCommand],
  ['cancel-command.ts', cancelCommand],
  ['redrive-command.ts', redriveCommand],
  ['list-command.ts', listCommand],
  ['export-command.ts', exportCommand],
  ['llms-txt-command.ts', llmsTxtCommand],
  ['diff-command.ts', diffCommand],
  ['schedule-command.ts', scheduleCommand],
]);
const ran = new Set<(args: string[], io?: Partial<CliIo>) => Promise<number>>();

async function cli(
  command: (args: string[], io?: Partial<CliIo>) => Promise<number>,
  ...args: string[]
): Promise<string> {
  ran.add(command);
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await command([...args, '--stack', STACK_NAME, '--endpoint', cfn.endpoint], {
    stdout,
    stderr,
  });
  assert.equal(code, 0, `${args.join(' ')}: ${stderr.text}`);
  return stdout.text;
}

before(async () => {
  const routes = {
    '/': html(`<a href="/a">a</a> <a href="/b">b</a>`),
    '/a': html('page a'),
    '/b': html('page b'),
    '/robots.txt': html('User-agent: *\nDisallow: /private/\n'),
    '/many/': html(Array.from({ length: MANY }, (_, i) => `<a href="/many/${i}">${i}</a>`).join(' ')),
  };
  for (let i = 0; i < MANY; i++) Object.assign(routes, { [`/many/${i}`]: html(`many ${i}`) });
  site = await startSite(routes);
  template = synthesizeTemplate();
  aws = await startLocalAws({
    template: parseTemplate(template),
    stackName: STACK_NAME,
    port: 0,
    handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    log: () => {},
  });
  cfn = await startCloudFormationStandIn(
    { [STACK_NAME]: { stackId: STACK_ID, status: 'CREATE_COMPLETE', outputs: aws.outputs } },
    aws.endpoints.s3,
  );
  // On from here: provisioning is CloudFormation's work, not a principal's of the stack.
  processMeters.ledger.reset();
  processMeters.ledger.enable();
  await aws.start();

  // A whole crawl, read back every way the CLI reads.
  const crawlId = (await cli(submitCommand, `${site.origin}/`, '--allow-private', '--delay', '0')).trim();
  await aws.waitForIdle({ timeoutMs: 120_000 });
  const status = JSON.parse(await cli(statusCommand, crawlId, '--json')) as { state: string };
  assert.equal(status.state, 'complete');
  assert.equal((await cli(resultsCommand, crawlId)).trim().split('\n').length, 3);
  assert.match(await cli(getCommand, `${site.origin}/a`, '--crawl', crawlId, '--body'), /page a/);
  out = await mkdtemp(join(tmpdir(), 'iam-calls-'));
  await cli(exportCommand, crawlId, '--out', join(out, 'export'), '--markdown-dir', join(out, 'md'));
  assert.equal((await readFile(join(out, 'export', 'results.jsonl'), 'utf8')).trim().split('\n').length, 3);
  await cli(llmsTxtCommand, crawlId, '--out', join(out, 'llms'));
  assert.match(await readFile(join(out, 'llms', 'llms.txt'), 'utf8'), /\/a/);

  // A re-crawl of it (the earlier index read by the submitter), and a page's diff between the two. It
  // sends a header: its credentials go to an SSM parameter (the operator) that each fetch reads.
  const recrawl = (
    await cli(
      submitCommand,
      `${site.origin}/`,
      '--allow-private',
      '--delay',
      '0',
      '--since',
      crawlId,
      '--page-events',
      '--header',
      'X-Crawl-Token: iam-test',
    )
  ).trim();
  await aws.waitForIdle({ timeoutMs: 120_000 });
  assert.equal(JSON.parse(await cli(statusCommand, recrawl, '--json')).state, 'complete');
  await cli(diffCommand, recrawl, `${site.origin}/a`);

  // A rendered crawl with credentials, of seeds from a file: the render function reads the crawl's
  // config and its stored scope, the page back, the crawl's parameter, writes its records and sends
  // the result and the links it found (/a, /b).
  const seedsFile = join(out, 'seeds.txt');
  await writeFile(seedsFile, `${site.origin}/\n`);
  const rendered = (
    await cli(
      submitCommand,
      '--seeds-file',
      seedsFile,
      '--allow-private',
      '--delay',
      '0',
      '--render',
      'always',
      '--header',
      'X-Crawl-Token: iam-test',
      '--credentials-hosts',
      new URL(site.origin).host,
    )
  ).trim();
  await aws.waitForIdle({ timeoutMs: 120_000 });
  assert.equal(JSON.parse(await cli(statusCommand, rendered, '--json')).state, 'complete');
  assert.equal((await cli(resultsCommand, rendered)).trim().split('\n').length, 3);

  // A schedule: created on the stack's Scheduler, fired (a run the fetch function starts: a re-crawl
  // of the schedule's last completed run the second time), listed, and removed.
  await cli(
    scheduleCommand,
    'add',
    'nightly',
    '--cron',
    '0 3 * * *',
    `${site.origin}/`,
    '--allow-private',
    '--delay',
    '0',
  );
  for (const day of ['2026-12-05', '2026-12-06']) {
    assert.deepEqual(await aws.scheduler?.fireAt(new Date(`${day}T03:00:00Z`)), ['nightly']);
    await aws.waitForIdle({ timeoutMs: 120_000 });
  }
  await cli(scheduleCommand, 'run', 'nightly');
  await aws.waitForIdle({ timeoutMs: 120_000 });
  const nightly = JSON.parse(await cli(scheduleCommand, 'list', '--json')) as { runs: number; last?: string };
  assert.equal(nightly.runs, 3);
  assert.equal(nightly.last, 'nightly-20261206T030000Z');
  await cli(scheduleCommand, 'remove', 'nightly');

  // A crawl its cost budget stops: the fetch function cancels it and says so (Crawl Cancelled).
  const overBudget = (
    await cli(
      submitCommand,
      `${site.origin}/many/`,
      '--allow-private',
      '--delay',
      '0',
      '--max-cost-usd',
      '0.000001',
    )
  ).trim();
  await aws.waitForIdle({ timeoutMs: 120_000 });
  assert.equal(JSON.parse(await cli(statusCommand, overBudget, '--json')).state, 'cancelled');

  // A crawl cancelled while it runs.
  const cancelled = (
    await cli(submitCommand, `${site.origin}/many/`, '--allow-private', '--delay', '200')
  ).trim();
  await cli(cancelCommand, cancelled);
  // Both crawls, by a Query of the crawl registry: the operator has no Scan of the table.
  const listed = (await cli(listCommand, '--json'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { crawlId: string; state: string });
  assert.deepEqual(
    listed.filter((c) => c.crawlId === crawlId || c.crawlId === cancelled).map((c) => [c.crawlId, c.state]),
    [
      [crawlId, 'complete'],
      [cancelled, 'cancelled'],
    ],
  );

  // Failure paths: a malformed task is parked in TaskDLQ by the fetch function; a malformed result is
  // hastened back to its queue by the aggregate function until SQS moves it to ResultsDLQ.
  await aws.clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: aws.outputs.TaskQueueUrl,
      MessageBody: JSON.stringify({ v: 1, crawlId: 'broken', url: 'http://x.test/', depth: 'deep' }),
    }),
  );
  await aws.clients.sqs.send(
    new SendMessageCommand({ QueueUrl: aws.outputs.ResultsQueueUrl, MessageBody: '{"not":"a result"}' }),
  );
  // A malformed render message is parked in RenderDLQ by the render function, with its reason.
  await aws.clients.sqs.send(
    new SendMessageCommand({ QueueUrl: aws.outputs.RenderQueueUrl, MessageBody: '{"kind":"render"}' }),
  );
  await aws.waitForIdle({ timeoutMs: 120_000 });
  // Redriven with the pollers stopped, so the moved messages stay where the redrive put them: first
  // another crawl's only (none: every message is looked at and released), then all.
  await Promise.all(aws.pollers.map((poller) => poller.stop()));
  assert.match(
    await cli(redriveCommand, 'no-such-crawl', '--include-malformed'),
    /tasks: moved 0 message\(s\) back, left 1/,
  );
  assert.match(
    await cli(redriveCommand, '--include-malformed'),
    /tasks: moved 1 message\(s\) back[\s\S]*results: moved 1 message\(s\) back[\s\S]*renders: moved 1 message\(s\) back/,
  );

  entries = processMeters.ledger.snapshot().entries;
  policies = principalPolicies(template, aws.stack, {
    principal: OPERATOR,
    outputKey: OUTPUTS.operatorPolicyArn,
  });
});

after(async () => {
  if (out) await rm(out, { recursive: true, force: true });
  await cfn?.close();
  await aws?.stop();
  await site?.close();
});

/** The principal a test subject's calls are recorded under: a function's name, a role's, or the operator. */
function principalOf(who: string): string | undefined {
  if (who === OPERATOR) return OPERATOR;
  if (who === IDS.schedulerRole) return roleName(aws.stack, who);
  return aws.stack.functions[who]?.functionName;
}

const show = (list: ReadonlyArray<{ action: string; resource: string }>) =>
  list.map((p) => `${p.action} on ${p.resource}`).join('\n  ');

describe('every recorded call is allowed by its principal’s policies', () => {
  it('every CLI command that reaches a stack ran here as the operator', () => {
    const reaching = readdirSync(join(REPO_ROOT, 'cli'))
      .filter((file) => file.endsWith('-command.ts'))
      .filter((file) =>
        readFileSync(join(REPO_ROOT, 'cli', file), 'utf8').includes("from './stack-access.ts'"),
      );
    assert.deepEqual(reaching.sort(), [...STACK_COMMANDS.keys()].sort(), 'STACK_COMMANDS names them all');
    for (const [file, command] of STACK_COMMANDS) assert.ok(ran.has(command), `${file} did not run`);
  });

  it("the ledger saw each principal: the three functions, the schedules' role and the operator", () => {
    const principals = new Set(entries.map((e) => e.principal));
    for (const fn of Object.values(aws.stack.functions))
      assert.ok(principals.has(fn.functionName), fn.logicalId);
    assert.ok(principals.has(roleName(aws.stack, IDS.schedulerRole)), IDS.schedulerRole);
    assert.ok(principals.has(OPERATOR));
    const known = new Set([...policies.keys(), 'local-runtime']);
    assert.deepEqual(
      [...principals].filter((p) => !known.has(p)),
      [],
      'calls by a principal the stack has no policy for',
    );
  });

  for (const who of [...FUNCTIONS, IDS.schedulerRole, OPERATOR]) {
    it(`${who}: every call is allowed`, () => {
      const principal = principalOf(who);
      const statements = policies.get(principal ?? '');
      assert.ok(statements, `no policy for ${who}`);
      const calls = entries.filter((e) => e.principal === principal);
      assert.ok(calls.length > 0);
      const denied = deniedCalls(statements, calls);
      assert.deepEqual(denied, [], `${who} would be denied:\n  ${show(denied)}`);
    });
  }
});

describe('least privilege: nothing granted that no call uses', () => {
  for (const who of [...FUNCTIONS, IDS.schedulerRole, OPERATOR]) {
    it(`${who}: every granted action is used on every granted resource`, () => {
      const principal = principalOf(who);
      const statements = policies.get(principal ?? '') ?? [];
      const calls = entries.filter((e) => e.principal === principal);
      const allowed = ALLOWED_UNUSED[who] ?? {};
      const unused = unusedGrants(statements, calls).filter((grant) => !(grant.action in allowed));
      assert.deepEqual(unused, [], `${who} is granted what it never uses:\n  ${show(unused)}`);
    });
  }

  it('the allow-list holds only grants that exist and are really unused', () => {
    for (const [id, allowed] of Object.entries(ALLOWED_UNUSED)) {
      const fn = aws.stack.functions[id];
      assert.ok(fn, id);
      const statements = policies.get(fn.functionName) ?? [];
      const calls = entries.filter((e) => e.principal === fn.functionName);
      const granted = new Set(unusedGrants(statements, []).map((grant) => grant.action));
      const unused = new Set(unusedGrants(statements, calls).map((grant) => grant.action));
      for (const action of Object.keys(allowed)) {
        assert.ok(granted.has(action), `${id}: ${action} is not granted: drop it from the allow-list`);
        if (USED_BY_TIMING[id]?.has(action)) continue;
        assert.ok(unused.has(action), `${id}: ${action} is used: drop it from the allow-list`);
      }
    }
  });

  it('every environment variable the stack sets on a function is read by its handler', () => {
    for (const [id, read] of Object.entries(READ_ENV)) {
      const environment = resource(template, id, 'AWS::Lambda::Function').Properties.Environment as
        | { Variables?: Record<string, unknown> }
        | undefined;
      const unread = Object.keys(environment?.Variables ?? {}).filter((name) => !read.has(name));
      assert.deepEqual(unread, [], `${id} gets env vars its handler never reads`);
    }
  });
});
