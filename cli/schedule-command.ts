/**
 * `crawler schedule add|list|remove|run`: crawls that run on a cron (docs/crawling.md, "Schedules").
 * `add` stores the schedule's definition in the frontier table and creates an EventBridge Scheduler
 * schedule in the stack's group that sends `{"kind":"scheduled"}` to the task queue as the stack's
 * SchedulerRole; the fetch function starts each run, a re-crawl of the last completed one, or skips
 * it when the previous run still runs (lambdas/submission/scheduled-run.ts). `crawler local` fires
 * the schedules of its embedded Scheduler itself.
 */
import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { ScheduleExistsError, ScheduleStore } from '../lambdas/adapters/schedule-store.ts';
import {
  awsCronExpression,
  CronError,
  checkTimeZone,
  nextRun,
  parseCron,
} from '../lambdas/core/base/index.ts';
import {
  parseCrawlConfig,
  SCHEDULE_NAME_PATTERN,
  SCHEDULE_NAME_RULE,
  type ScheduleDefinition,
  ScheduledCrawlSchema,
  scheduledRunMessage,
  scheduleTargetInput,
} from '../lambdas/core/crawl/index.ts';
import { OUTPUTS, STACK_NAME } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import type { LocatedStack } from '../local/stack-locator.ts';
import { cliIo, write } from './cli-io.ts';
import { CRAWL_OPTIONS_HELP, parseCrawlOptions } from './crawl-options.ts';
import { type Command, defineCommand } from './define-command.ts';
import { extractOptions } from './own-options.ts';
import { STACK_OPTIONS, withStack } from './stack-access.ts';
import { UsageError } from './usage-error.ts';

export const SCHEDULE_USAGE = `usage: crawler schedule add NAME --cron "EXPR" [--timezone TZ] URL... [crawl options]
       crawler schedule list [--json]
       crawler schedule remove NAME
       crawler schedule run NAME
crawls that run on a cron; each run re-crawls the schedule's last completed run (--since), and a run
whose previous run still runs is skipped and counted, never stacked
  NAME                 ${SCHEDULE_NAME_RULE}; each run's crawl id is NAME-<UTC time>, e.g. NAME-20261205T030000Z
  --cron "EXPR"        5 fields (minute hour day month weekday, as Unix cron) or EventBridge Scheduler's 6
                       (minute hour day month weekday year, weekday 1-7 from Sunday, ? in day or weekday)
  --timezone TZ        the cron's time zone, an IANA name such as Europe/Paris (default UTC)
  run NAME             fire the schedule now (the same message the Scheduler sends)
  --json               list: one JSON object per schedule
  --stack NAME         a deployed stack (default ${STACK_NAME}): the schedule goes to its EventBridge Scheduler group
  --endpoint URL       a running \`crawler local\` (it fires the schedules) or LocalStack
  --state-dir DIR      the embedded AWS's state: schedules added there fire while \`crawler local\` runs on it
${CRAWL_OPTIONS_HELP.replace(/\n {2}--concurrency N[^\n]*/, '')}
Not with a schedule: --since (each run follows the last one), --seeds-file, --sitemap, --events.`;

const SUBCOMMANDS = ['add', 'list', 'remove', 'run'] as const;

export const scheduleCommand: Command = async (args, overrides = {}) => {
  const [sub, ...rest] = args;
  const command = SUBCOMMANDS.find((name) => name === sub);
  if (command !== undefined) return SUBCOMMAND_RUNNERS[command](rest, overrides);
  if (sub === '--help' || sub === '-h') {
    await write(cliIo(overrides).stdout, `${SCHEDULE_USAGE}\n`);
    return 0;
  }
  throw new UsageError(
    sub === undefined
      ? `schedule needs a subcommand: ${SUBCOMMANDS.join(', ')} (crawler schedule --help)`
      : `schedule: unknown subcommand ${JSON.stringify(sub)}; expected one of ${SUBCOMMANDS.join(', ')}`,
  );
};

const OWN_ADD = { cron: 'string', timezone: 'string', stack: 'string' } as const;

const addCommand = defineCommand({
  usage: SCHEDULE_USAGE,
  parse: (args: string[]) => {
    const { own, rest } = extractOptions(args, OWN_ADD, SCHEDULE_USAGE);
    const [name, ...urls] = rest;
    if (name === undefined || name.startsWith('-'))
      throw new UsageError('schedule add needs a NAME first: crawler schedule add NAME --cron "EXPR" URL...');
    if (!SCHEDULE_NAME_PATTERN.test(name))
      throw new UsageError(`schedule name expects ${SCHEDULE_NAME_RULE}, got ${JSON.stringify(name)}`);
    if (own.cron === undefined)
      throw new UsageError('schedule add needs --cron "EXPR", e.g. --cron "0 3 * * *"');
    const timezone = own.timezone ?? 'UTC';
    let cron: ReturnType<typeof parseCron>;
    try {
      cron = parseCron(own.cron);
      checkTimeZone(timezone);
    } catch (error) {
      if (error instanceof CronError) throw new UsageError(error.message);
      throw error;
    }
    let crawl: ReturnType<typeof parseCrawlOptions>;
    try {
      crawl = parseCrawlOptions(urls, {
        usage: SCHEDULE_USAGE,
        ownOptions: Object.keys(OWN_ADD),
        recrawls: true,
      });
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      throw new UsageError(
        error.message.replace('crawl needs at least one URL', 'schedule add needs at least one URL to crawl'),
      );
    }
    const refused = (
      [
        ['--since', crawl.since],
        ['--seeds-file', crawl.seedsFile],
        ['--sitemap', crawl.sitemap],
        ['--events', crawl.events],
        ['--out', crawl.out],
        ['--markdown-dir', crawl.markdownDir],
        ['--resume', crawl.resume],
        ['--concurrency', crawl.concurrency],
        ['--header, --cookie, --cookie-file or --basic-auth', crawl.credentials],
      ] as const
    ).find(([, value]) => value !== undefined);
    if (refused !== undefined)
      throw new UsageError(
        `schedule add has no ${refused[0]}: a schedule's runs start on the stack, each a re-crawl of the last (docs/crawling.md, "Schedules")`,
      );
    let definition: ScheduleDefinition;
    try {
      const config = parseCrawlConfig({
        ...crawl.config,
        crawlId: name,
        seeds: crawl.urls,
        createdAt: new Date().toISOString(),
      });
      definition = {
        name,
        cron: cron.source,
        timezone,
        crawl: ScheduledCrawlSchema.parse(config),
        createdAt: new Date().toISOString(),
      };
    } catch (error) {
      throw new UsageError(`invalid crawl: ${(error as Error).message}`);
    }
    return { definition, target: targetOf(own.stack, crawl.endpoint, crawl.stateDir), quiet: crawl.quiet };
  },
  run: async ({ io, definition, target, quiet }) =>
    withStack(target, io, async (stack) => {
      const where = scheduleTarget(stack);
      if (typeof where === 'string') {
        io.stderr.write(where);
        return 1;
      }
      const schedules = new ScheduleStore(stack.clients.dynamodb, table(stack));
      try {
        await schedules.add(definition);
      } catch (error) {
        if (!(error instanceof ScheduleExistsError)) throw error;
        io.stderr.write(
          `${error.message} in ${stack.description}; remove it first, or choose another name\n`,
        );
        return 1;
      }
      const cron = parseCron(definition.cron);
      try {
        await scheduler(stack).send(
          new CreateScheduleCommand({
            Name: definition.name,
            GroupName: where.group,
            ScheduleExpression: awsCronExpression(cron),
            ScheduleExpressionTimezone: definition.timezone,
            FlexibleTimeWindow: { Mode: 'OFF' },
            Target: {
              Arn: where.queueArn,
              RoleArn: where.roleArn,
              Input: scheduleTargetInput(definition.name),
            },
            Description:
              `serverless-crawler schedule ${definition.name}: ${definition.crawl.seeds.join(' ')}`.slice(
                0,
                512,
              ),
          }),
        );
      } catch (error) {
        // Without its Scheduler schedule the definition would never run: it goes too.
        await schedules.remove(definition.name);
        if (error instanceof ConflictException) {
          io.stderr.write(
            `the stack's Scheduler group already has a schedule named ${definition.name}; \`crawler schedule remove ${definition.name}\` clears it\n`,
          );
          return 1;
        }
        throw error;
      }
      const next = nextRun(cron, definition.timezone, new Date());
      if (!quiet)
        io.stderr.write(
          `schedule ${definition.name} added to ${stack.description}: ${awsCronExpression(cron)} in ${definition.timezone}` +
            `; next run ${next === undefined ? 'never (within five years)' : next.toISOString()}\n`,
        );
      await write(io.stdout, `${definition.name}\n`);
      return 0;
    }),
});

const listCommand = defineCommand({
  usage: SCHEDULE_USAGE,
  options: { json: { type: 'boolean' }, ...STACK_OPTIONS },
  run: async ({ io, values, positionals }) => {
    if (positionals.length > 0) throw new UsageError('schedule list takes no arguments');
    return withStack(stackTarget(values), io, async (stack) => {
      const now = new Date();
      for await (const { definition, runs } of new ScheduleStore(
        stack.clients.dynamodb,
        table(stack),
      ).list()) {
        const next = nextRun(parseCron(definition.cron), definition.timezone, now)?.toISOString();
        const line = {
          name: definition.name,
          cron: definition.cron,
          timezone: definition.timezone,
          seeds: definition.crawl.seeds,
          ...(next === undefined ? {} : { next }),
          ...runs,
        };
        await write(
          io.stdout,
          values.json
            ? `${JSON.stringify(line)}\n`
            : `${definition.name}\t${definition.cron} (${definition.timezone})\tnext ${next ?? 'never'}\t` +
                `runs ${runs.runs}, skipped ${runs.skipped}\tlast ${runs.last ?? '-'}\tlatest ${runs.running ?? '-'}\n`,
        );
      }
      return 0;
    });
  },
});

const removeCommand = defineCommand({
  usage: SCHEDULE_USAGE,
  options: STACK_OPTIONS,
  run: async ({ io, values, positionals }) => {
    const name = oneName(positionals, 'remove');
    return withStack(stackTarget(values), io, async (stack) => {
      const where = scheduleTarget(stack);
      if (typeof where === 'string') {
        io.stderr.write(where);
        return 1;
      }
      let existed = false;
      try {
        await scheduler(stack).send(new DeleteScheduleCommand({ Name: name, GroupName: where.group }));
        existed = true;
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw error;
      }
      existed = (await new ScheduleStore(stack.clients.dynamodb, table(stack)).remove(name)) || existed;
      if (!existed) {
        io.stderr.write(noSuchSchedule(name, stack));
        return 1;
      }
      await write(io.stdout, `schedule ${name} removed; the crawls it ran stay\n`);
      return 0;
    });
  },
});

const runCommand = defineCommand({
  usage: SCHEDULE_USAGE,
  options: STACK_OPTIONS,
  run: async ({ io, values, positionals }) => {
    const name = oneName(positionals, 'run');
    return withStack(stackTarget(values), io, async (stack) => {
      if ((await new ScheduleStore(stack.clients.dynamodb, table(stack)).get(name)) === undefined) {
        io.stderr.write(noSuchSchedule(name, stack));
        return 1;
      }
      await stack.clients.sqs.send(
        new SendMessageCommand({
          QueueUrl: requiredOutput(stack.outputs, OUTPUTS.taskQueueUrl, stack.description),
          MessageBody: scheduledRunMessage(name, new Date()),
        }),
      );
      await write(
        io.stdout,
        `schedule ${name} fired: its run starts (or is skipped if the last one still runs); \`crawler schedule list\` shows which\n`,
      );
      return 0;
    });
  },
});

const SUBCOMMAND_RUNNERS: Record<(typeof SUBCOMMANDS)[number], Command> = {
  add: addCommand,
  list: listCommand,
  remove: removeCommand,
  run: runCommand,
};

function oneName(positionals: string[], sub: string): string {
  const [name, ...more] = positionals;
  if (name === undefined || more.length > 0)
    throw new UsageError(`schedule ${sub} needs exactly one schedule NAME`);
  if (!SCHEDULE_NAME_PATTERN.test(name))
    throw new UsageError(`schedule name expects ${SCHEDULE_NAME_RULE}, got ${JSON.stringify(name)}`);
  return name;
}

type Target = { endpoint?: string | undefined; stack?: string | undefined; 'state-dir'?: string | undefined };

/** Like submit: the deployed stack unless a local one was named. */
function targetOf(
  stack: string | undefined,
  endpoint: string | undefined,
  stateDir: string | undefined,
): Target {
  if (stack !== undefined && stateDir !== undefined)
    throw new UsageError('give --stack or --state-dir, not both');
  return {
    endpoint,
    'state-dir': stateDir,
    stack: stack ?? (endpoint === undefined && stateDir === undefined ? STACK_NAME : undefined),
  };
}

function stackTarget(values: Target): Target {
  return targetOf(values.stack, values.endpoint, values['state-dir']);
}

/**
 * Where the stack's schedules go, or one line saying why it has none: a stack deployed before
 * schedules lacks the outputs (and the group and role behind them) until it is deployed again.
 */
function scheduleTarget(stack: LocatedStack): { group: string; queueArn: string; roleArn: string } | string {
  const group = stack.outputs[OUTPUTS.scheduleGroupName];
  const queueArn = stack.outputs[OUTPUTS.taskQueueArn];
  const roleArn = stack.outputs[OUTPUTS.schedulerRoleArn];
  if (group && queueArn && roleArn) return { group, queueArn, roleArn };
  return `${stack.description} has no ${OUTPUTS.scheduleGroupName}, ${OUTPUTS.schedulerRoleArn} or ${OUTPUTS.taskQueueArn} output: it was deployed before schedules; deploy it again (npx cdk deploy) to add them\n`;
}

function noSuchSchedule(name: string, stack: LocatedStack): string {
  return `no schedule named ${name} in ${stack.description}; \`crawler schedule list\` shows them\n`;
}

function table(stack: LocatedStack): string {
  return requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description);
}

function scheduler(stack: LocatedStack): SchedulerClient {
  const client = stack.clients.scheduler;
  if (client === undefined) throw new Error(`${stack.description} has no EventBridge Scheduler endpoint`);
  return client;
}
