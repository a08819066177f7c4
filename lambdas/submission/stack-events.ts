/** Crawl events published on the stack's bus (output EventBusName); a stack without one publishes nothing. */
import { EventBridgePublisher } from '../adapters/eventbridge-publisher.ts';
import type { CrawlEvent } from '../core/batches/index.ts';
import { OUTPUTS } from '../shared/contracts.ts';
import type { StackHandles } from './stack-handles.ts';

export async function publishOnStack(stack: StackHandles, events: readonly CrawlEvent[]): Promise<void> {
  const bus = stack.outputs[OUTPUTS.eventBusName];
  if (bus === undefined || stack.clients.eventbridge === undefined) return;
  await new EventBridgePublisher(stack.clients.eventbridge, bus).publish(events);
}
