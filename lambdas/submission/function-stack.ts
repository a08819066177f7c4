/**
 * The stack as a function sees it: the resources `submitCrawl` needs, named by the function's
 * environment instead of the stack's outputs (the CLI reads those).
 */
import type { AwsClients } from '../shared/aws-clients.ts';
import { FUNCTION_ENV, OUTPUTS } from '../shared/contracts.ts';
import type { FetchEnv } from '../shared/env.ts';
import type { StackHandles } from './stack-handles.ts';

export function functionStack(env: FetchEnv, clients: AwsClients): StackHandles {
  const bus = env[FUNCTION_ENV.eventBusName];
  return {
    clients,
    outputs: {
      [OUTPUTS.frontierTableName]: env.FRONTIER_TABLE,
      [OUTPUTS.taskQueueUrl]: env.TASK_QUEUE_URL,
      [OUTPUTS.resultsQueueUrl]: env.RESULTS_QUEUE_URL,
      [OUTPUTS.pageBucketName]: env.PAGE_BUCKET,
      ...(bus === undefined ? {} : { [OUTPUTS.eventBusName]: bus }),
    },
  };
}
