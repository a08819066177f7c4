/**
 * Schedules (issue 26, point 5) on the local runtime, over the wire: `crawler schedule add` stores
 * the definition and creates the schedule on the embedded EventBridge Scheduler; the Scheduler fires
 * it at its minute, in its time zone (its clock driven here by `fireAt`), by sending its message to
 * the task queue; the fetch function starts the run, a re-crawl of the last completed run, or skips
 * it while the previous run still runs, counting the skip.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import type { CliIo } from '../../cli/cli-io.ts';
import { listCommand } from '../../cli/list-command.ts';
import { resultsCommand } from '../../cli/results-command.ts';
import { scheduleCommand } from '../../cli/schedule-command.ts';
import { countersKey } from '../../lambdas/adapters/frontier-schema.ts';
import { ScheduleStore } from '../../lambdas/adapters/schedule-store.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import type { EventEnvelope } from '../../local/eventbridge-server.ts';
import { EVENTS_LOG, type LocalAws, SCHEDULES_FILE, startLocalAws } from '../../local/local-aws.ts';
import { Capture } from '../fixtures/capture.ts';
import { startCloudFormationStandIn } from '../fixtures/cloudformation-stand-in.ts';
import { assertValidEvent } from '../fixtures/event-schemas.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';
import { waitFor } from '../fixtures/wait-for.ts';

let site: TestSite;
let aws: LocalAws;
let tempDir: string;
let stateDir: string;
/** Holds the slow page's answer until the test lets it go. */
let releaseSlow: () => void = () => {};
const slowGate = () =>
  new Promise<void>((resolve) => {
    releaseSlow = resolve;
  });
const slowAnswered = slowGate();

async function cli(command: (args: string[], io?: Partial<CliIo>) => Promise<number>, ...args: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await command([...args, '--state-dir', stateDir], { stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

async function ok(command: (args: string[], io?: Partial<CliIo>) => Promise<number>, ...args: string[]) {
  const run = await cli(command, ...args);
  assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

interface Listed {
  name: string;
  running?: string;
  last?: string;
  runs: number;
  skipped: number;
  next?: string;
}

async function schedules(): Promise<Map<string, Listed>> {
  const lines = (await ok(scheduleCommand, 'list', '--json')).trim().split('\n').filter(Boolean);
  return new Map(lines.map((line) => JSON.parse(line) as Listed).map((s) => [s.name, s]));
}

async function crawlStates(): Promise<Map<string, string>> {
  const lines = (await ok(listCommand, '--json')).trim().split('\n').filter(Boolean);
  return new Map(
    lines
      .map((line) => JSON.parse(line) as { crawlId: string; state: string })
      .map((c) => [c.crawlId, c.state]),
  );
}

before(async () => {
  site = await startSite({
    '/': html('<a href="/a">a</a>'),
    '/a': html('page a'),
    '/new': html('a page the earlier crawls never saw'),
    '/slow': (_request, response) => {
      void slowAnswered.then(() => {
        response.writeHead(200, { 'content-type': 'text/html' });
        response.end('slow page');
      });
    },
  });
  tempDir = await mkdtemp(join(tmpdir(), 'schedules-'));
  stateDir = join(tempDir, 'state');
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    stateDir,
    handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    log: () => {},
  });
  await aws.start();
});

after(async () => {
  releaseSlow();
  await aws?.stop();
  await site?.close();
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

describe('schedules on the local runtime', () => {
  let first: string;

  it('fires at its minute in its time zone, and its run crawls the seeds', async () => {
    const added = await cli(
      scheduleCommand,
      'add',
      'nightly',
      '--cron',
      '0 3 * * *',
      '--timezone',
      'Europe/Paris',
      `${site.origin}/`,
      '--allow-private',
      '--delay',
      '0',
      // Every run after the first is a re-crawl: no --since needed with it.
      '--page-events',
    );
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stderr,
      /cron\(0 3 \* \* \? \*\) in Europe\/Paris; next run \d{4}-\d\d-\d\dT02:00:00\.000Z/,
    );
    const scheduler = aws.scheduler;
    assert.ok(scheduler);
    // 03:00 in Paris is 02:00 UTC in December: nothing at 03:00 UTC.
    assert.deepEqual(await scheduler.fireAt(new Date('2026-12-05T03:00:00Z')), []);
    assert.deepEqual(await scheduler.fireAt(new Date('2026-12-05T02:00:00Z')), ['nightly']);
    await waitFor(async () => (await schedules()).get('nightly')?.running, {
      what: 'the first run to start',
    });
    await aws.waitForIdle({ timeoutMs: 120_000 });
    const listed = (await schedules()).get('nightly');
    first = listed?.running ?? '';
    assert.equal(first, 'nightly-20261205T020000Z', 'named by the time it fired for');
    assert.equal(listed?.runs, 1);
    assert.equal(listed?.last, undefined);
    assert.equal((await crawlStates()).get(first), 'complete');
    const lines = (await ok(resultsCommand, first))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(lines.map((line) => line.url).sort(), [`${site.origin}/`, `${site.origin}/a`]);
    assert.ok(
      lines.every((line) => line.change === undefined),
      'a first run is no re-crawl',
    );
  });

  it('its next run is a re-crawl of the last completed run', async () => {
    // A firing's time is at its minute's start, as Scheduler gives it.
    assert.deepEqual(await aws.scheduler?.fireAt(new Date('2026-12-06T02:00:41Z')), ['nightly']);
    await waitFor(async () => ((await schedules()).get('nightly')?.runs ?? 0) >= 2, {
      what: 'the second run',
    });
    await aws.waitForIdle({ timeoutMs: 120_000 });
    const listed = (await schedules()).get('nightly');
    assert.equal(listed?.last, first, 'the second run follows the first');
    const second = listed?.running ?? '';
    assert.equal(second, 'nightly-20261206T020000Z');
    assert.equal((await crawlStates()).get(second), 'complete');
    const lines = (await ok(resultsCommand, second))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(lines.map((line) => [line.url, line.change]).sort(), [
      [`${site.origin}/`, 'same'],
      [`${site.origin}/a`, 'same'],
    ]);
  });

  it('a firing while the previous run still runs is skipped and counted, never stacked', async () => {
    await ok(
      scheduleCommand,
      'add',
      'slowpoke',
      '--cron',
      '*/5 10 * * *',
      `${site.origin}/slow`,
      '--allow-private',
    );
    const hits = site.hits.get('/slow') ?? 0;
    assert.deepEqual(await aws.scheduler?.fireAt(new Date('2026-12-05T10:05:00Z')), ['slowpoke']);
    await waitFor(() => (site.hits.get('/slow') ?? 0) > hits, { what: 'the slow run to reach its page' });
    const running = (await schedules()).get('slowpoke')?.running;
    assert.ok(running);
    assert.equal((await crawlStates()).get(running), 'running');
    assert.deepEqual(await aws.scheduler?.fireAt(new Date('2026-12-05T10:10:00Z')), ['slowpoke']);
    await waitFor(async () => (await schedules()).get('slowpoke')?.skipped === 1, {
      what: 'the skip to be counted',
    });
    // Reported as an event too, valid against its schema, naming the run that did not start.
    const skipped = await waitFor(
      async () =>
        (await readFile(join(stateDir, EVENTS_LOG), 'utf8'))
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as EventEnvelope)
          .find((event) => event['detail-type'] === 'Crawl Skipped'),
      { what: 'the Crawl Skipped event' },
    );
    assertValidEvent({ kind: 'skipped', detail: skipped.detail });
    assert.deepEqual(
      { ...(skipped.detail as Record<string, unknown>), at: undefined },
      {
        v: 1,
        eventId: 'slowpoke-20261205T101000Z:skipped',
        crawlId: 'slowpoke-20261205T101000Z',
        at: undefined,
        schedule: 'slowpoke',
        running,
      },
    );
    releaseSlow();
    await aws.waitForIdle({ timeoutMs: 120_000 });
    const listed = (await schedules()).get('slowpoke');
    assert.equal(listed?.runs, 1, 'one run only');
    assert.equal(listed?.running, running);
    const runs = [...(await crawlStates()).keys()].filter((id) => id.startsWith('slowpoke-'));
    assert.deepEqual(runs, [running]);
    assert.equal((await crawlStates()).get(running), 'complete');
  });

  it('one firing delivered twice starts one run, and is not counted a skip', async () => {
    const before = (await schedules()).get('nightly');
    const firing = new Date('2026-12-07T02:00:00Z');
    assert.deepEqual(await aws.scheduler?.fireAt(firing), ['nightly']);
    assert.deepEqual(await aws.scheduler?.fireAt(firing), ['nightly']);
    await waitFor(async () => (await schedules()).get('nightly')?.running === 'nightly-20261207T020000Z', {
      what: 'the run of that firing',
    });
    await aws.waitForIdle({ timeoutMs: 120_000 });
    const after = (await schedules()).get('nightly');
    assert.equal(after?.runs, (before?.runs ?? 0) + 1);
    assert.equal(after?.skipped, before?.skipped);
    const runs = [...(await crawlStates()).keys()].filter((id) => id.startsWith('nightly-'));
    assert.equal(runs.length, 3);
  });

  it('`schedule run` fires it now', async () => {
    const before = (await schedules()).get('nightly')?.runs ?? 0;
    assert.match(await ok(scheduleCommand, 'run', 'nightly'), /schedule nightly fired/);
    await waitFor(async () => ((await schedules()).get('nightly')?.runs ?? 0) > before, { what: 'the run' });
    await aws.waitForIdle({ timeoutMs: 120_000 });
    const listed = (await schedules()).get('nightly');
    assert.equal(listed?.last, 'nightly-20261207T020000Z');
    assert.equal((await crawlStates()).get(listed?.running ?? ''), 'complete');
  });

  it('a run whose counters have expired (30 days idle) is known complete by its summary, and followed', async () => {
    const before = (await schedules()).get('nightly');
    const previous = String(before?.running);
    assert.equal((await crawlStates()).get(previous), 'complete');
    // What the table's TTL does a month after the run's last activity.
    await aws.clients.dynamodb.send(
      new DeleteItemCommand({ TableName: aws.outputs.FrontierTableName, Key: countersKey(previous) }),
    );
    assert.deepEqual(await aws.scheduler?.fireAt(new Date('2027-01-08T02:00:00Z')), ['nightly']);
    await waitFor(async () => (await schedules()).get('nightly')?.running === 'nightly-20270108T020000Z', {
      what: 'the run after the expired one',
    });
    await aws.waitForIdle({ timeoutMs: 120_000 });
    const listed = (await schedules()).get('nightly');
    assert.equal(listed?.last, previous, 'it follows the run whose counters expired');
    assert.equal((await crawlStates()).get('nightly-20270108T020000Z'), 'complete');
    const changes = (await ok(resultsCommand, 'nightly-20270108T020000Z'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).change);
    assert.deepEqual(changes, ['same', 'same']);
  });

  it('a run claimed but never stored (its start failed) is started by the retry of its firing', async () => {
    const before = (await schedules()).get('nightly');
    const previous = String(before?.running);
    const firing = new Date('2027-02-08T02:00:00Z');
    // What a start that failed after its claim leaves: the claim, and no crawl.
    const store = new ScheduleStore(aws.clients.dynamodb, String(aws.outputs.FrontierTableName));
    assert.ok(
      await store.claimRun('nightly', previous, {
        crawlId: 'nightly-20270208T020000Z',
        since: previous,
        at: firing,
      }),
    );
    assert.equal((await crawlStates()).get('nightly-20270208T020000Z'), undefined);
    // SQS delivers the firing again.
    assert.deepEqual(await aws.scheduler?.fireAt(firing), ['nightly']);
    await waitFor(async () => (await crawlStates()).get('nightly-20270208T020000Z') === 'complete', {
      what: 'the resumed run',
    });
    await aws.waitForIdle({ timeoutMs: 120_000 });
    const listed = (await schedules()).get('nightly');
    assert.equal(listed?.runs, (before?.runs ?? 0) + 1, 'one run: the claim counted it');
    assert.equal(listed?.last, previous);
    const changes = (await ok(resultsCommand, 'nightly-20270208T020000Z'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).change);
    assert.deepEqual(changes, ['same', 'same'], 'a re-crawl of the run before');
  });

  it('schedules are kept in the state directory, and removed from both places', async () => {
    const kept = JSON.parse(await readFile(join(stateDir, SCHEDULES_FILE), 'utf8')) as Array<{
      Name: string;
    }>;
    assert.deepEqual(kept.map((s) => s.Name).sort(), ['nightly', 'slowpoke']);
    assert.match(
      await ok(scheduleCommand, 'remove', 'slowpoke'),
      /schedule slowpoke removed; the crawls it ran stay/,
    );
    const gone = await cli(scheduleCommand, 'remove', 'slowpoke');
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /no schedule named slowpoke/);
    const left = JSON.parse(await readFile(join(stateDir, SCHEDULES_FILE), 'utf8')) as Array<{
      Name: string;
    }>;
    assert.deepEqual(
      left.map((s) => s.Name),
      ['nightly'],
    );
    assert.deepEqual([...(await schedules()).keys()], ['nightly']);
    // Its runs are crawls like any other, and stay.
    assert.ok([...(await crawlStates()).keys()].some((id) => id.startsWith('slowpoke-')));
  });

  it('a name taken, a run of no schedule: one line each', async () => {
    const taken = await cli(
      scheduleCommand,
      'add',
      'nightly',
      '--cron',
      '0 4 * * *',
      `${site.origin}/`,
      '--allow-private',
    );
    assert.equal(taken.code, 1);
    assert.match(
      taken.stderr,
      /^a schedule named nightly already exists in .*; remove it first, or choose another name\n$/,
    );
    const none = await cli(scheduleCommand, 'run', 'nothing');
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^no schedule named nothing in /);
  });
});

describe('a stack deployed before schedules', () => {
  it('is told to deploy again, in one line, and nothing is stored', async () => {
    const { ScheduleGroupName: _group, SchedulerRoleArn: _role, TaskQueueArn: _arn, ...older } = aws.outputs;
    const cfn = await startCloudFormationStandIn(
      {
        Older: {
          stackId: 'arn:aws:cloudformation:us-east-1:000000000000:stack/Older/1',
          status: 'UPDATE_COMPLETE',
          outputs: older,
        },
      },
      aws.endpoints.s3,
    );
    try {
      const stdout = new Capture();
      const stderr = new Capture();
      const code = await scheduleCommand(
        [
          'add',
          'too-early',
          '--cron',
          '0 3 * * *',
          `${site.origin}/`,
          '--stack',
          'Older',
          '--endpoint',
          cfn.endpoint,
        ],
        { stdout, stderr },
      );
      assert.equal(code, 1);
      assert.match(
        stderr.text,
        /^stack Older .* has no ScheduleGroupName, SchedulerRoleArn or TaskQueueArn output: it was deployed before schedules; deploy it again \(npx cdk deploy\) to add them\n$/,
      );
      assert.ok(!(await schedules()).has('too-early'));
    } finally {
      await cfn.close();
    }
  });
});

describe('a JSON task with since starts a re-crawl from the task queue', () => {
  /** The TaskDLQ's copy of `body`, if it is there (received, so hidden from the next look a while). */
  const dlqCopy = async (body: object) => {
    const { Messages } = await aws.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: aws.outputs.TaskDlqUrl,
        MessageAttributeNames: ['All'],
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
      }),
    );
    return Messages?.find((message) => message.Body === JSON.stringify(body));
  };
  const send = (body: object) =>
    aws.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: aws.outputs.TaskQueueUrl, MessageBody: JSON.stringify(body) }),
    );

  it("with the earlier crawl's options and seeds, plus the task's URL; a second task of it is admitted as any task", async () => {
    await send({
      v: 1,
      crawlId: 'by-task',
      url: `${site.origin}/`,
      depth: 0,
      since: 'nightly-20261205T020000Z',
    });
    await send({
      v: 1,
      crawlId: 'by-task',
      url: `${site.origin}/new`,
      depth: 0,
      since: 'nightly-20261205T020000Z',
    });
    await waitFor(async () => (await crawlStates()).get('by-task') === 'complete', {
      what: 'the re-crawl to complete',
    });
    await aws.waitForIdle({ timeoutMs: 120_000 });
    const lines = (await ok(resultsCommand, 'by-task'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(lines.map((line) => [line.url, line.change, line.status]).sort(), [
      [`${site.origin}/`, 'same', 200],
      [`${site.origin}/a`, 'same', 200],
      [`${site.origin}/new`, 'new', 200],
    ]);
    // The schedule's --page-events came along with its options: the new page is announced.
    const pageEvents = (await readFile(join(stateDir, EVENTS_LOG), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as EventEnvelope)
      .filter((event) => event['detail-type'] === 'Page Changed')
      .map((event) => event.detail as { crawlId: string; url: string; change: string });
    assert.deepEqual(
      pageEvents.map(({ crawlId, url, change }) => [crawlId, url, change]),
      [['by-task', `${site.origin}/new`, 'new']],
    );
  });

  it('a task may not widen the crawl it follows: a URL outside its scope is parked with the reason', async () => {
    const body = {
      v: 1,
      crawlId: 'by-task-wider',
      url: 'http://127.0.0.9:9/elsewhere',
      depth: 0,
      since: 'nightly-20261205T020000Z',
    };
    await send(body);
    const parked = await waitFor(async () => dlqCopy(body), { what: 'the task in the TaskDLQ' });
    assert.equal(parked.MessageAttributes?.code?.StringValue, 'since-refused');
    assert.match(
      String(parked.MessageAttributes?.reason?.StringValue),
      /^since nightly-20261205T020000Z: http:\/\/127\.0\.0\.9:9\/elsewhere is outside that crawl's scope/,
    );
    assert.equal((await crawlStates()).get('by-task-wider'), undefined);
  });

  it('a since that names no finished crawl parks the task in the TaskDLQ with the reason', async () => {
    const body = { v: 1, crawlId: 'by-task-2', url: `${site.origin}/`, depth: 0, since: 'no-such-crawl' };
    await send(body);
    const parked = await waitFor(async () => dlqCopy(body), { what: 'the task in the TaskDLQ' });
    assert.equal(parked.MessageAttributes?.code?.StringValue, 'since-refused');
    assert.match(
      String(parked.MessageAttributes?.reason?.StringValue),
      /^since no-such-crawl: no such crawl here/,
    );
    assert.equal((await crawlStates()).get('by-task-2'), undefined);
  });
});
