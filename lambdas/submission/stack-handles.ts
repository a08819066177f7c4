/** What submitting to a stack needs: its clients, and its outputs (the names of its queues, table, bucket). */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SSMClient } from '@aws-sdk/client-ssm';

export interface StackHandles {
  clients: {
    sqs: SQSClient;
    dynamodb: DynamoDBClient;
    s3: S3Client;
    eventbridge?: EventBridgeClient;
    ssm?: SSMClient;
  };
  outputs: Record<string, string>;
}
