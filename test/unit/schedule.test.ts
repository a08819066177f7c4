/**
 * Schedules (issue 26, point 5): the cron expressions `crawler schedule add` takes, what EventBridge
 * Scheduler is given for them, when the local scheduler fires them (in their time zone, across a
 * DST change), hostile expressions (refused with one line, in time linear in their length), and when
 * a firing starts a run or is skipped.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  awsCronExpression,
  CronError,
  checkTimeZone,
  cronMatches,
  MAX_CRON_LENGTH,
  nextRun,
  parseCron,
  wallClock,
} from '../../lambdas/core/base/index.ts';
import {
  decideRun,
  parseScheduledRun,
  runCrawlId,
  SCHEDULED_TIME,
  ScheduleDefinitionSchema,
  scheduledRunMessage,
  scheduleTargetInput,
  UNSTARTED_CLAIM_MS,
} from '../../lambdas/core/crawl/index.ts';
import { assertLinear } from '../fixtures/linear-time.ts';

const values = (set: ReadonlySet<number> | undefined) =>
  set === undefined ? undefined : [...set].sort((a, b) => a - b);

describe('cron expressions', () => {
  it('reads the five Unix fields: lists, ranges, steps, names, Sunday as 0 or 7', () => {
    const cron = parseCron('*/15 9-17/4 * JAN,jul 1-5');
    assert.deepEqual(values(cron.minutes), [0, 15, 30, 45]);
    assert.deepEqual(values(cron.hours), [9, 13, 17]);
    assert.equal(cron.days, undefined);
    assert.deepEqual(values(cron.months), [1, 7]);
    assert.deepEqual(values(cron.weekdays), [1, 2, 3, 4, 5]);
    assert.deepEqual(values(parseCron('0 0 * * 0,7').weekdays), [0]);
    assert.deepEqual(values(parseCron('0 0 * * SUN-SAT').weekdays), [0, 1, 2, 3, 4, 5, 6]);
    assert.deepEqual(values(parseCron('5/20 * * * *').minutes), [5, 25, 45]);
  });

  it("reads Scheduler's six fields, weekday 1-7 from Sunday, and gives Scheduler the same schedule", () => {
    const aws = parseCron('0 3 ? * 2-6 *');
    assert.deepEqual(values(aws.weekdays), [1, 2, 3, 4, 5], 'MON-FRI');
    assert.equal(awsCronExpression(aws), 'cron(0 3 ? * 2,3,4,5,6 *)');
    assert.equal(awsCronExpression(parseCron('0 3 * * 1-5')), 'cron(0 3 ? * 2,3,4,5,6 *)');
    assert.equal(awsCronExpression(parseCron('0 3 * * *')), 'cron(0 3 * * ? *)');
    assert.equal(awsCronExpression(parseCron('30 6 1,15 * *')), 'cron(30 6 1,15 * ? *)');
    assert.equal(awsCronExpression(parseCron('0 0 1 1 ? 2027-2028')), 'cron(0 0 1 1 ? 2027,2028)');
    assert.equal(awsCronExpression(parseCron('0 12 * * SUN')), 'cron(0 12 ? * 1 *)');
  });

  it('refuses what Scheduler or this runner cannot run, with one line naming the field', () => {
    const refused: Array<[string, RegExp]> = [
      ['*/0 * * * *', /minute field: step "0" must be at least 1/],
      ['60 * * * *', /minute field: 60 is outside 0-59/],
      ['0 24 * * *', /hour field: 24 is outside 0-23/],
      ['0 0 32 * *', /day-of-month field: 32 is outside 1-31/],
      ['0 0 * 13 *', /month field: 13 is outside 1-12/],
      ['0 0 * * 8', /day-of-week field: 8 is outside 0-7/],
      ['0 0 ? * 0 *', /day-of-week field: 0 is outside 1-7/],
      ['5-1 * * * *', /range 5-1 runs backwards/],
      ['0 0 L * *', /L, W and # are not supported/],
      ['0 0 ? * 2#1 *', /L, W and # are not supported/],
      ['0 0 15W * *', /L, W and # are not supported/],
      ['0 0 1 * MON', /both set/],
      ['0 0 * * * *', /exactly one of day-of-month and day-of-week is \?/],
      ['0 0 * *', /has 4 fields; expected 5/],
      ['@daily', /shorthands like @daily are not supported/],
      ['? 0 * * *', /\? is only allowed in day-of-month and day-of-week/],
      ['1,,2 * * * *', /an empty list item/],
      ['1/2/3 * * * *', /more than one \//],
      ['abc * * * *', /"abc" is not a number/],
      ['0 0 1 1 ? 2200', /year field: 2200 is outside 1970-2199/],
    ];
    for (const [expression, message] of refused)
      assert.throws(
        () => parseCron(expression),
        (error: unknown) => error instanceof CronError && message.test(error.message),
        expression,
      );
  });

  it('refuses an over-long expression at once, and parses in time linear in its length', () => {
    const huge = `${Array.from({ length: 10_000 }, (_, i) => i % 60).join(',')} * * * *`;
    assert.throws(() => parseCron(huge), new RegExp(`at most ${MAX_CRON_LENGTH}`));
    assertLinear({
      what: 'terms of a cron field',
      n: 20,
      time: (terms) => {
        const expression = `${Array.from({ length: terms }, (_, i) => i % 60).join(',')} * * * *`;
        const started = performance.now();
        for (let i = 0; i < 200; i++) parseCron(expression);
        return performance.now() - started;
      },
    });
  });

  it('fires by the wall clock of its time zone, across a daylight-saving change', () => {
    const cron = parseCron('0 3 * * *');
    // Paris: UTC+1 in winter, UTC+2 from 2027-03-28.
    assert.equal(
      nextRun(cron, 'Europe/Paris', new Date('2027-03-26T12:00:00Z'))?.toISOString(),
      '2027-03-27T02:00:00.000Z',
    );
    assert.equal(
      nextRun(cron, 'Europe/Paris', new Date('2027-03-27T12:00:00Z'))?.toISOString(),
      '2027-03-28T01:00:00.000Z',
    );
    assert.ok(cronMatches(cron, wallClock(new Date('2027-03-28T01:00:00Z'), 'Europe/Paris')));
    assert.ok(!cronMatches(cron, wallClock(new Date('2027-03-28T01:00:00Z'), 'UTC')));
    // From the small hours of a spring-forward day that does not match, the next day's first
    // minutes are still found (Paris: 2027-03-28 02:00 becomes 03:00).
    assert.equal(
      nextRun(parseCron('30 0 29 3 *'), 'Europe/Paris', new Date('2027-03-28T00:30:00Z'))?.toISOString(),
      '2027-03-28T22:30:00.000Z',
    );
    // Half-hour zones keep their minutes.
    assert.equal(
      nextRun(parseCron('0 9 * * *'), 'Asia/Kolkata', new Date('2026-12-05T00:00:00Z'))?.toISOString(),
      '2026-12-05T03:30:00.000Z',
    );
    // Weekdays: the next Monday 08:00 in UTC after a Saturday.
    assert.equal(
      nextRun(parseCron('0 8 * * MON'), 'UTC', new Date('2026-12-05T10:00:00Z'))?.toISOString(),
      '2026-12-07T08:00:00.000Z',
    );
  });

  it('a schedule that can never fire is shown as never, found in bounded time', () => {
    const start = Date.now();
    assert.equal(nextRun(parseCron('0 0 30 2 *'), 'UTC', new Date('2026-12-05T00:00:00Z')), undefined);
    assert.equal(nextRun(parseCron('0 0 1 1 ? 2020'), 'UTC', new Date('2026-12-05T00:00:00Z')), undefined);
    assert.ok(Date.now() - start < 30_000);
  });

  it('takes IANA time zones only', () => {
    assert.equal(checkTimeZone('Europe/Paris'), 'Europe/Paris');
    assert.throws(() => checkTimeZone('Mars/Base'), /not an IANA time zone/);
    assert.throws(() => checkTimeZone('x'.repeat(100)), /over 50 characters/);
  });
});

describe('schedule runs', () => {
  const at = new Date('2026-12-05T03:00:00.000Z');

  it('names each run by its schedule and UTC time', () => {
    assert.equal(runCrawlId('nightly', at), 'nightly-20261205T030000Z');
    assert.match(runCrawlId('n'.repeat(47), at), /^[A-Za-z0-9_-]{1,64}$/);
  });

  it('starts the first run from nothing, and later ones as re-crawls of the last completed run', () => {
    assert.deepEqual(decideRun('n', { skipped: 0, runs: 0 }, undefined, at), {
      kind: 'start',
      crawlId: 'n-20261205T030000Z',
      since: undefined,
    });
    assert.deepEqual(decideRun('n', { running: 'n-1', skipped: 0, runs: 1 }, 'complete', at), {
      kind: 'start',
      crawlId: 'n-20261205T030000Z',
      since: 'n-1',
    });
    // A cancelled run's index is partial: the run before it stays the base.
    assert.deepEqual(decideRun('n', { running: 'n-2', last: 'n-1', skipped: 0, runs: 2 }, 'cancelled', at), {
      kind: 'start',
      crawlId: 'n-20261205T030000Z',
      since: 'n-1',
    });
  });

  it('skips a firing while the previous run still runs, or is being started', () => {
    assert.deepEqual(decideRun('n', { running: 'n-1', skipped: 0, runs: 1 }, 'running', at), {
      kind: 'skip',
      crawlId: 'n-20261205T030000Z',
      running: 'n-1',
    });
    const claimedAt = new Date(at.getTime() - 1000).toISOString();
    assert.equal(
      decideRun('n', { running: 'n-1', claimedAt, skipped: 0, runs: 1 }, undefined, at).kind,
      'skip',
    );
    // A claim never stored (its start failed) holds the schedule back only so long.
    const stale = new Date(at.getTime() - UNSTARTED_CLAIM_MS - 1).toISOString();
    assert.equal(
      decideRun('n', { running: 'n-1', claimedAt: stale, skipped: 0, runs: 1 }, undefined, at).kind,
      'start',
    );
  });

  it('every copy of one firing names the same run, and is no second run', () => {
    const runs = {
      running: runCrawlId('n', at),
      claimedAt: at.toISOString(),
      last: 'n-0',
      skipped: 0,
      runs: 1,
    };
    for (const state of ['running', 'complete', 'cancelled'] as const)
      assert.deepEqual(decideRun('n', runs, state, at), { kind: 'duplicate', crawlId: 'n-20261205T030000Z' });
    // Claimed and not stored: the start failed, and this copy is its retry; it starts from the claimed base.
    assert.deepEqual(decideRun('n', runs, undefined, at), {
      kind: 'resume',
      crawlId: 'n-20261205T030000Z',
      since: 'n-0',
    });
  });

  it('knows its own message and nothing else', () => {
    assert.deepEqual(parseScheduledRun(scheduledRunMessage('nightly', at)), {
      v: 1,
      kind: 'scheduled',
      schedule: 'nightly',
      at: '2026-12-05T03:00:00.000Z',
    });
    // What Scheduler sends once it has put the firing's time in the target's Input.
    const input = scheduleTargetInput('nightly').replace(SCHEDULED_TIME, '2026-12-05T03:00:00Z');
    assert.equal(parseScheduledRun(input)?.at, '2026-12-05T03:00:00Z');
    assert.equal(parseScheduledRun(scheduleTargetInput('nightly')), undefined, 'not filled in: no time');
    assert.equal(parseScheduledRun('{"v":1,"kind":"scheduled","schedule":"../x"}'), undefined);
    assert.equal(parseScheduledRun('{"v":1,"kind":"visit","crawlId":"c","host":"h"}'), undefined);
    assert.equal(parseScheduledRun('https://example.com/"scheduled"'), undefined);
  });

  it('a stored definition is checked when read: a cron or zone it cannot run is refused', () => {
    const definition = {
      name: 'n',
      cron: '0 3 * * *',
      timezone: 'UTC',
      crawl: { seeds: ['https://example.com/'] },
      createdAt: at.toISOString(),
    };
    assert.ok(ScheduleDefinitionSchema.safeParse(definition).success);
    assert.ok(!ScheduleDefinitionSchema.safeParse({ ...definition, cron: '0 0 L * *' }).success);
    assert.ok(!ScheduleDefinitionSchema.safeParse({ ...definition, timezone: 'Nowhere/Else' }).success);
  });
});
