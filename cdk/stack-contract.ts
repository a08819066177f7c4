// The stack's names that the CLI, the local runtime and the tests rely on, without aws-cdk-lib: a
// module that needs only these names (the local crawl, whose template is cached) starts fast.

/** The deployed stack's name; the CLI finds the stack's outputs by it. */
export const STACK_NAME = 'ServerlessCrawler';

/**
 * Construct ids of the main resources. They are also their CloudFormation logical ids (pinned),
 * so the local runtime, the CLI and the tests can name them without hashes.
 */
export const IDS = {
  taskQueue: 'TaskQueue',
  taskDlq: 'TaskDLQ',
  resultsQueue: 'ResultsQueue',
  resultsDlq: 'ResultsDLQ',
  pageStore: 'PageStore',
  frontierTable: 'FrontierTable',
  fetchFunction: 'FetchFunction',
  aggregateFunction: 'AggregateFunction',
  operatorPolicy: 'OperatorPolicy',
} as const;

/** Stack output keys. */
export const OUTPUTS = {
  taskQueueUrl: 'TaskQueueUrl',
  taskDlqUrl: 'TaskDlqUrl',
  resultsQueueUrl: 'ResultsQueueUrl',
  resultsDlqUrl: 'ResultsDlqUrl',
  pageBucketName: 'PageBucketName',
  accessLogBucketName: 'AccessLogBucketName',
  frontierTableName: 'FrontierTableName',
  alarmTopicArn: 'AlarmTopicArn',
  dashboardName: 'DashboardName',
  operatorPolicyArn: 'OperatorPolicyArn',
} as const;

/** Handler modules, relative to the repo root. */
export const HANDLERS = {
  fetch: 'lambdas/fetch/handler.ts',
  aggregate: 'lambdas/aggregate/handler.ts',
} as const;
