/**
 * CloudWatch metrics as Embedded Metric Format (EMF) log lines: a JSON object with an `_aws` key,
 * written to stdout, from which CloudWatch Logs extracts metrics asynchronously (no PutMetricData
 * call, no IAM permission, no latency on the handler). Format:
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
 *
 * Usage (one instance per invocation, flushed before the handler returns):
 *
 *   const metrics = createMetrics(CRAWLER_NAMESPACE, { [METRIC_DIMENSIONS.function]: 'fetch' });
 *   metrics.count(CRAWLER_METRICS.pages, 1, { [METRIC_DIMENSIONS.outcome]: result.outcome });
 *   metrics.count(CRAWLER_METRICS.bytes, result.bytes, undefined, 'Bytes');
 *   metrics.timing(CRAWLER_METRICS.fetchLatency, result.ms);
 *   metrics.flush();
 *
 * The stack's dashboard finds these metrics by namespace, name and exactly these dimension names
 * (`Function`, plus `Outcome` for Pages), so keep to them: every other dimension set is a separate
 * CloudWatch metric the dashboard does not show (and each one is billed). Never put a crawl id or a
 * URL in a dimension: one metric per value.
 */

/** The namespace of the crawler's own metrics. */
export const CRAWLER_NAMESPACE = 'ServerlessCrawler';

/** Dimension names of the crawler's metrics. */
export const METRIC_DIMENSIONS = {
  /** `fetch` or `aggregate`: the emitting function's role (its base dimension). */
  function: 'Function',
  /** A result's outcome (`fetched`, `skipped`, `failed`, ...), on Pages only. */
  outcome: 'Outcome',
} as const;

/** Metric names the crawler emits and the stack's dashboard graphs. */
export const CRAWLER_METRICS = {
  /** Count of finished URLs, dimension Outcome. */
  pages: 'Pages',
  /** Payload bytes stored (unit Bytes). */
  bytes: 'Bytes',
  /** Milliseconds per fetch, one value per request (percentiles on the dashboard). */
  fetchLatency: 'FetchLatency',
  /** Retryable failures sent back for another attempt. */
  retries: 'Retries',
  /**
   * Milliseconds since it was first sent, one value per message received for the
   * `REDELIVERED_RECEIVE_COUNT`th time or later: SQS's ApproximateAgeOfOldestMessage skips those.
   */
  redeliveredMessageAge: 'RedeliveredMessageAge',
} as const;

/**
 * From this receive on, SQS moves a message to the back of the queue and ApproximateAgeOfOldestMessage
 * stops counting it, so a message that keeps failing would never raise the age alarm. Its consumer
 * sees its age on every receive, so it reports it instead (the stack alarms on both).
 */
export const REDELIVERED_RECEIVE_COUNT = 3;

/** The SQS record attributes the redelivery metric reads (both are always sent to Lambda). */
export interface ReceivedRecord {
  attributes: { ApproximateReceiveCount: string; SentTimestamp: string };
}

/** Records `redeliveredMessageAge` for each record received `REDELIVERED_RECEIVE_COUNT` times or more. */
export function recordRedeliveredAges(
  metrics: Metrics,
  records: readonly ReceivedRecord[],
  now: number,
): void {
  for (const { attributes } of records) {
    const sent = Number(attributes.SentTimestamp);
    if (Number(attributes.ApproximateReceiveCount) < REDELIVERED_RECEIVE_COUNT || !Number.isFinite(sent))
      continue;
    metrics.timing(CRAWLER_METRICS.redeliveredMessageAge, Math.max(0, now - sent));
  }
}

export type Dimensions = Readonly<Record<string, string>>;
export type CountUnit = 'Count' | 'Bytes';
export type MetricUnit = CountUnit | 'Milliseconds';

export interface Metrics {
  /**
   * Adds `value` to a counter; counts of one name and dimensions are summed until the next flush
   * (one value per line: Sum is exact, SampleCount is per flush).
   */
  count(name: string, value: number, dimensions?: Dimensions, unit?: CountUnit): void;
  /** Records one duration in milliseconds; every value is kept, so percentiles are exact. */
  timing(name: string, ms: number, dimensions?: Dimensions): void;
  /** Writes what was recorded since the last flush, one EMF line per dimension set and batch; returns the number of lines. */
  flush(): number;
}

/** CloudWatch's limits for one EMF directive: metric definitions per directive, values per metric. */
export const EMF_MAX_METRICS_PER_LINE = 100;
export const EMF_MAX_VALUES_PER_METRIC = 100;
/** CloudWatch allows at most 30 dimensions in one dimension set. */
const MAX_DIMENSIONS = 30;

interface Recorded {
  readonly unit: MetricUnit;
  readonly kind: 'count' | 'timing';
  values: number[];
}

interface Group {
  readonly dimensions: Record<string, string>;
  readonly metrics: Map<string, Recorded>;
}

/**
 * An EMF writer. `dimensionsBase` goes on every metric; per-call dimensions are added to it (and
 * may not redefine a base one). `write` receives whole lines, each ending in a newline.
 */
export function createMetrics(
  namespace: string,
  dimensionsBase: Dimensions = {},
  write: (line: string) => void = (line) => {
    process.stdout.write(line);
  },
): Metrics {
  checkNamespace(namespace);
  const base = checkDimensions(dimensionsBase, 'base dimension');
  let groups = new Map<string, Group>();

  const groupFor = (name: string, extra: Dimensions | undefined): Group => {
    checkName(name);
    const added = checkDimensions(extra ?? {}, 'dimension');
    for (const key of Object.keys(added)) {
      if (key in base) throw new TypeError(`metric ${name}: dimension ${key} is already a base dimension`);
    }
    const dimensions = { ...base, ...added };
    if (Object.keys(dimensions).length > MAX_DIMENSIONS) {
      throw new RangeError(`metric ${name}: more than ${MAX_DIMENSIONS} dimensions`);
    }
    if (name in dimensions) throw new TypeError(`metric ${name}: its name is also a dimension name`);
    const key = JSON.stringify(Object.entries(dimensions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    let group = groups.get(key);
    if (!group) {
      group = { dimensions, metrics: new Map() };
      groups.set(key, group);
    }
    return group;
  };

  const record = (group: Group, name: string, kind: Recorded['kind'], unit: MetricUnit, value: number) => {
    const existing = group.metrics.get(name);
    if (existing && (existing.kind !== kind || existing.unit !== unit)) {
      throw new TypeError(
        `metric ${name}: recorded as ${existing.kind} (${existing.unit}) and as ${kind} (${unit})`,
      );
    }
    if (!existing) group.metrics.set(name, { kind, unit, values: [value] });
    else if (kind === 'count') existing.values[0] = (existing.values[0] ?? 0) + value;
    else existing.values.push(value);
  };

  return {
    count(name, value, dimensions, unit = 'Count') {
      if (!Number.isFinite(value))
        throw new RangeError(`metric ${name}: count ${value} is not a finite number`);
      if (unit !== 'Count' && unit !== 'Bytes') throw new TypeError(`metric ${name}: unit ${String(unit)}`);
      record(groupFor(name, dimensions), name, 'count', unit, value);
    },

    timing(name, ms, dimensions) {
      if (!Number.isFinite(ms) || ms < 0) {
        throw new RangeError(`metric ${name}: timing ${ms} is not a finite number >= 0`);
      }
      record(groupFor(name, dimensions), name, 'timing', 'Milliseconds', ms);
    },

    flush() {
      const pending = groups;
      groups = new Map();
      const timestamp = Date.now();
      let lines = 0;
      for (const group of pending.values()) {
        for (const line of linesOf(namespace, group, timestamp)) {
          write(`${JSON.stringify(line)}\n`);
          lines++;
        }
      }
      return lines;
    },
  };
}

/**
 * The EMF objects for one dimension set: at most 100 metrics per line and at most 100 values per
 * metric; a metric with more values continues on the next line(s).
 */
function linesOf(namespace: string, group: Group, timestamp: number): Array<Record<string, unknown>> {
  const queue = [...group.metrics].map(([name, m]) => ({ name, unit: m.unit, values: m.values, next: 0 }));
  const lines: Array<Record<string, unknown>> = [];
  for (;;) {
    const batch = queue.filter((m) => m.next < m.values.length).slice(0, EMF_MAX_METRICS_PER_LINE);
    if (batch.length === 0) return lines;
    const line: Record<string, unknown> = {
      _aws: {
        Timestamp: timestamp,
        CloudWatchMetrics: [
          {
            Namespace: namespace,
            Dimensions: [Object.keys(group.dimensions)],
            Metrics: batch.map((m) => ({ Name: m.name, Unit: m.unit })),
          },
        ],
      },
      ...group.dimensions,
    };
    for (const m of batch) {
      const values = m.values.slice(m.next, m.next + EMF_MAX_VALUES_PER_METRIC);
      m.next += values.length;
      line[m.name] = values.length === 1 ? values[0] : values;
    }
    lines.push(line);
  }
}

function checkNamespace(namespace: string): void {
  if (!/^[A-Za-z0-9.\-_/#: ]{1,255}$/.test(namespace) || namespace.startsWith('AWS/')) {
    throw new TypeError(`metrics namespace ${JSON.stringify(namespace)} is not a valid custom namespace`);
  }
}

function checkName(name: string): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > 255 || name === '_aws') {
    throw new TypeError(`metric name ${JSON.stringify(name)} must be 1..255 characters (and not _aws)`);
  }
}

function checkDimensions(dimensions: Dimensions, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(dimensions)) {
    if (key.length === 0 || key.length > 255 || key.startsWith(':') || key === '_aws') {
      throw new TypeError(
        `${what} name ${JSON.stringify(key)} must be 1..255 characters, not starting with ':'`,
      );
    }
    if (typeof value !== 'string' || value.length === 0 || value.length > 1024) {
      throw new TypeError(
        `${what} ${key}: value ${JSON.stringify(value)} must be a string of 1..1024 characters`,
      );
    }
    out[key] = value;
  }
  return out;
}
