// The EMF writer: every line it writes is one CloudWatch Embedded Metric Format object that
// CloudWatch Logs turns into the metrics the stack's dashboard graphs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CRAWLER_METRICS,
  CRAWLER_NAMESPACE,
  createMetrics,
  EMF_MAX_METRICS_PER_LINE,
  EMF_MAX_VALUES_PER_METRIC,
  METRIC_DIMENSIONS,
  REDELIVERED_RECEIVE_COUNT,
  recordRedeliveredAges,
} from '../../lambdas/shared/metrics.ts';

interface Directive {
  Namespace: string;
  Dimensions: string[][];
  Metrics: Array<{ Name: string; Unit: string }>;
}

interface EmfLine {
  _aws: { Timestamp: number; CloudWatchMetrics: Directive[] };
  [key: string]: unknown;
}

/** A writer that keeps the raw output, and its lines parsed and checked against the EMF specification. */
function capture() {
  const raw: string[] = [];
  const write = (line: string) => {
    raw.push(line);
  };
  const lines = (): EmfLine[] =>
    raw.map((text) => {
      assert.ok(text.endsWith('\n'), 'one line per write');
      assert.equal(text.indexOf('\n'), text.length - 1, 'no newline inside a line');
      const parsed: unknown = JSON.parse(text);
      assertEmf(parsed);
      return parsed;
    });
  return { raw, write, lines };
}

function assertEmf(value: unknown): asserts value is EmfLine {
  assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value));
  const line = value as Record<string, unknown>;
  const aws = line._aws as EmfLine['_aws'];
  assert.equal(typeof aws?.Timestamp, 'number');
  assert.ok(Number.isInteger(aws.Timestamp), 'Timestamp in epoch milliseconds');
  assert.ok(Array.isArray(aws.CloudWatchMetrics) && aws.CloudWatchMetrics.length === 1);
  for (const directive of aws.CloudWatchMetrics) {
    assert.equal(typeof directive.Namespace, 'string');
    assert.ok(directive.Metrics.length >= 1 && directive.Metrics.length <= EMF_MAX_METRICS_PER_LINE);
    for (const set of directive.Dimensions) {
      for (const key of set) assert.equal(typeof line[key], 'string', `dimension ${key} has a string value`);
    }
    for (const { Name, Unit } of directive.Metrics) {
      assert.equal(typeof Unit, 'string');
      const v = line[Name];
      const values = Array.isArray(v) ? v : [v];
      assert.ok(values.length >= 1 && values.length <= EMF_MAX_VALUES_PER_METRIC, `${Name}: 1..100 values`);
      for (const x of values) assert.ok(typeof x === 'number' && Number.isFinite(x), `${Name}: numbers`);
    }
  }
}

/** name -> values of a metric across lines (for one dimension set when `where` is given). */
function valuesOf(lines: EmfLine[], name: string, where: Record<string, string> = {}): number[] {
  return lines
    .filter((l) => Object.entries(where).every(([k, v]) => l[k] === v))
    .flatMap((l) => {
      const v = l[name];
      return v === undefined ? [] : Array.isArray(v) ? (v as number[]) : [v as number];
    });
}

describe('createMetrics', () => {
  it('writes one EMF line per flush for one dimension set: namespace, dimensions, units and values', () => {
    const out = capture();
    const before = Date.now();
    const metrics = createMetrics(CRAWLER_NAMESPACE, { [METRIC_DIMENSIONS.function]: 'fetch' }, out.write);
    metrics.count(CRAWLER_METRICS.retries, 2);
    metrics.count(CRAWLER_METRICS.bytes, 1000, undefined, 'Bytes');
    metrics.count(CRAWLER_METRICS.bytes, 24, undefined, 'Bytes');
    metrics.timing(CRAWLER_METRICS.fetchLatency, 120);
    metrics.timing(CRAWLER_METRICS.fetchLatency, 80.5);
    assert.equal(out.raw.length, 0, 'nothing is written before flush');
    assert.equal(metrics.flush(), 1);

    const [line] = out.lines();
    assert.ok(line);
    assert.ok(line._aws.Timestamp >= before && line._aws.Timestamp <= Date.now());
    assert.deepEqual(line._aws.CloudWatchMetrics, [
      {
        Namespace: 'ServerlessCrawler',
        Dimensions: [['Function']],
        Metrics: [
          { Name: 'Retries', Unit: 'Count' },
          { Name: 'Bytes', Unit: 'Bytes' },
          { Name: 'FetchLatency', Unit: 'Milliseconds' },
        ],
      },
    ]);
    assert.equal(line.Function, 'fetch');
    assert.equal(line.Retries, 2);
    assert.equal(line.Bytes, 1024, 'counts of one name are summed');
    assert.deepEqual(line.FetchLatency, [120, 80.5], 'every timing is kept for percentiles');
  });

  it('writes the default to stdout when no writer is given', (t) => {
    const written: string[] = [];
    t.mock.method(process.stdout, 'write', (chunk: string) => {
      written.push(chunk);
      return true;
    });
    const metrics = createMetrics('Test', {});
    metrics.count('Pages', 1);
    metrics.flush();
    t.mock.restoreAll();
    assert.equal(written.length, 1);
    const parsed: unknown = JSON.parse(written[0] ?? '');
    assertEmf(parsed);
    assert.deepEqual(parsed._aws.CloudWatchMetrics[0]?.Dimensions, [[]], 'no dimensions: an empty set');
    assert.equal(parsed.Pages, 1);
  });

  it('puts each set of dimension values on its own line (Pages by Outcome)', () => {
    const out = capture();
    const metrics = createMetrics(CRAWLER_NAMESPACE, { Function: 'aggregate' }, out.write);
    for (const outcome of ['fetched', 'fetched', 'skipped', 'failed', 'fetched']) {
      metrics.count(CRAWLER_METRICS.pages, 1, { [METRIC_DIMENSIONS.outcome]: outcome });
    }
    metrics.count(CRAWLER_METRICS.retries, 3);
    assert.equal(metrics.flush(), 4);
    const lines = out.lines();
    const pages = lines.filter((l) => 'Pages' in l);
    assert.equal(pages.length, 3);
    for (const l of pages) {
      assert.deepEqual(l._aws.CloudWatchMetrics[0]?.Dimensions, [['Function', 'Outcome']]);
      assert.equal(l.Function, 'aggregate');
    }
    assert.deepEqual(valuesOf(lines, 'Pages', { Outcome: 'fetched' }), [3]);
    assert.deepEqual(valuesOf(lines, 'Pages', { Outcome: 'skipped' }), [1]);
    assert.deepEqual(valuesOf(lines, 'Pages', { Outcome: 'failed' }), [1]);
    const retries = lines.find((l) => 'Retries' in l);
    assert.deepEqual(retries?._aws.CloudWatchMetrics[0]?.Dimensions, [['Function']]);
    assert.equal(retries?.Outcome, undefined);
  });

  it('batches at most 100 metrics per line', () => {
    const out = capture();
    const metrics = createMetrics('Test', { Function: 'fetch' }, out.write);
    for (let i = 0; i < 250; i++) metrics.count(`M${i}`, i);
    assert.equal(metrics.flush(), 3);
    const lines = out.lines();
    assert.deepEqual(
      lines.map((l) => l._aws.CloudWatchMetrics[0]?.Metrics.length),
      [100, 100, 50],
    );
    const names = lines.flatMap((l) => l._aws.CloudWatchMetrics[0]?.Metrics.map((m) => m.Name) ?? []);
    assert.equal(new Set(names).size, 250, 'each metric once');
    for (let i = 0; i < 250; i++) assert.deepEqual(valuesOf(lines, `M${i}`), [i]);
  });

  it('continues a metric with more than 100 values on further lines, losing none', () => {
    const out = capture();
    const metrics = createMetrics('Test', {}, out.write);
    const latencies = Array.from({ length: 250 }, (_, i) => i);
    for (const ms of latencies) metrics.timing('FetchLatency', ms);
    metrics.count('Pages', 7);
    assert.equal(metrics.flush(), 3);
    const lines = out.lines();
    assert.deepEqual(valuesOf(lines, 'FetchLatency'), latencies);
    assert.deepEqual(valuesOf(lines, 'Pages'), [7], 'a count is written once, not on every line');
    assert.ok(lines.every((l) => l._aws.CloudWatchMetrics[0]?.Metrics.every((m) => m.Name in l)));
  });

  it('starts empty after a flush, and writes nothing when nothing was recorded', () => {
    const out = capture();
    const metrics = createMetrics('Test', {}, out.write);
    assert.equal(metrics.flush(), 0);
    metrics.count('Pages', 1);
    metrics.flush();
    metrics.count('Pages', 2);
    metrics.flush();
    assert.equal(metrics.flush(), 0);
    assert.deepEqual(valuesOf(out.lines(), 'Pages'), [1, 2]);
  });

  it('keeps a zero count (an explicit zero is a datapoint)', () => {
    const out = capture();
    const metrics = createMetrics('Test', {}, out.write);
    metrics.count('Retries', 0);
    metrics.flush();
    assert.deepEqual(valuesOf(out.lines(), 'Retries'), [0]);
  });

  it('refuses what CloudWatch would drop or misread', () => {
    const metrics = createMetrics('Test', { Function: 'fetch' }, () => {});
    assert.throws(() => metrics.count('Pages', Number.NaN), /not a finite number/);
    assert.throws(() => metrics.count('Pages', Number.POSITIVE_INFINITY), /not a finite number/);
    assert.throws(() => metrics.timing('FetchLatency', -1), /finite number >= 0/);
    assert.throws(() => metrics.count('', 1), /metric name/);
    assert.throws(() => metrics.count('_aws', 1), /metric name/);
    assert.throws(() => metrics.count('Pages', 1, { Outcome: '' }), /value "" must be a string/);
    assert.throws(() => metrics.count('Pages', 1, { Function: 'other' }), /already a base dimension/);
    assert.throws(() => metrics.count('Outcome', 1, { Outcome: 'x' }), /also a dimension name/);
    metrics.count('Mixed', 1);
    assert.throws(() => metrics.timing('Mixed', 1), /recorded as count \(Count\) and as timing/);
    assert.throws(() => metrics.count('Mixed', 1, undefined, 'Bytes'), /and as count \(Bytes\)/);
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`D${i}`, 'x']));
    assert.throws(() => metrics.count('Pages', 1, many), /more than 30 dimensions/);
    assert.throws(() => createMetrics('AWS/Lambda'), /not a valid custom namespace/);
    assert.throws(() => createMetrics(''), /not a valid custom namespace/);
    assert.throws(() => createMetrics('Test', { ':x': 'y' }), /base dimension name/);
  });
});

describe('recordRedeliveredAges', () => {
  const record = (receiveCount: number, sentAt: number) => ({
    attributes: { ApproximateReceiveCount: String(receiveCount), SentTimestamp: String(sentAt) },
  });

  it('reports the age of each message from its third receive on, the ones SQS stops counting as oldest', () => {
    const out = capture();
    const metrics = createMetrics(CRAWLER_NAMESPACE, { [METRIC_DIMENSIONS.function]: 'fetch' }, out.write);
    const now = 1_700_000_000_000;
    recordRedeliveredAges(
      metrics,
      [record(1, now - 5_000), record(2, now - 60_000), record(3, now - 2_000_000), record(7, now - 40_000)],
      now,
    );
    metrics.flush();
    const lines = out.lines();
    assert.equal(lines.length, 1);
    assert.deepEqual(lines[0]?.[CRAWLER_METRICS.redeliveredMessageAge], [2_000_000, 40_000]);
    assert.deepEqual(lines[0]?._aws.CloudWatchMetrics[0]?.Metrics, [
      { Name: CRAWLER_METRICS.redeliveredMessageAge, Unit: 'Milliseconds' },
    ]);
  });

  it('reports nothing for messages received fewer than REDELIVERED_RECEIVE_COUNT times', () => {
    const out = capture();
    const metrics = createMetrics(CRAWLER_NAMESPACE, {}, out.write);
    recordRedeliveredAges(metrics, [record(REDELIVERED_RECEIVE_COUNT - 1, 0), record(1, 0)], 10_000);
    assert.equal(metrics.flush(), 0);
  });
});
