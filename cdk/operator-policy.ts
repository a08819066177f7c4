import { Stack } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { FrontierTable } from './frontier-table.ts';
import type { QueueWithDlq } from './queue-with-dlq.ts';

export interface OperatorPolicyProps {
  readonly taskQueue: QueueWithDlq;
  readonly resultsQueue: QueueWithDlq;
  /** With `-c render=true`: `crawler redrive --queue renders` moves its dead letters back. */
  readonly renderQueue?: QueueWithDlq | undefined;
  readonly pageStore: s3.IBucket;
  readonly frontierTable: FrontierTable;
  readonly eventBus: events.IEventBus;
  /** `crawler schedule add` creates schedules in this group, passing them this role. */
  readonly scheduleGroupName: string;
  readonly schedulerRole: iam.IRole;
  /** The ARN pattern of the crawls' credential parameters. */
  readonly credentialParameters: string;
}

/**
 * What the `crawler` CLI needs against the deployed stack, and nothing else: a customer managed
 * policy the deployer attaches to the operators' users or roles (docs/deploy.md). Each statement
 * names the commands that use it; test/integration/iam-calls.test.ts checks every CLI call is allowed
 * and every grant used.
 */
export class OperatorPolicy extends iam.ManagedPolicy {
  constructor(scope: Construct, id: string, props: OperatorPolicyProps) {
    const stack = Stack.of(scope);
    const queues = (list: sqs.IQueue[]) => list.map((queue) => queue.queueArn);
    const render = props.renderQueue;
    super(scope, id, {
      description: `Operator of ${stack.stackName}: crawler submit, status, results, get, cancel, redrive, list, export, llms-txt, diff, schedule (docs/deploy.md)`,
      statements: [
        // Every command finds the stack's names in its outputs (--stack NAME).
        new iam.PolicyStatement({
          actions: ['cloudformation:DescribeStacks'],
          resources: [
            stack.formatArn({
              service: 'cloudformation',
              resource: 'stack',
              resourceName: `${stack.stackName}/*`,
            }),
          ],
        }),
        // submit: seed tasks and skipped results; redrive: messages moved back.
        new iam.PolicyStatement({
          actions: ['sqs:SendMessage'],
          resources: queues([props.taskQueue, props.resultsQueue, ...(render ? [render] : [])]),
        }),
        // redrive: read the dead-letter queues, release other crawls' messages, delete the moved ones.
        new iam.PolicyStatement({
          actions: ['sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility', 'sqs:DeleteMessage'],
          resources: queues([props.taskQueue.dlq, props.resultsQueue.dlq, ...(render ? [render.dlq] : [])]),
        }),
        // submit: the crawl config, its registry item and the seeds' frontier entries; status: counters;
        // cancel: the crawl state; list: a Query of the crawl registry and its crawls' counters (no Scan:
        // it would read every URL item of the table).
        new iam.PolicyStatement({
          actions: [
            'dynamodb:GetItem',
            'dynamodb:BatchGetItem',
            'dynamodb:PutItem',
            'dynamodb:UpdateItem',
            'dynamodb:Query',
          ],
          resources: [props.frontierTable.tableArn],
        }),
        // schedule remove: the schedule's item (the crawls it ran stay).
        new iam.PolicyStatement({
          actions: ['dynamodb:DeleteItem'],
          resources: [props.frontierTable.tableArn],
        }),
        // schedule add and remove: the EventBridge Scheduler schedule, in the stack's group only.
        new iam.PolicyStatement({
          actions: ['scheduler:CreateSchedule', 'scheduler:DeleteSchedule'],
          resources: [
            stack.formatArn({
              service: 'scheduler',
              resource: 'schedule',
              resourceName: `${props.scheduleGroupName}/*`,
            }),
          ],
        }),
        // schedule add: a schedule is created with the stack's SchedulerRole, and only that one. (No
        // iam:PassedToService condition: the role's trust policy admits scheduler.amazonaws.com alone.)
        new iam.PolicyStatement({ actions: ['iam:PassRole'], resources: [props.schedulerRole.roleArn] }),
        // submit with credentials: their SSM SecureString parameter (core/crawl/credentials.ts).
        new iam.PolicyStatement({
          actions: ['ssm:PutParameter'],
          resources: [props.credentialParameters],
        }),
        // submit: Crawl Started; cancel: Crawl Cancelled (lambdas/core/batches/crawl-events.ts).
        new iam.PolicyStatement({ actions: ['events:PutEvents'], resources: [props.eventBus.eventBusArn] }),
        // results, get: list and read the index parts, ranged reads of WARC records.
        new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [props.pageStore.bucketArn] }),
        new iam.PolicyStatement({
          actions: ['s3:GetObject'],
          resources: [props.pageStore.arnForObjects('*')],
        }),
      ],
    });
  }
}
