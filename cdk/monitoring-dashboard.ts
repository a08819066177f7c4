/**
 * The crawler's CloudWatch dashboard: the alarms' states, the queues, the functions and the
 * crawler's own EMF metrics. Apart from monitoring.ts, which owns the alarms and their topic, so
 * that each reads whole.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { CRAWLER_METRICS, CRAWLER_NAMESPACE, METRIC_DIMENSIONS } from '../lambdas/shared/metrics.ts';
import type { CrawlerFunction } from './crawler-function.ts';
import type { QueueWithDlq } from './queue-with-dlq.ts';

export interface DashboardProps {
  readonly alarms: cloudwatch.IAlarm[];
  readonly taskQueue: QueueWithDlq;
  readonly resultsQueue: QueueWithDlq;
  /** The functions graphed, each with its event source's maximum concurrency (drawn as a limit). */
  readonly functions: ReadonlyArray<{ fn: CrawlerFunction; name: string; concurrency: number }>;
}

export function createDashboard(scope: Construct, id: string, props: DashboardProps): cloudwatch.Dashboard {
  const dashboard = new cloudwatch.Dashboard(scope, id, { defaultInterval: Duration.hours(3) });
  dashboard.addWidgets(
    new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: props.alarms, width: 24, height: 3 }),
  );
  dashboard.addWidgets(...queueWidgets(props.taskQueue, props.resultsQueue));
  dashboard.addWidgets(...functionWidgets(props.functions));
  dashboard.addWidgets(...crawlerMetricWidgets());
  return dashboard;
}

function queueWidgets(taskQueue: QueueWithDlq, resultsQueue: QueueWithDlq): cloudwatch.IWidget[] {
  return [
    queueWidget('TaskQueue (tasks)', taskQueue),
    queueWidget('ResultsQueue (results)', resultsQueue),
    new cloudwatch.GraphWidget({
      title: 'Dead-letter queues (messages)',
      width: 8,
      left: [
        taskQueue.dlq.metricApproximateNumberOfMessagesVisible({ label: 'TaskDLQ', statistic: 'Maximum' }),
        resultsQueue.dlq.metricApproximateNumberOfMessagesVisible({
          label: 'ResultsDLQ',
          statistic: 'Maximum',
        }),
      ],
      leftYAxis: { min: 0 },
    }),
  ];
}

/** Depth (visible, in flight, delayed) on the left, age of the oldest message on the right. */
function queueWidget(title: string, queue: QueueWithDlq): cloudwatch.GraphWidget {
  return new cloudwatch.GraphWidget({
    title,
    width: 8,
    left: [
      queue.metricApproximateNumberOfMessagesVisible({ label: 'visible', statistic: 'Maximum' }),
      queue.metricApproximateNumberOfMessagesNotVisible({ label: 'in flight', statistic: 'Maximum' }),
      queue.metricApproximateNumberOfMessagesDelayed({ label: 'delayed', statistic: 'Maximum' }),
    ],
    right: [queue.metricApproximateAgeOfOldestMessage({ label: 'oldest (s)', statistic: 'Maximum' })],
    leftYAxis: { min: 0 },
    rightYAxis: { min: 0 },
  });
}

function functionWidgets(functions: DashboardProps['functions']): cloudwatch.IWidget[] {
  return [
    new cloudwatch.GraphWidget({
      title: 'Invocations',
      width: 6,
      left: functions.map(({ fn, name }) => fn.metricInvocations({ label: name, statistic: 'Sum' })),
      leftYAxis: { min: 0 },
    }),
    new cloudwatch.GraphWidget({
      title: 'Errors and throttles',
      width: 6,
      left: functions.flatMap(({ fn, name }) => [
        fn.metricErrors({ label: `${name} errors`, statistic: 'Sum' }),
        fn.metricThrottles({ label: `${name} throttles`, statistic: 'Sum' }),
      ]),
      leftYAxis: { min: 0 },
    }),
    new cloudwatch.GraphWidget({
      title: 'Duration (ms)',
      width: 6,
      left: functions.flatMap(({ fn, name }) => [
        fn.metricDuration({ label: `${name} p50`, statistic: 'p50' }),
        fn.metricDuration({ label: `${name} p99`, statistic: 'p99' }),
        fn.metricDuration({ label: `${name} max`, statistic: 'Maximum' }),
      ]),
      leftAnnotations: functions.map(({ fn, name }) => ({
        value: fn.functionTimeout.toMilliseconds(),
        label: `${name} timeout`,
      })),
      leftYAxis: { min: 0 },
    }),
    new cloudwatch.GraphWidget({
      title: 'Concurrent executions',
      width: 6,
      left: functions.map(({ fn, name }) =>
        fn.metric('ConcurrentExecutions', { label: name, statistic: 'Maximum' }),
      ),
      leftAnnotations: functions.map(({ name, concurrency }) => ({
        value: concurrency,
        label: `${name} max concurrency`,
      })),
      leftYAxis: { min: 0 },
    }),
  ];
}

function crawlerMetricWidgets(): cloudwatch.IWidget[] {
  const fn = METRIC_DIMENSIONS.function;
  return [
    new cloudwatch.GraphWidget({
      title: 'Pages by outcome',
      width: 6,
      left: [crawlerSearch(CRAWLER_METRICS.pages, 'Sum', [fn, METRIC_DIMENSIONS.outcome])],
      leftYAxis: { min: 0 },
    }),
    new cloudwatch.GraphWidget({
      title: 'Bytes stored',
      width: 6,
      left: [crawlerSearch(CRAWLER_METRICS.bytes, 'Sum', [fn])],
      leftYAxis: { min: 0 },
    }),
    new cloudwatch.GraphWidget({
      title: 'Fetch latency (ms)',
      width: 6,
      left: ['p50', 'p90', 'p99'].map((stat) =>
        crawlerSearch(CRAWLER_METRICS.fetchLatency, stat, [fn], `${stat} `),
      ),
      leftYAxis: { min: 0 },
    }),
    new cloudwatch.GraphWidget({
      title: 'Retries',
      width: 6,
      left: [crawlerSearch(CRAWLER_METRICS.retries, 'Sum', [fn])],
      leftYAxis: { min: 0 },
    }),
  ];
}

/**
 * A SEARCH over the crawler's EMF metrics with exactly these dimension names, so the graph shows
 * every value (each outcome, each emitting function) without listing them at deploy time.
 */
export function crawlerSearchExpression(metricName: string, statistic: string, dimensions: string[]): string {
  return `SEARCH('{${[CRAWLER_NAMESPACE, ...dimensions].join(',')}} MetricName="${metricName}"', '${statistic}')`;
}

function crawlerSearch(
  metricName: string,
  statistic: string,
  dimensions: string[],
  label = '',
): cloudwatch.SearchExpression {
  return new cloudwatch.SearchExpression({
    expression: crawlerSearchExpression(metricName, statistic, dimensions),
    label,
  });
}
