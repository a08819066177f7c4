/**
 * What the fetch and render functions both hand a captured page's outcomes to: the results queue,
 * the task queue (links, visits), the function's own dead-letter queue, the crawl budget, and the
 * real clock. One wiring for both, so the render function sends exactly as the fetch function does.
 */
import type { CrawlConfigReader } from '../core/crawl/index.ts';
import type { AwsClients } from '../shared/aws-clients.ts';
import { functionBudget } from './crawl-budget.ts';
import { SqsDeadLetterSender, SqsResultSender, SqsTaskSender } from './queues.ts';

export interface OutputQueues {
  RESULTS_QUEUE_URL: string;
  TASK_QUEUE_URL: string;
  FRONTIER_TABLE: string;
}

export function functionOutputs(
  clients: Pick<AwsClients, 'sqs' | 'dynamodb' | 'eventbridge' | 'counter'>,
  env: OutputQueues,
  deadLetterQueueUrl: string,
  configs: CrawlConfigReader,
  bus: string | undefined,
) {
  return {
    results: new SqsResultSender(clients.sqs, env.RESULTS_QUEUE_URL),
    tasks: new SqsTaskSender(clients.sqs, env.TASK_QUEUE_URL),
    deadLetters: new SqsDeadLetterSender(clients.sqs, deadLetterQueueUrl),
    budget: functionBudget(clients, env.FRONTIER_TABLE, configs, bus),
    now: () => Date.now(),
    sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  };
}
