/**
 * Crawl events (lambdas/core/batches/crawl-events.ts): the bus they go to, and the queue the
 * lifecycle ones also go to, for consumers that poll. Apart from the stack, as one step of it.
 */
import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventTargets from 'aws-cdk-lib/aws-events-targets';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { DETAIL_TYPES, EVENT_SOURCE } from '../lambdas/core/batches/index.ts';
import { IDS } from '../lambdas/shared/contracts.ts';
import { QUEUE } from './limits.ts';
import { pinLogicalId } from './logical-id.ts';

export interface CrawlEvents {
  readonly eventBusName: string;
  readonly eventBus: events.IEventBus;
  readonly queue: sqs.Queue;
  readonly dlq: sqs.Queue;
  readonly rule: events.Rule;
}

export function createCrawlEvents(scope: Construct, eventBusName: string): CrawlEvents {
  const eventBus = events.EventBus.fromEventBusName(scope, 'CrawlEventBus', eventBusName);
  // A consumer that keeps failing on an event parks it in the DLQ instead of receiving it for ever.
  const dlq = new sqs.Queue(scope, IDS.crawlEventsDlq, {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(QUEUE.dlqRetentionDays),
  });
  const queue = new sqs.Queue(scope, IDS.crawlEventsQueue, {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(QUEUE.retentionDays),
    deadLetterQueue: { queue: dlq, maxReceiveCount: QUEUE.maxReceiveCount },
  });
  const rule = new events.Rule(scope, IDS.crawlEventsRule, {
    description: 'Crawl Started, Completed, Cancelled, Failed and Skipped to CrawlEventsQueue',
    eventBus,
    eventPattern: {
      source: [EVENT_SOURCE],
      detailType: [
        DETAIL_TYPES.started,
        DETAIL_TYPES.completed,
        DETAIL_TYPES.cancelled,
        DETAIL_TYPES.failed,
        DETAIL_TYPES.skipped,
      ],
    },
    targets: [new eventTargets.SqsQueue(queue)],
  });
  for (const construct of [queue, dlq, rule]) pinLogicalId(construct);
  return { eventBusName, eventBus, queue, dlq, rule };
}
