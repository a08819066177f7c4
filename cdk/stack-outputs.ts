/**
 * The stack's outputs (lambdas/shared/contracts.ts OUTPUTS): the names the CLI and operators find
 * the deployed resources by. Apart from the stack, as its last step but one.
 */
import { CfnOutput, type Stack } from 'aws-cdk-lib';
import { credentialsPrefix, OUTPUTS } from '../lambdas/shared/contracts.ts';
import type { CrawlEvents } from './crawl-events.ts';
import type { CrawlerResources } from './crawl-pipeline.ts';
import type { CrawlSchedules } from './crawl-schedules.ts';
import type { CrawlerMonitoring } from './monitoring.ts';
import type { OperatorPolicy } from './operator-policy.ts';
import type { RenderPipeline } from './render-pipeline.ts';

export interface StackOutputsProps {
  readonly crawler: CrawlerResources;
  readonly crawlEvents: CrawlEvents;
  readonly schedules: CrawlSchedules;
  readonly operatorPolicy: OperatorPolicy;
  readonly monitoring: CrawlerMonitoring;
  readonly render: RenderPipeline | undefined;
}

export function addStackOutputs(stack: Stack, props: StackOutputsProps): void {
  const { taskQueue, resultsQueue, pageStore, frontierTable } = props.crawler;
  const { monitoring, schedules, render } = props;
  const output = (key: string, value: string, description: string) =>
    new CfnOutput(stack, key, { value, description });
  output(OUTPUTS.taskQueueUrl, taskQueue.queueUrl, 'Send crawl tasks here');
  output(
    OUTPUTS.taskDlqUrl,
    taskQueue.dlq.queueUrl,
    'Tasks parked for inspection: malformed, or failed maxReceiveCount times',
  );
  output(OUTPUTS.resultsQueueUrl, resultsQueue.queueUrl, 'One result record per finished URL');
  output(OUTPUTS.resultsDlqUrl, resultsQueue.dlq.queueUrl, 'Result records the aggregator could not process');
  output(OUTPUTS.pageBucketName, pageStore.bucketName, 'WARC files, results index parts, crawl summaries');
  output(
    OUTPUTS.accessLogBucketName,
    pageStore.accessLogs.bucketName,
    "The page bucket's server access logs (retained, like the page bucket, when the stack is deleted)",
  );
  output(
    OUTPUTS.frontierTableName,
    frontierTable.tableName,
    'Frontier: seen URLs, politeness slots, counters',
  );
  output(
    OUTPUTS.alarmTopicArn,
    monitoring.topic.topicArn,
    'SNS topic the alarms notify (ALARM and OK); subscribe to it to be told',
  );
  output(OUTPUTS.dashboardName, monitoring.dashboard.dashboardName, 'CloudWatch dashboard of the crawler');
  output(
    OUTPUTS.operatorPolicyArn,
    props.operatorPolicy.managedPolicyArn,
    'Managed policy with what the crawler CLI needs on this stack; attach it to the operators (docs/deploy.md)',
  );
  output(
    OUTPUTS.eventBusName,
    props.crawlEvents.eventBusName,
    'The EventBridge bus crawl events are published on (docs/deploy.md, Events)',
  );
  output(
    OUTPUTS.crawlEventsQueueUrl,
    props.crawlEvents.queue.queueUrl,
    'Crawl Started, Completed, Cancelled, Failed and Skipped events, for consumers that poll',
  );
  output(
    OUTPUTS.scheduleGroupName,
    schedules.scheduleGroup.ref,
    'EventBridge Scheduler group of `crawler schedule add`',
  );
  output(
    OUTPUTS.schedulerRoleArn,
    schedules.schedulerRole.roleArn,
    'The role schedules send their run messages as',
  );
  output(OUTPUTS.taskQueueArn, taskQueue.queueArn, 'Where schedules send their run messages');
  output(
    OUTPUTS.credentialsPrefix,
    credentialsPrefix(stack.stackName),
    "Where a crawl's credentials are kept: the SSM SecureString parameter <prefix><crawlId>",
  );
  if (render) {
    output(OUTPUTS.renderQueueUrl, render.queue.queueUrl, 'Pages the fetch function sends to render');
    output(OUTPUTS.renderDlqUrl, render.queue.dlq.queueUrl, 'Pages the render function could not process');
  }
}
