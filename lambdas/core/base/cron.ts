/**
 * Cron expressions of `crawler schedule add --cron`: the five Unix fields (minute hour day-of-month
 * month day-of-week) or EventBridge Scheduler's six (the same, day-of-week numbered 1-7 from Sunday,
 * then year). Parsed once into sets of values; `awsCronExpression` gives what Scheduler takes, and
 * `cronMatches` / `nextRun` are what the local scheduler fires by, in the schedule's time zone.
 *
 * Supported in each field: `*`, numbers, names (JAN-DEC, SUN-SAT), ranges `a-b`, steps `*\/s`, `a/s`
 * and `a-b/s`, and lists of those; `?` in day-of-month or day-of-week. Scheduler's `L`, `W` and `#`
 * are refused with one line: the local scheduler could not run them the same way. Cost is linear in
 * the expression, whose length is bounded.
 */

export class CronError extends Error {
  override name = 'CronError';
}

/** Scheduler's ScheduleExpression is at most 256 characters, `cron(` and `)` included. */
export const MAX_CRON_LENGTH = 250;

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const MINUTE: FieldSpec = { name: 'minute', min: 0, max: 59 };
const HOUR: FieldSpec = { name: 'hour', min: 0, max: 23 };
const DAY: FieldSpec = { name: 'day-of-month', min: 1, max: 31 };
const MONTH: FieldSpec = { name: 'month', min: 1, max: 12, names: MONTH_NAMES };
// Unix numbers Sunday 0 (and 7); Scheduler 1. Names are the same in both.
const UNIX_WEEKDAY: FieldSpec = { name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES };
const AWS_WEEKDAY: FieldSpec = { name: 'day-of-week', min: 1, max: 7, names: DAY_NAMES };
// Scheduler's year range.
const YEAR: FieldSpec = { name: 'year', min: 1970, max: 2199 };

export interface Cron {
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  /** Undefined: any day of the month (`*` or `?`). */
  days: ReadonlySet<number> | undefined;
  months: ReadonlySet<number>;
  /** 0 = Sunday … 6 = Saturday; undefined: any day of the week. */
  weekdays: ReadonlySet<number> | undefined;
  /** Undefined: every year. */
  years: ReadonlySet<number> | undefined;
  /** The expression as given, for messages and listings. */
  source: string;
}

export function parseCron(text: string): Cron {
  const source = text.trim();
  if (source.length > MAX_CRON_LENGTH)
    throw new CronError(`--cron is ${source.length} characters; at most ${MAX_CRON_LENGTH}`);
  if (source.startsWith('@'))
    throw new CronError(
      `--cron ${JSON.stringify(source)}: shorthands like @daily are not supported; give the fields, e.g. "0 3 * * *"`,
    );
  const fields = source.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6)
    throw new CronError(
      `--cron ${JSON.stringify(source)} has ${fields.length} fields; expected 5 (minute hour day month weekday) ` +
        'or 6 as EventBridge Scheduler takes them (minute hour day month weekday year)',
    );
  const aws = fields.length === 6;
  const [minute, hour, day, month, weekday, year] = fields as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  const days = parseField(day, DAY, true);
  const weekdaySpec = aws ? AWS_WEEKDAY : UNIX_WEEKDAY;
  const rawWeekdays = parseField(weekday, weekdaySpec, true);
  if (days !== undefined && rawWeekdays !== undefined)
    throw new CronError(
      `--cron ${JSON.stringify(source)}: day-of-month and day-of-week are both set; EventBridge Scheduler ` +
        'takes one of them: give * (or ?) in the other',
    );
  const questions = (day === '?' ? 1 : 0) + (weekday === '?' ? 1 : 0);
  if (aws && questions !== 1)
    throw new CronError(
      `--cron ${JSON.stringify(source)}: in the 6-field form exactly one of day-of-month and day-of-week is ?`,
    );
  const weekdays =
    rawWeekdays === undefined
      ? undefined
      : new Set([...rawWeekdays].map((value) => (aws ? value - 1 : value % 7)));
  return {
    minutes: required(parseField(minute, MINUTE, false), MINUTE),
    hours: required(parseField(hour, HOUR, false), HOUR),
    days,
    months: required(parseField(month, MONTH, false), MONTH),
    weekdays,
    years: year === undefined ? undefined : parseField(year, YEAR, false),
    source,
  };
}

function required(values: ReadonlySet<number> | undefined, spec: FieldSpec): ReadonlySet<number> {
  return values ?? range(spec.min, spec.max, 1);
}

/** Undefined for `*` (and `?` where allowed): every value. */
function parseField(
  text: string,
  spec: FieldSpec,
  questionAllowed: boolean,
): ReadonlySet<number> | undefined {
  if (text === '*') return undefined;
  if (text === '?') {
    if (questionAllowed) return undefined;
    throw new CronError(`cron ${spec.name} field: ? is only allowed in day-of-month and day-of-week`);
  }
  const values = new Set<number>();
  for (const term of text.split(',')) {
    if (term === '')
      throw new CronError(`cron ${spec.name} field ${JSON.stringify(text)}: an empty list item`);
    const [base, stepText, extra] = term.split('/');
    if (extra !== undefined || base === undefined)
      throw new CronError(`cron ${spec.name} field: ${JSON.stringify(term)} has more than one /`);
    const step = stepText === undefined ? 1 : number(stepText, spec, 'step');
    if (step < 1)
      throw new CronError(`cron ${spec.name} field: step ${JSON.stringify(stepText)} must be at least 1`);
    let from: number;
    let to: number;
    if (base === '*') {
      from = spec.min;
      to = spec.max;
    } else if (base.includes('-')) {
      const [low, high, more] = base.split('-');
      if (more !== undefined || low === undefined || high === undefined)
        throw new CronError(`cron ${spec.name} field: ${JSON.stringify(base)} is not a range a-b`);
      from = value(low, spec);
      to = value(high, spec);
      if (from > to)
        throw new CronError(`cron ${spec.name} field: range ${base} runs backwards; expected low-high`);
    } else {
      from = value(base, spec);
      // `5/15`: from 5 to the field's end, every 15.
      to = stepText === undefined ? from : spec.max;
    }
    for (const each of range(from, to, step)) values.add(each);
  }
  return values;
}

function value(text: string, spec: FieldSpec): number {
  const index = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index >= 0) return spec === MONTH ? index + 1 : spec === AWS_WEEKDAY ? index + 1 : index;
  return number(text, spec, 'value');
}

function number(text: string, spec: FieldSpec, what: 'value' | 'step'): number {
  if (/[LW#]/i.test(text) && !(spec.names ?? []).includes(text.toUpperCase()))
    throw new CronError(
      `cron ${spec.name} field: ${JSON.stringify(text)}: L, W and # are not supported (the local scheduler could not run them)`,
    );
  if (!/^\d{1,4}$/.test(text))
    throw new CronError(
      `cron ${spec.name} field: ${JSON.stringify(text)} is not a number${spec.names ? ' or a name' : ''}`,
    );
  const parsed = Number(text);
  if (what === 'value' && (parsed < spec.min || parsed > spec.max))
    throw new CronError(`cron ${spec.name} field: ${parsed} is outside ${spec.min}-${spec.max}`);
  return parsed;
}

function range(from: number, to: number, step: number): Set<number> {
  const values = new Set<number>();
  for (let each = from; each <= to; each += step) values.add(each);
  return values;
}

/** The same schedule as EventBridge Scheduler's `cron(minute hour day month weekday year)`. */
export function awsCronExpression(cron: Cron): string {
  const list = (values: ReadonlySet<number> | undefined, spec: FieldSpec) =>
    values === undefined || values.size === spec.max - spec.min + 1
      ? '*'
      : [...values].sort((a, b) => a - b).join(',');
  const weekdays =
    cron.weekdays === undefined
      ? '?'
      : [...cron.weekdays]
          .sort((a, b) => a - b)
          .map((day) => day + 1)
          .join(',');
  const days = cron.weekdays === undefined ? list(cron.days, DAY) : '?';
  return `cron(${list(cron.minutes, MINUTE)} ${list(cron.hours, HOUR)} ${days} ${list(cron.months, MONTH)} ${weekdays} ${list(cron.years, YEAR)})`;
}

/** A moment as a wall clock shows it in a time zone. */
export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  /** 0 = Sunday. */
  weekday: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatOf(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        weekday: 'short',
      });
    } catch {
      throw new CronError(
        `--timezone ${JSON.stringify(timeZone)} is not an IANA time zone (e.g. UTC, Europe/Paris)`,
      );
    }
    formats.set(timeZone, format);
  }
  return format;
}

/** Throws CronError naming the zone when it is not one this runtime knows. */
export function checkTimeZone(timeZone: string): string {
  if (timeZone.length > 50)
    throw new CronError('--timezone is over 50 characters; expected an IANA time zone');
  return formatOf(timeZone).resolvedOptions().timeZone;
}

export function wallClock(at: Date, timeZone: string): WallClock {
  const parts: Record<string, string> = {};
  for (const part of formatOf(timeZone).formatToParts(at)) parts[part.type] = part.value;
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    weekday: DAY_NAMES.indexOf(String(parts.weekday).toUpperCase()),
  };
}

export function cronMatches(cron: Cron, clock: WallClock): boolean {
  return (
    cron.minutes.has(clock.minute) &&
    cron.hours.has(clock.hour) &&
    dayMatches(cron, clock) &&
    cron.months.has(clock.month) &&
    (cron.years === undefined || cron.years.has(clock.year))
  );
}

function dayMatches(cron: Cron, clock: WallClock): boolean {
  return (
    (cron.days === undefined || cron.days.has(clock.day)) &&
    (cron.weekdays === undefined || cron.weekdays.has(clock.weekday))
  );
}

const MINUTE_MS = 60_000;
/** How far `nextRun` looks: a schedule that fires later than this is shown as never. */
const HORIZON_DAYS = 366 * 5;

/**
 * The first minute after `after` at which the schedule fires, or undefined within five years. A day
 * or an hour that cannot match is skipped whole, so at most a few thousand clocks are read per year.
 */
export function nextRun(cron: Cron, timeZone: string, after: Date): Date | undefined {
  let at = Math.floor(after.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  const end = at + HORIZON_DAYS * 24 * 60 * MINUTE_MS;
  const lastYear = cron.years === undefined ? Number.POSITIVE_INFINITY : Math.max(...cron.years);
  while (at < end) {
    const clock = wallClock(new Date(at), timeZone);
    if (clock.year > lastYear) return undefined;
    const yearMatches = cron.years === undefined || cron.years.has(clock.year);
    if (!yearMatches || !cron.months.has(clock.month) || !dayMatches(cron, clock)) {
      // To 23:00 of this local day, then the next hour: a jump straight to midnight would overshoot
      // it by the hour a daylight-saving change in between skips, and miss that hour of a day.
      at += (clock.hour < 23 ? (23 - clock.hour) * 60 - clock.minute : 60 - clock.minute) * MINUTE_MS;
    } else if (!cron.hours.has(clock.hour)) {
      at += (60 - clock.minute) * MINUTE_MS;
    } else if (!cron.minutes.has(clock.minute)) {
      at += MINUTE_MS;
    } else return new Date(at);
  }
  return undefined;
}
