// What an operator relies on: alarms that fire on parked messages, a stalled pipeline and handler
// crashes and notify the alarm topic; a dashboard that graphs the queues, the functions and the
// crawler's own EMF metrics exactly as the EMF writer emits them; and the deploy-time context
// (fetchConcurrency, alarmEmail) that changes the stack.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Template } from 'aws-cdk-lib/assertions';
import { createCrawlerApp } from '../../cdk/crawler-app.ts';
import { AGGREGATE_EVENT_SOURCE, ALARMS, CONTEXT_KEYS, FETCH_EVENT_SOURCE } from '../../cdk/limits.ts';
import { crawlerSearchExpression, MONITORING_IDS } from '../../cdk/monitoring.ts';
import { partitionCeiling } from '../../cdk/partition-budget.ts';
import { REPO_ROOT } from '../../cdk/paths.ts';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { IDS, OUTPUTS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import {
  CRAWLER_METRICS,
  CRAWLER_NAMESPACE,
  createMetrics,
  METRIC_DIMENSIONS,
} from '../../lambdas/shared/metrics.ts';
import {
  type CfnResource,
  dashboardBody,
  isRecord,
  ofType,
  refTarget,
  resource,
  resourcesOf,
  statementsOf,
} from './template.ts';

let json: Record<string, unknown>;
before(() => {
  json = synthesizeTemplate();
});

/** The template of the app built with this context (as `-c key=value` gives it), bundling skipped. */
function templateWith(context: Record<string, unknown>): Record<string, unknown> {
  const { stack } = createCrawlerApp({ skipBundling: true, cfnValidation: false, context });
  return Template.fromStack(stack).toJSON();
}

/** The one event source mapping of a function. */
function mappingOf(template: Record<string, unknown>, functionId: string): CfnResource {
  const mappings = ofType(template, 'AWS::Lambda::EventSourceMapping').filter(
    ([, m]) => refTarget(m.Properties.FunctionName) === functionId,
  );
  assert.equal(mappings.length, 1);
  return mappings[0]![1];
}

interface ExpectedAlarm {
  id: string;
  namespace: string;
  metric: string;
  dimension: [string, unknown];
  statistic: string;
  period: number;
  threshold: number;
}

const QUEUE_NAME = (id: string) => ['QueueName', { 'Fn::GetAtt': [id, 'QueueName'] }] as [string, unknown];
const FUNCTION_NAME = (id: string) => ['FunctionName', { Ref: id }] as [string, unknown];

const EXPECTED_ALARMS: ExpectedAlarm[] = [
  {
    id: MONITORING_IDS.taskDlqAlarm,
    namespace: 'AWS/SQS',
    metric: 'ApproximateNumberOfMessagesVisible',
    dimension: QUEUE_NAME(IDS.taskDlq),
    statistic: 'Maximum',
    period: ALARMS.dlqPeriodSeconds,
    threshold: 0,
  },
  {
    id: MONITORING_IDS.resultsDlqAlarm,
    namespace: 'AWS/SQS',
    metric: 'ApproximateNumberOfMessagesVisible',
    dimension: QUEUE_NAME(IDS.resultsDlq),
    statistic: 'Maximum',
    period: ALARMS.dlqPeriodSeconds,
    threshold: 0,
  },
  {
    id: MONITORING_IDS.taskAgeAlarm,
    namespace: 'AWS/SQS',
    metric: 'ApproximateAgeOfOldestMessage',
    dimension: QUEUE_NAME(IDS.taskQueue),
    statistic: 'Maximum',
    period: ALARMS.agePeriodSeconds,
    threshold: ALARMS.oldestTaskAgeSeconds,
  },
  {
    id: MONITORING_IDS.resultsAgeAlarm,
    namespace: 'AWS/SQS',
    metric: 'ApproximateAgeOfOldestMessage',
    dimension: QUEUE_NAME(IDS.resultsQueue),
    statistic: 'Maximum',
    period: ALARMS.agePeriodSeconds,
    threshold: ALARMS.oldestResultAgeSeconds,
  },
  {
    id: MONITORING_IDS.taskRedeliveredAgeAlarm,
    namespace: CRAWLER_NAMESPACE,
    metric: CRAWLER_METRICS.redeliveredMessageAge,
    dimension: ['Function', 'fetch'],
    statistic: 'Maximum',
    period: ALARMS.agePeriodSeconds,
    threshold: ALARMS.oldestTaskAgeSeconds * 1000,
  },
  {
    id: MONITORING_IDS.resultsRedeliveredAgeAlarm,
    namespace: CRAWLER_NAMESPACE,
    metric: CRAWLER_METRICS.redeliveredMessageAge,
    dimension: ['Function', 'aggregate'],
    statistic: 'Maximum',
    period: ALARMS.agePeriodSeconds,
    threshold: ALARMS.oldestResultAgeSeconds * 1000,
  },
  {
    id: MONITORING_IDS.fetchErrorsAlarm,
    namespace: 'AWS/Lambda',
    metric: 'Errors',
    dimension: FUNCTION_NAME(IDS.fetchFunction),
    statistic: 'Sum',
    period: ALARMS.functionErrorsPeriodSeconds,
    threshold: 0,
  },
  {
    id: MONITORING_IDS.aggregateErrorsAlarm,
    namespace: 'AWS/Lambda',
    metric: 'Errors',
    dimension: FUNCTION_NAME(IDS.aggregateFunction),
    statistic: 'Sum',
    period: ALARMS.functionErrorsPeriodSeconds,
    threshold: 0,
  },
  // The template here has the render function (cdk/synth.ts: -c render=true).
  {
    id: MONITORING_IDS.renderDlqAlarm,
    namespace: 'AWS/SQS',
    metric: 'ApproximateNumberOfMessagesVisible',
    dimension: QUEUE_NAME(IDS.renderDlq),
    statistic: 'Maximum',
    period: ALARMS.dlqPeriodSeconds,
    threshold: 0,
  },
  {
    id: MONITORING_IDS.renderErrorsAlarm,
    namespace: 'AWS/Lambda',
    metric: 'Errors',
    dimension: FUNCTION_NAME(IDS.renderFunction),
    statistic: 'Sum',
    period: ALARMS.functionErrorsPeriodSeconds,
    threshold: 0,
  },
];

describe('alarms', () => {
  it('are exactly the DLQ-depth, oldest-message-age, redelivered-message-age and function-error alarms', () => {
    assert.deepEqual(
      ofType(json, 'AWS::CloudWatch::Alarm')
        .map(([id]) => id)
        .sort(),
      EXPECTED_ALARMS.map((a) => a.id).sort(),
    );
  });

  for (const a of EXPECTED_ALARMS) {
    it(`${a.id}: ${a.namespace} ${a.metric} of ${JSON.stringify(a.dimension[1])} > ${a.threshold}, one datapoint`, () => {
      const p = resource(json, a.id, 'AWS::CloudWatch::Alarm').Properties;
      assert.equal(p.Namespace, a.namespace);
      assert.equal(p.MetricName, a.metric);
      assert.deepEqual(p.Dimensions, [{ Name: a.dimension[0], Value: a.dimension[1] }]);
      assert.equal(p.Statistic, a.statistic);
      assert.equal(p.Period, a.period);
      assert.equal(p.Threshold, a.threshold);
      assert.equal(p.ComparisonOperator, 'GreaterThanThreshold');
      assert.equal(p.EvaluationPeriods, 1);
      assert.equal(p.DatapointsToAlarm, 1);
      assert.equal(p.TreatMissingData, 'notBreaching', 'an idle queue or function is healthy');
      assert.equal(p.AlarmName, undefined, 'no physical name: stacks never collide');
      assert.equal(typeof p.AlarmDescription, 'string');
      assert.ok(String(p.AlarmDescription).length >= 60, 'says what happened and what to do');
    });

    it(`${a.id}: notifies the alarm topic on ALARM and on OK`, () => {
      const p = resource(json, a.id, 'AWS::CloudWatch::Alarm').Properties;
      assert.deepEqual(p.AlarmActions, [{ Ref: MONITORING_IDS.alarmTopic }]);
      assert.deepEqual(p.OKActions, [{ Ref: MONITORING_IDS.alarmTopic }]);
    });
  }

  it('the task-age threshold is above what politeness deferral and retry backoff produce', () => {
    const maxSqsDelaySeconds = 900; // a deferred task is a new message delayed at most this long
    const maxBackoffSeconds = 300; // docs/crawling.md: retry backoff is at most 300 s per attempt
    assert.ok(ALARMS.oldestTaskAgeSeconds > maxSqsDelaySeconds + maxBackoffSeconds);
    assert.ok(ALARMS.oldestTaskAgeSeconds % 60 === 0 && ALARMS.oldestResultAgeSeconds % 60 === 0);
  });
});

describe('alarm topic', () => {
  it('is output as AlarmTopicArn and has no subscription unless alarmEmail is given', () => {
    resource(json, MONITORING_IDS.alarmTopic, 'AWS::SNS::Topic');
    assert.deepEqual(Template.fromJSON(json).findOutputs(OUTPUTS.alarmTopicArn), {
      [OUTPUTS.alarmTopicArn]: {
        Description: 'SNS topic the alarms notify (ALARM and OK); subscribe to it to be told',
        Value: { Ref: MONITORING_IDS.alarmTopic },
      },
    });
    assert.deepEqual(ofType(json, 'AWS::SNS::Subscription'), []);
  });

  it('enforces TLS on publish and lets only CloudWatch alarms of this account and region publish', () => {
    const policies = ofType(json, 'AWS::SNS::TopicPolicy').filter(([, p]) =>
      [p.Properties.Topics ?? []].flat().some((t) => refTarget(t) === MONITORING_IDS.alarmTopic),
    );
    assert.equal(policies.length, 1);
    const statements = statementsOf(policies[0]![1].Properties.PolicyDocument);
    const deny = statements.filter((s) => s.Effect === 'Deny');
    assert.equal(deny.length, 1);
    assert.deepEqual(deny[0]!.Actions, ['sns:Publish']);
    assert.equal(deny[0]!.Principal, '*');
    assert.deepEqual(deny[0]!.Condition, { Bool: { 'aws:SecureTransport': 'false' } });

    const allow = statements.filter((s) => s.Effect === 'Allow');
    assert.equal(allow.length, 1, 'the policy replaces the default one, so CloudWatch is allowed explicitly');
    assert.deepEqual(allow[0]!.Actions, ['sns:Publish']);
    assert.deepEqual(allow[0]!.Principal, { Service: 'cloudwatch.amazonaws.com' });
    assert.deepEqual(allow[0]!.Resources, [{ Ref: MONITORING_IDS.alarmTopic }]);
    assert.ok(isRecord(allow[0]!.Condition));
    assert.deepEqual(allow[0]!.Condition.StringEquals, { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } });
    assert.deepEqual(allow[0]!.Condition.ArnLike, {
      'aws:SourceArn': {
        'Fn::Join': [
          '',
          [
            'arn:',
            { Ref: 'AWS::Partition' },
            ':cloudwatch:',
            { Ref: 'AWS::Region' },
            ':',
            { Ref: 'AWS::AccountId' },
            ':alarm:*',
          ],
        ],
      },
    });
  });

  it('context alarmEmail subscribes that address by email', () => {
    const template = templateWith({ [CONTEXT_KEYS.alarmEmail]: 'ops@example.com' });
    const subscriptions = ofType(template, 'AWS::SNS::Subscription');
    assert.equal(subscriptions.length, 1);
    assert.deepEqual(subscriptions[0]![1].Properties, {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
      TopicArn: { Ref: MONITORING_IDS.alarmTopic },
    });
  });

  for (const bad of ['', 'ops', 'ops@example', 'a@b.c,d@e.f', 'ops @example.com', 42]) {
    it(`context alarmEmail ${JSON.stringify(bad)} fails the synth with a clear message`, () => {
      assert.throws(
        () => templateWith({ [CONTEXT_KEYS.alarmEmail]: bad }),
        /context alarmEmail: expected one email address, got .*-c alarmEmail=ops@example\.com/s,
      );
    });
  }
});

/** The highest -c fetchConcurrency a deploy accepts (cdk/partition-budget.ts). */
const MAX_FETCH = partitionCeiling().maxFetchConcurrency;
/** The range the message names, as a pattern. */
const RANGE = new RegExp(
  `context fetchConcurrency: expected an integer 2\\.\\.${MAX_FETCH} .*got .*-c fetchConcurrency=${MAX_FETCH}$`,
  's',
);

describe('fetchConcurrency context', () => {
  it('is the limits-file default without context', () => {
    assert.deepEqual(mappingOf(json, IDS.fetchFunction).Properties.ScalingConfig, {
      MaximumConcurrency: FETCH_EVENT_SOURCE.maxConcurrency,
    });
  });

  for (const [given, expected] of [
    [String(MAX_FETCH), MAX_FETCH],
    ['2', 2],
    [MAX_FETCH - 1, MAX_FETCH - 1],
  ] as const) {
    it(`${JSON.stringify(given)} sets the fetch event source's MaximumConcurrency to ${expected}, and only that`, () => {
      const template = templateWith({ [CONTEXT_KEYS.fetchConcurrency]: given });
      assert.deepEqual(mappingOf(template, IDS.fetchFunction).Properties.ScalingConfig, {
        MaximumConcurrency: expected,
      });
      assert.deepEqual(mappingOf(template, IDS.aggregateFunction).Properties.ScalingConfig, {
        MaximumConcurrency: AGGREGATE_EVENT_SOURCE.maxConcurrency,
      });
      const annotations = concurrencyAnnotations(template);
      assert.equal(annotations['fetch max concurrency'], expected, 'the dashboard draws the limit');
    });
  }

  for (const bad of [
    '1',
    '0',
    String(MAX_FETCH + 1),
    '1001',
    '-5',
    '2.5',
    '50 ',
    'fifty',
    '',
    1,
    1001,
    2.5,
    true,
  ]) {
    it(`${JSON.stringify(bad)} fails the synth with a message naming the key and its range`, () => {
      assert.throws(() => templateWith({ [CONTEXT_KEYS.fetchConcurrency]: bad }), RANGE);
    });
  }
});

describe('context through the CDK app entry (bin/app.ts, as the CLI runs it)', () => {
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `node bin/app.ts` the way `cdk synth -c ...` does: context in CDK_CONTEXT_JSON, bundling skipped. */
  function runApp(context: Record<string, unknown>) {
    const outdir = mkdtempSync(join(tmpdir(), 'crawler-ctx-'));
    dirs.push(outdir);
    const result = spawnSync(process.execPath, ['bin/app.ts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        ...process.env,
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify({ ...context, 'aws:cdk:bundling-stacks': [] }),
      },
    });
    return { ...result, outdir };
  }

  it(`-c fetchConcurrency=${MAX_FETCH} -c alarmEmail=... reach the template (nag on)`, () => {
    const run = runApp({ fetchConcurrency: String(MAX_FETCH), alarmEmail: 'ops@example.com' });
    assert.equal(run.status, 0, run.stderr);
    const template: unknown = JSON.parse(
      readFileSync(join(run.outdir, `${STACK_NAME}.template.json`), 'utf8'),
    );
    assert.ok(isRecord(template));
    assert.deepEqual(mappingOf(template, IDS.fetchFunction).Properties.ScalingConfig, {
      MaximumConcurrency: MAX_FETCH,
    });
    assert.equal(ofType(template, 'AWS::SNS::Subscription').length, 1);
  });

  it('-c fetchConcurrency=1 exits non-zero with the message', () => {
    const run = runApp({ fetchConcurrency: '1' });
    assert.notEqual(run.status, 0);
    assert.match(
      run.stderr,
      new RegExp(`context fetchConcurrency: expected an integer 2\\.\\.${MAX_FETCH} `),
    );
  });
});

/** label -> value of the horizontal annotations of the dashboard's concurrency graph. */
function concurrencyAnnotations(template: Record<string, unknown>): Record<string, unknown> {
  const widget = widgetsOf(template).find((w) => w.properties.title === 'Concurrent executions');
  assert.ok(widget);
  const annotations = widget.properties.annotations;
  assert.ok(isRecord(annotations) && Array.isArray(annotations.horizontal));
  return Object.fromEntries(
    annotations.horizontal.map((a: unknown) => {
      assert.ok(isRecord(a));
      return [String(a.label), a.value];
    }),
  );
}

interface Widget {
  type: string;
  properties: Record<string, unknown>;
}

function widgetsOf(template: Record<string, unknown>): Widget[] {
  const body = dashboardBody(template, MONITORING_IDS.dashboard);
  assert.ok(Array.isArray(body.widgets));
  return body.widgets.map((w: unknown) => {
    assert.ok(isRecord(w) && typeof w.type === 'string' && isRecord(w.properties));
    return { type: w.type, properties: w.properties };
  });
}

/** Every metric line of every graph: `[namespace, name, dim, value, ..., {options}]` or `[{expression}]`. */
function metricLines(template: Record<string, unknown>): unknown[][] {
  return widgetsOf(template)
    .filter((w) => w.type === 'metric')
    .flatMap((w) => {
      assert.ok(Array.isArray(w.properties.metrics));
      return w.properties.metrics as unknown[][];
    });
}

function graphs(template: Record<string, unknown>, namespace: string, name: string, dims: string[]): boolean {
  return metricLines(template).some(
    (line) => line[0] === namespace && line[1] === name && dims.every((d, i) => line[2 + i] === d),
  );
}

function expressions(template: Record<string, unknown>): string[] {
  return metricLines(template).flatMap((line) =>
    line.flatMap((part) => (isRecord(part) && typeof part.expression === 'string' ? [part.expression] : [])),
  );
}

describe('dashboard', () => {
  it('is output as DashboardName and has no physical name', () => {
    const dashboard = resource(json, MONITORING_IDS.dashboard, 'AWS::CloudWatch::Dashboard');
    assert.equal(dashboard.Properties.DashboardName, undefined);
    Template.fromJSON(json).hasOutput(OUTPUTS.dashboardName, { Value: { Ref: MONITORING_IDS.dashboard } });
  });

  it('shows the state of every alarm', () => {
    const widget = widgetsOf(json).find((w) => w.type === 'alarm');
    assert.ok(widget && Array.isArray(widget.properties.alarms));
    assert.deepEqual(
      [...widget.properties.alarms].sort(),
      EXPECTED_ALARMS.map((a) => `\${${a.id}.Arn}`).sort(),
    );
  });

  for (const queue of [IDS.taskQueue, IDS.resultsQueue]) {
    it(`graphs ${queue} depth (visible, in flight, delayed) and the age of its oldest message`, () => {
      for (const metric of [
        'ApproximateNumberOfMessagesVisible',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
        'ApproximateAgeOfOldestMessage',
      ]) {
        assert.ok(graphs(json, 'AWS/SQS', metric, ['QueueName', `\${${queue}.QueueName}`]), metric);
      }
    });
  }

  it('graphs both DLQ depths', () => {
    for (const dlq of [IDS.taskDlq, IDS.resultsDlq]) {
      assert.ok(
        graphs(json, 'AWS/SQS', 'ApproximateNumberOfMessagesVisible', ['QueueName', `\${${dlq}.QueueName}`]),
      );
    }
  });

  for (const fn of [IDS.fetchFunction, IDS.aggregateFunction]) {
    it(`graphs ${fn} invocations, errors, throttles, duration and concurrency`, () => {
      for (const metric of ['Invocations', 'Errors', 'Throttles', 'Duration', 'ConcurrentExecutions']) {
        assert.ok(graphs(json, 'AWS/Lambda', metric, ['FunctionName', `\${Ref:${fn}}`]), metric);
      }
    });
  }

  it('draws each event source maximum concurrency on the concurrency graph', () => {
    assert.deepEqual(concurrencyAnnotations(json), {
      'fetch max concurrency': FETCH_EVENT_SOURCE.maxConcurrency,
      'aggregate max concurrency': AGGREGATE_EVENT_SOURCE.maxConcurrency,
    });
  });

  it(`graphs the crawler's EMF metrics in namespace ${CRAWLER_NAMESPACE}: Pages by Outcome, Bytes, FetchLatency percentiles, Retries`, () => {
    const found = expressions(json);
    const fnDim = METRIC_DIMENSIONS.function;
    const expected = [
      crawlerSearchExpression(CRAWLER_METRICS.pages, 'Sum', [fnDim, METRIC_DIMENSIONS.outcome]),
      crawlerSearchExpression(CRAWLER_METRICS.bytes, 'Sum', [fnDim]),
      crawlerSearchExpression(CRAWLER_METRICS.fetchLatency, 'p50', [fnDim]),
      crawlerSearchExpression(CRAWLER_METRICS.fetchLatency, 'p90', [fnDim]),
      crawlerSearchExpression(CRAWLER_METRICS.fetchLatency, 'p99', [fnDim]),
      crawlerSearchExpression(CRAWLER_METRICS.retries, 'Sum', [fnDim]),
    ];
    assert.deepEqual([...found].sort(), [...expected].sort());
    assert.equal(
      crawlerSearchExpression('Pages', 'Sum', ['Function', 'Outcome']),
      `SEARCH('{ServerlessCrawler,Function,Outcome} MetricName="Pages"', 'Sum')`,
    );
  });

  it('graphs only metrics the functions emit: each one is written by code under lambdas/', () => {
    // metrics.ts only names them; a name no handler writes is a graph that stays empty.
    const sources = readdirSync(join(REPO_ROOT, 'lambdas'), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && file !== join('shared', 'metrics.ts'))
      .map((file) => readFileSync(join(REPO_ROOT, 'lambdas', file), 'utf8'))
      .join('\n');
    const written = new Set<string>(
      [...sources.matchAll(/CRAWLER_METRICS\.(\w+)/g)].map(
        (match) => CRAWLER_METRICS[match[1] as keyof typeof CRAWLER_METRICS],
      ),
    );
    const graphed = expressions(json).map((e) => /MetricName="([^"]+)"/.exec(e)?.[1]);
    assert.ok(graphed.length > 0);
    for (const name of graphed)
      assert.ok(name && written.has(name), `the dashboard graphs ${name}, which nothing emits`);
  });

  it('searches exactly the namespace, names and dimension sets the EMF writer emits', () => {
    // A SEARCH schema {Namespace,Dim...} matches only metrics with exactly those dimensions.
    const lines: string[] = [];
    const metrics = createMetrics(CRAWLER_NAMESPACE, { [METRIC_DIMENSIONS.function]: 'fetch' }, (line) => {
      lines.push(line);
    });
    metrics.count(CRAWLER_METRICS.pages, 1, { [METRIC_DIMENSIONS.outcome]: 'fetched' });
    metrics.count(CRAWLER_METRICS.bytes, 10, undefined, 'Bytes');
    metrics.timing(CRAWLER_METRICS.fetchLatency, 5);
    metrics.count(CRAWLER_METRICS.retries, 1);
    metrics.flush();
    const emitted = lines.flatMap((text) => {
      const line = JSON.parse(text);
      const [directive] = line._aws.CloudWatchMetrics;
      return directive.Metrics.map(
        (m: { Name: string }) =>
          `{${[directive.Namespace, ...directive.Dimensions[0]].join(',')}} MetricName="${m.Name}"`,
      );
    });
    const searched = new Set(expressions(json).map((e) => e.replace(/^SEARCH\('(.*)', '[^']+'\)$/, '$1')));
    assert.deepEqual([...searched].sort(), [...new Set(emitted)].sort());
  });

  it('uses only resources of this stack and the stack region', () => {
    const ids = new Set(Object.keys(resourcesOf(json)));
    const text = JSON.stringify(dashboardBody(json, MONITORING_IDS.dashboard));
    for (const [, token] of text.matchAll(/\$\{(?:Ref:)?([^}.]+)[^}]*\}/g)) {
      assert.ok(ids.has(String(token)) || token === 'AWS::Region', `${token} is a resource of this stack`);
    }
    for (const w of widgetsOf(json).filter((x) => x.type === 'metric')) {
      assert.equal(w.properties.region, `\${Ref:AWS::Region}`);
    }
  });
});
