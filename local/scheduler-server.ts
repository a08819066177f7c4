/**
 * The local EventBridge Scheduler: CreateSchedule, GetSchedule and DeleteSchedule on the embedded
 * endpoint (REST JSON: `POST|GET|DELETE /schedules/{Name}?groupName=`), in the groups the stack's
 * template has, with `cron(…)` expressions (lambdas/core/base/cron.ts; `rate` and `at` are refused) and an
 * SQS target of the stack. Schedules are kept in a file of the state directory, so they outlive a
 * restart of `crawler local`, which fires them (`start`): at each minute, every enabled schedule
 * whose cron matches that minute in its time zone sends its target's Input to its queue. Nothing
 * fires without `start` (`crawler crawl` ends with its crawl). Tests fire a minute by `fireAt`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { z } from 'zod';
import { CronError, checkTimeZone, cronMatches, parseCron, wallClock } from '../lambdas/core/base/index.ts';
import { SCHEDULED_TIME } from '../lambdas/core/crawl/index.ts';
import type { RunningServer } from './fauxqs-server.ts';
import { readJsonBody } from './json-body.ts';
import { KeptFile, readKeptItems } from './kept-file.ts';
import { listenOnLoopback } from './loopback-listen.ts';
import { guardServer } from './request-guard.ts';

export interface SchedulerSettings {
  region: string;
  accountId: string;
  /** The schedule groups of the template, plus `default`. */
  groups: readonly string[];
  /** The queue URL of a queue ARN of the stack; undefined for anything else. */
  queueUrlOf: (arn: string) => string | undefined;
  /** Sends a firing's message as the schedule's role (`role`: its ARN). */
  deliver: (queueUrl: string, body: string, role: string) => Promise<void>;
  /** Where the schedules are kept (absent: in memory). */
  file?: string;
  /** Told of a firing that could not be delivered: it is not retried (Scheduler's own retries are not emulated). */
  onDeliveryError?: (schedule: string, error: unknown) => void;
}

/** A schedule as GetSchedule answers it, and as the file keeps it (checked when read back). */
const StoredScheduleSchema = z.object({
  Name: z.string(),
  GroupName: z.string(),
  Arn: z.string(),
  ScheduleExpression: z.string(),
  ScheduleExpressionTimezone: z.string(),
  State: z.enum(['ENABLED', 'DISABLED']),
  FlexibleTimeWindow: z.object({ Mode: z.string(), MaximumWindowInMinutes: z.number().optional() }),
  Target: z.object({ Arn: z.string(), RoleArn: z.string(), Input: z.string().optional() }),
  /** Epoch seconds, as REST JSON carries timestamps. */
  CreationDate: z.number(),
  LastModificationDate: z.number(),
});

type StoredSchedule = z.infer<typeof StoredScheduleSchema>;

const NAME = /^[0-9a-zA-Z-_.]{1,64}$/;
/** Scheduler's limit on a target's Input. */
const MAX_INPUT_CHARS = 8192;
const MAX_BODY_BYTES = 64 * 1024;

type Answer = { status: number; answer: unknown; errorType?: string };

export class LocalScheduler {
  #settings: SchedulerSettings | undefined;
  readonly #schedules = new Map<string, StoredSchedule>();
  readonly #file = new KeptFile();

  /** Loads the kept schedules (a missing file is none; a damaged one is refused, naming it). */
  async configure(settings: SchedulerSettings): Promise<void> {
    this.#settings = settings;
    this.#schedules.clear();
    if (settings.file === undefined) return;
    const kept = await readKeptItems(settings.file, z.array(StoredScheduleSchema), 'local scheduler');
    for (const schedule of kept) this.#schedules.set(keyOf(schedule.GroupName, schedule.Name), schedule);
  }

  async handle(method: string, path: string, query: URLSearchParams, body: unknown): Promise<Answer> {
    const settings = this.#settings;
    if (settings === undefined)
      return failure(404, 'ResourceNotFoundException', 'the local scheduler has no stack yet');
    const match = /^\/schedules\/([^/]+)$/.exec(path);
    if (match === null || match[1] === undefined)
      return failure(
        400,
        'ValidationException',
        `the local Scheduler serves Create, Get and DeleteSchedule only, not ${method} ${path}`,
      );
    let name: string;
    try {
      name = decodeURIComponent(match[1]);
    } catch {
      return failure(
        400,
        'ValidationException',
        `Name ${JSON.stringify(match[1])} is not valid percent-encoding`,
      );
    }
    if (!NAME.test(name))
      return failure(400, 'ValidationException', `Name ${JSON.stringify(name)} is not valid`);
    if (method === 'POST') return this.#create(name, body, settings);
    const group = query.get('groupName') ?? 'default';
    const key = keyOf(group, name);
    const schedule = this.#schedules.get(key);
    if (schedule === undefined)
      return failure(404, 'ResourceNotFoundException', `Schedule ${name} does not exist.`);
    if (method === 'GET') return { status: 200, answer: schedule };
    if (method === 'DELETE') {
      this.#schedules.delete(key);
      await this.#save();
      return { status: 200, answer: {} };
    }
    return failure(400, 'ValidationException', `method ${method} is not served`);
  }

  async #create(name: string, body: unknown, settings: SchedulerSettings): Promise<Answer> {
    const input = isObject(body) ? body : {};
    const group = typeof input.GroupName === 'string' ? input.GroupName : 'default';
    if (!settings.groups.includes(group))
      return failure(404, 'ResourceNotFoundException', `Schedule group ${group} does not exist.`);
    if (this.#schedules.has(keyOf(group, name)))
      return failure(409, 'ConflictException', `Schedule ${name} already exists.`);
    const expression = typeof input.ScheduleExpression === 'string' ? input.ScheduleExpression : '';
    const cron = /^cron\((.*)\)$/.exec(expression)?.[1];
    if (cron === undefined)
      return failure(
        400,
        'ValidationException',
        `the local Scheduler runs cron(…) expressions only, not ${JSON.stringify(expression)}`,
      );
    const timezone =
      typeof input.ScheduleExpressionTimezone === 'string' ? input.ScheduleExpressionTimezone : 'UTC';
    try {
      if (cron.trim().split(/\s+/).length !== 6) throw new CronError('a cron() expression has 6 fields');
      parseCron(cron);
      checkTimeZone(timezone);
    } catch (error) {
      if (error instanceof CronError)
        return failure(400, 'ValidationException', `Invalid Schedule Expression: ${error.message}`);
      throw error;
    }
    const window = isObject(input.FlexibleTimeWindow) ? input.FlexibleTimeWindow : undefined;
    if (typeof window?.Mode !== 'string')
      return failure(400, 'ValidationException', 'FlexibleTimeWindow.Mode is required');
    const target = isObject(input.Target) ? input.Target : {};
    const { Arn: arn, RoleArn: role, Input: text } = target;
    if (typeof arn !== 'string' || typeof role !== 'string')
      return failure(400, 'ValidationException', 'Target.Arn and Target.RoleArn are required');
    if (settings.queueUrlOf(arn) === undefined)
      return failure(
        400,
        'ValidationException',
        `the local Scheduler sends to the stack's queues only, not ${arn}`,
      );
    if (text !== undefined && (typeof text !== 'string' || text.length > MAX_INPUT_CHARS))
      return failure(400, 'ValidationException', `Target.Input is at most ${MAX_INPUT_CHARS} characters`);
    const schedule: StoredSchedule = {
      Name: name,
      GroupName: group,
      Arn: `arn:aws:scheduler:${settings.region}:${settings.accountId}:schedule/${group}/${name}`,
      ScheduleExpression: expression,
      ScheduleExpressionTimezone: timezone,
      State: input.State === 'DISABLED' ? 'DISABLED' : 'ENABLED',
      FlexibleTimeWindow: {
        Mode: window.Mode,
        ...(typeof window.MaximumWindowInMinutes === 'number'
          ? { MaximumWindowInMinutes: window.MaximumWindowInMinutes }
          : {}),
      },
      Target: { Arn: arn, RoleArn: role, ...(typeof text === 'string' ? { Input: text } : {}) },
      CreationDate: Date.now() / 1000,
      LastModificationDate: Date.now() / 1000,
    };
    this.#schedules.set(keyOf(group, name), schedule);
    await this.#save();
    return { status: 200, answer: { ScheduleArn: schedule.Arn } };
  }

  /** The schedules due in the minute of `at`, each sent to its target once; returns their names. */
  async fireAt(moment: Date): Promise<string[]> {
    const at = new Date(Math.floor(moment.getTime() / 60_000) * 60_000);
    const settings = this.#settings;
    if (settings === undefined) return [];
    const fired: string[] = [];
    for (const schedule of this.#schedules.values()) {
      if (schedule.State !== 'ENABLED') continue;
      try {
        // A schedule of a hand-edited file that no longer parses is reported at each minute, not fatal.
        const cron = parseCron(schedule.ScheduleExpression.slice('cron('.length, -1));
        if (!cronMatches(cron, wallClock(at, schedule.ScheduleExpressionTimezone))) continue;
        const queueUrl = settings.queueUrlOf(schedule.Target.Arn);
        if (queueUrl === undefined) continue;
        // As Scheduler does: the firing's time in place of its context attribute.
        const time = at.toISOString().replace(/\.\d{3}Z$/, 'Z');
        await settings.deliver(
          queueUrl,
          (schedule.Target.Input ?? '{}').replaceAll(SCHEDULED_TIME, time),
          schedule.Target.RoleArn,
        );
        fired.push(schedule.Name);
      } catch (error) {
        settings.onDeliveryError?.(schedule.Name, error);
      }
    }
    return fired;
  }

  /** Fires at the start of every minute from now on, until the returned stop is called. */
  start(now: () => number = Date.now): () => void {
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const arm = () => {
      const at = now();
      const next = Math.floor(at / 60_000) * 60_000 + 60_000;
      timer = setTimeout(() => {
        if (stopped) return;
        void this.fireAt(new Date(next)).finally(arm);
      }, next - at);
      timer.unref();
    };
    arm();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /** Written whole to a temporary file, then renamed: a crash leaves the old file or the new one. */
  async #save(): Promise<void> {
    const file = this.#settings?.file;
    if (file !== undefined) await this.#file.write(file, [...this.#schedules.values()]);
  }
}

function keyOf(group: string, name: string): string {
  return `${group}/${name}`;
}

function failure(status: number, type: string, message: string): Answer {
  return { status, answer: { Message: message }, errorType: type };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export async function startSchedulerServer(scheduler: LocalScheduler): Promise<RunningServer> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const reply = ({ status, answer, errorType }: Answer) => {
      res
        .writeHead(status, {
          'content-type': 'application/json',
          ...(errorType === undefined ? {} : { 'x-amzn-errortype': errorType }),
        })
        .end(JSON.stringify(answer));
    };
    void readJsonBody(req, MAX_BODY_BYTES).then(
      (body) => {
        if (body.kind === 'too-large')
          return reply(failure(413, 'ValidationException', `request body over ${body.limit} bytes`));
        if (body.kind === 'not-json')
          return reply(failure(400, 'ValidationException', 'the request body is not JSON'));
        const url = new URL(req.url ?? '/', 'http://local');
        scheduler
          .handle(req.method ?? 'GET', url.pathname, url.searchParams, body.kind === 'json' ? body.value : {})
          .then(reply, (error: unknown) => reply(failure(500, 'InternalServerException', String(error))));
      },
      (error: unknown) => reply(failure(400, 'ValidationException', String(error))),
    );
  });
  guardServer(server, { port: 'any' });
  return listenOnLoopback(server);
}
