/**
 * `--render` (-c render=true): pages to render go from the fetch function to the render function
 * through RenderQueue; it sends their results and links itself (core/batches/render-batch.ts).
 * Apart from the stack: the whole optional stage, built or not as one step.
 */
import { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { FUNCTION_ENV, HANDLERS, IDS } from '../lambdas/shared/contracts.ts';
import { CHROMIUM_LAYER_MODULES, ChromiumLayer } from './chromium-layer.ts';
import type { CrawlerResources } from './crawl-pipeline.ts';
import { CrawlerFunction } from './crawler-function.ts';
import { grantRenderAccess } from './function-access.ts';
import { RENDER_EVENT_SOURCE, RENDER_FUNCTION } from './limits.ts';
import { pinLogicalId } from './logical-id.ts';
import { QueueWithDlq } from './queue-with-dlq.ts';

export interface RenderPipeline {
  readonly queue: QueueWithDlq;
  readonly fn: CrawlerFunction;
  readonly layer: ChromiumLayer;
}

export function createRenderPipeline(scope: Construct, crawler: CrawlerResources): RenderPipeline {
  const layer = new ChromiumLayer(scope, IDS.chromiumLayer);
  const fn = new CrawlerFunction(scope, IDS.renderFunction, {
    handlerModule: HANDLERS.render,
    description:
      'Renders pages from RenderQueue in headless Chromium, stores the DOM, sends results and links',
    timeoutSeconds: RENDER_FUNCTION.timeoutSeconds,
    memoryMb: RENDER_FUNCTION.memoryMb,
    ephemeralStorageMiB: RENDER_FUNCTION.ephemeralStorageMiB,
    architecture: lambda.Architecture.X86_64,
    layers: [layer],
    externalModules: CHROMIUM_LAYER_MODULES,
    // It sends the visits its pages' links wake to TaskQueue, which the fetch function consumes,
    // and that one sends pages back here: the crawl's own loop, bounded as the fetch function's is.
    recursiveLoop: lambda.RecursiveLoop.ALLOW,
  });
  const queue = new QueueWithDlq(scope, IDS.renderQueue, {
    dlqId: IDS.renderDlq,
    consumerTimeout: fn.functionTimeout,
    consumerMaxBatchingWindow: Duration.seconds(RENDER_EVENT_SOURCE.maxBatchingWindowSeconds),
  });
  fn.consumeFrom(queue, RENDER_EVENT_SOURCE);
  crawler.fetchFunction.addEnvironment(FUNCTION_ENV.renderQueueUrl, queue.queueUrl);
  fn.addEnvironment(FUNCTION_ENV.renderQueueUrl, queue.queueUrl);
  fn.addEnvironment(FUNCTION_ENV.renderDlqUrl, queue.dlq.queueUrl);
  fn.addEnvironment(FUNCTION_ENV.taskQueueUrl, crawler.taskQueue.queueUrl);
  fn.addEnvironment(FUNCTION_ENV.resultsQueueUrl, crawler.resultsQueue.queueUrl);
  fn.addEnvironment(FUNCTION_ENV.pageBucket, crawler.pageStore.bucketName);
  fn.addEnvironment(FUNCTION_ENV.frontierTable, crawler.frontierTable.tableName);
  fn.addEnvironment(FUNCTION_ENV.eventBusName, crawler.eventBusName);
  grantRenderAccess(crawler, fn, queue);
  for (const construct of [queue, queue.dlq, fn, layer]) pinLogicalId(construct);
  return { queue, fn, layer };
}
