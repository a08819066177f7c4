/** Aggregate function: SQS batch of result records → gzip JSONL index parts in the page store. */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { processResultBatch } from '../core/aggregate-batch.ts';
import { createAwsClients } from '../shared/aws-clients.ts';
import { AggregateEnvSchema, type Env, loadEnv } from '../shared/env.ts';
import { createLogger } from '../shared/logger.ts';

export function createHandler(rawEnv: Env) {
  const env = loadEnv(AggregateEnvSchema, rawEnv, 'aggregate function');
  const clients = createAwsClients(env);
  const blobs = new S3Blobs(clients.s3, env.PAGE_BUCKET);
  const log = createLogger('aggregate', rawEnv.LOG_LEVEL);

  return async (event: SQSEvent, context?: Pick<Context, 'awsRequestId'>): Promise<SQSBatchResponse> => {
    const report = await processResultBatch(
      event.Records.map((record) => ({ id: record.messageId, body: record.body })),
      { blobs, invocationId: context?.awsRequestId ?? crypto.randomUUID() },
    );
    for (const part of report.written) log.info('index part written', part);
    for (const bad of report.rejected)
      log.error('not a result record', { messageId: bad.id, reason: bad.reason });
    return { batchItemFailures: report.rejected.map((bad) => ({ itemIdentifier: bad.id })) };
  };
}

let lambdaHandler: ReturnType<typeof createHandler> | undefined;

export const handler = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  lambdaHandler ??= createHandler(process.env);
  return lambdaHandler(event, context);
};
