/**
 * Schedules (`crawler schedule add`, docs/crawling.md "Schedules"): the CLI creates them in this
 * group; each sends its run message to the task queue as this role, which can do nothing else.
 * Apart from the stack, as one step of it.
 */
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type { Construct } from 'constructs';
import { IDS } from '../lambdas/shared/contracts.ts';
import { pinLogicalId } from './logical-id.ts';
import type { QueueWithDlq } from './queue-with-dlq.ts';

export interface CrawlSchedules {
  readonly scheduleGroup: scheduler.CfnScheduleGroup;
  readonly schedulerRole: iam.Role;
}

export function createCrawlSchedules(scope: Construct, taskQueue: QueueWithDlq): CrawlSchedules {
  const scheduleGroup = new scheduler.CfnScheduleGroup(scope, IDS.scheduleGroup, {});
  const schedulerRole = new iam.Role(scope, IDS.schedulerRole, {
    description: "EventBridge Scheduler: sends the crawl schedules' run messages to the task queue",
    assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
      // Only this account's schedules may use it (the confused-deputy guard AWS documents).
      conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(scope).account } },
    }),
  });
  schedulerRole.addToPolicy(
    new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [taskQueue.queueArn] }),
  );
  pinLogicalId(schedulerRole);
  scheduleGroup.overrideLogicalId(IDS.scheduleGroup);
  return { scheduleGroup, schedulerRole };
}
