import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';

/** Key and TTL attribute names the handlers write; the table schema is part of their contract. */
export const FRONTIER_KEYS = { partitionKey: 'pk', sortKey: 'sk', ttlAttribute: 'expiresAt' } as const;

/**
 * The DynamoDB table behind the frontier: seen-URL set, per-host politeness slots, crawl config and
 * counters, one generic (pk, sk) single-table layout. On-demand billing because crawl traffic is
 * bursty; TTL expires finished crawls' items; point-in-time recovery because crawl state is not
 * re-creatable. No physical name, so stacks never collide. Retained on stack deletion (CDK default).
 */
export class FrontierTable extends dynamodb.Table {
  constructor(scope: Construct, id: string) {
    super(scope, id, {
      partitionKey: { name: FRONTIER_KEYS.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: FRONTIER_KEYS.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: FRONTIER_KEYS.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
  }
}
