/**
 * The local EventBridge Scheduler (local/scheduler-server.ts) over the wire, through the SDK's
 * SchedulerClient: as strict as Scheduler on what a caller can get wrong (names, groups, expressions,
 * targets, Input size), hostile requests answered with one error each, schedules kept in their file,
 * and a firing's message sent once per due minute with the firing's time filled in.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ConflictException,
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  ValidationException,
} from '@aws-sdk/client-scheduler';
import { SCHEDULED_TIME } from '../../lambdas/core/crawl/index.ts';
import { clientConfig, clientSettings } from '../../local/aws-clients.ts';
import type { RunningServer } from '../../local/fauxqs-server.ts';
import { LocalScheduler, startSchedulerServer } from '../../local/scheduler-server.ts';

const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:tasks';
const ROLE_ARN = 'arn:aws:iam::000000000000:role/scheduler';

describe('the local Scheduler', () => {
  const scheduler = new LocalScheduler();
  const sent: Array<{ queueUrl: string; body: string; role: string }> = [];
  let server: RunningServer;
  let client: SchedulerClient;
  let dir: string;
  let file: string;

  const schedule = (overrides: Partial<CreateScheduleCommandInput> = {}): CreateScheduleCommandInput => ({
    Name: 'nightly',
    GroupName: 'crawls',
    ScheduleExpression: 'cron(0 3 * * ? *)',
    ScheduleExpressionTimezone: 'Europe/Paris',
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN, Input: `{"at":"${SCHEDULED_TIME}"}` },
    ...overrides,
  });

  const configure = () =>
    scheduler.configure({
      region: 'us-east-1',
      accountId: '000000000000',
      groups: ['default', 'crawls'],
      queueUrlOf: (arn) => (arn === QUEUE_ARN ? 'http://queue/tasks' : undefined),
      deliver: async (queueUrl, body, role) => {
        sent.push({ queueUrl, body, role });
      },
      file,
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'local-scheduler-'));
    file = join(dir, 'schedules.json');
    await configure();
    server = await startSchedulerServer(scheduler);
    client = new SchedulerClient(clientConfig(server.url, clientSettings({ maxAttempts: 1 })));
  });
  after(async () => {
    client?.destroy();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates, reads and deletes a schedule, and keeps it in its file across a restart', async () => {
    const created = await client.send(new CreateScheduleCommand(schedule()));
    assert.equal(created.ScheduleArn, 'arn:aws:scheduler:us-east-1:000000000000:schedule/crawls/nightly');
    const got = await client.send(new GetScheduleCommand({ Name: 'nightly', GroupName: 'crawls' }));
    assert.equal(got.ScheduleExpression, 'cron(0 3 * * ? *)');
    assert.equal(got.Target?.RoleArn, ROLE_ARN);
    await assert.rejects(
      client.send(new CreateScheduleCommand(schedule())),
      (error: unknown) => error instanceof ConflictException,
    );
    // A restart reads the file back.
    await configure();
    const kept = JSON.parse(await readFile(file, 'utf8')) as Array<{ Name: string }>;
    assert.deepEqual(
      kept.map((s) => s.Name),
      ['nightly'],
    );
    assert.equal(
      (await client.send(new GetScheduleCommand({ Name: 'nightly', GroupName: 'crawls' }))).Name,
      'nightly',
    );
    await client.send(new DeleteScheduleCommand({ Name: 'nightly', GroupName: 'crawls' }));
    await assert.rejects(
      client.send(new GetScheduleCommand({ Name: 'nightly', GroupName: 'crawls' })),
      (error: unknown) => error instanceof ResourceNotFoundException,
    );
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), []);
  });

  it('fires a schedule once in each minute its cron matches, in its time zone, as its role, with the time filled in', async () => {
    await client.send(new CreateScheduleCommand(schedule({ Name: 'fires' })));
    sent.length = 0;
    assert.deepEqual(
      await scheduler.fireAt(new Date('2026-12-05T03:00:00Z')),
      [],
      '03:00 UTC is 04:00 in Paris',
    );
    assert.deepEqual(await scheduler.fireAt(new Date('2026-12-05T02:00:59.999Z')), ['fires']);
    assert.deepEqual(sent, [
      { queueUrl: 'http://queue/tasks', body: '{"at":"2026-12-05T02:00:00Z"}', role: ROLE_ARN },
    ]);
    await client.send(new DeleteScheduleCommand({ Name: 'fires', GroupName: 'crawls' }));
  });

  it('refuses what Scheduler refuses, or what it cannot run the same way, with one error each', async () => {
    const refused: Array<[Partial<CreateScheduleCommandInput>, RegExp, new (...args: never[]) => Error]> = [
      [{ GroupName: 'nope' }, /Schedule group nope does not exist/, ResourceNotFoundException],
      [{ ScheduleExpression: 'rate(5 minutes)' }, /cron\(…\) expressions only/, ValidationException],
      [{ ScheduleExpression: 'cron(0 3 * * *)' }, /6 fields/, ValidationException],
      [{ ScheduleExpression: 'cron(*/0 3 * * ? *)' }, /step "0" must be at least 1/, ValidationException],
      [{ ScheduleExpression: 'cron(0 3 L * ? *)' }, /L, W and # are not supported/, ValidationException],
      [{ ScheduleExpressionTimezone: 'Mars/Base' }, /not an IANA time zone/, ValidationException],
      [
        { Target: { Arn: 'arn:aws:lambda:us-east-1:000000000000:function:f', RoleArn: ROLE_ARN } },
        /the stack's queues only/,
        ValidationException,
      ],
      [
        { Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN, Input: 'x'.repeat(8193) } },
        /at most 8192 characters/,
        ValidationException,
      ],
    ];
    for (const [overrides, message, type] of refused) {
      await assert.rejects(
        client.send(new CreateScheduleCommand(schedule({ Name: 'refused', ...overrides }))),
        (error: unknown) => error instanceof type && message.test((error as Error).message),
        JSON.stringify(overrides).slice(0, 100),
      );
    }
    await assert.rejects(
      client.send(new CreateScheduleCommand(schedule({ Name: 'a/b' }))),
      (error: unknown) => error instanceof Error,
    );
  });

  it('answers hostile requests with one error each and stays up', async () => {
    const signed = {
      authorization: `AWS4-HMAC-SHA256 Credential=test/20261205/us-east-1/scheduler/aws4_request, SignedHeaders=host, Signature=${'0'.repeat(64)}`,
    };
    const raw = (method: string, path: string, body?: string, headers: Record<string, string> = signed) =>
      new Promise<{ status: number; type: string | undefined }>((resolve, reject) => {
        const req = request(`${server.url}${path}`, { method, headers }, (res) => {
          res.resume();
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, type: res.headers['x-amzn-errortype'] as string }),
          );
        });
        req.on('error', reject);
        req.end(body);
      });
    assert.equal(
      (await raw('GET', '/schedules/x', undefined, {})).status,
      403,
      'an unsigned request is refused',
    );
    assert.deepEqual(await raw('POST', '/schedules/x', '{not json'), {
      status: 400,
      type: 'ValidationException',
    });
    assert.deepEqual(await raw('POST', '/schedules/x', 'x'.repeat(70 * 1024)), {
      status: 413,
      type: 'ValidationException',
    });
    assert.deepEqual(await raw('POST', '/schedules/x', '[]'), { status: 400, type: 'ValidationException' });
    assert.deepEqual(await raw('GET', '/schedule-groups'), { status: 400, type: 'ValidationException' });
    assert.deepEqual(await raw('GET', `/schedules/${'n'.repeat(65)}`), {
      status: 400,
      type: 'ValidationException',
    });
    assert.deepEqual(await raw('PUT', '/schedules/missing'), {
      status: 404,
      type: 'ResourceNotFoundException',
    });
    assert.deepEqual(await raw('GET', '/schedules/%E0%A4%A'), { status: 400, type: 'ValidationException' });
    await client.send(new CreateScheduleCommand(schedule({ Name: 'still-up' })));
    await client.send(new DeleteScheduleCommand({ Name: 'still-up', GroupName: 'crawls' }));
  });

  it('a damaged schedules file is refused at start, naming it; a schedule that no longer parses is reported, not fatal', async () => {
    for (const damaged of ['{not the scheduler', '[null]', '[{"Name":"x"}]', '{"Name":"x"}']) {
      await writeFile(file, damaged);
      await assert.rejects(configure(), new RegExp(`${file}: not the local scheduler's JSON`), damaged);
    }
    // Hand-edited into an expression this runner cannot run: each minute says so, nothing stops.
    const errors: string[] = [];
    await writeFile(
      file,
      JSON.stringify([
        {
          ...schedule({ Name: 'edited' }),
          Arn: 'arn:aws:scheduler:us-east-1:000000000000:schedule/crawls/edited',
          ScheduleExpression: 'cron(0 3 L * ? *)',
          State: 'ENABLED',
          FlexibleTimeWindow: { Mode: 'OFF' },
          CreationDate: 0,
          LastModificationDate: 0,
        },
      ]),
    );
    await scheduler.configure({
      region: 'us-east-1',
      accountId: '000000000000',
      groups: ['default', 'crawls'],
      queueUrlOf: () => 'http://queue/tasks',
      deliver: async () => {},
      onDeliveryError: (name, error) => errors.push(`${name}: ${String(error)}`),
      file,
    });
    assert.deepEqual(await scheduler.fireAt(new Date('2026-12-31T02:00:00Z')), []);
    assert.match(errors.join('\n'), /^edited: CronError: .*L, W and # are not supported/);
    await writeFile(file, '[]');
    await configure();
  });
});
