/**
 * Crawl events to EventBridge (PutEvents, 10 entries a call). An entry EventBridge fails (throttled,
 * internal) is sent again, a few rounds; what still fails throws, so the caller's step is retried as
 * a whole. EventBridge has no deduplication: each detail's `eventId` lets consumers drop a repeat.
 */
import {
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import { AWS_LIMITS, RetryableError } from '../core/base/index.ts';
import { type CrawlEvent, DETAIL_TYPES, EVENT_SOURCE, type EventPublisher } from '../core/batches/index.ts';

/** Rounds of resending the entries EventBridge failed. */
const RESEND_ROUNDS = 3;

export class EventBridgePublisher implements EventPublisher {
  readonly #client: EventBridgeClient;
  readonly #busName: string;

  constructor(client: EventBridgeClient, busName: string) {
    this.#client = client;
    this.#busName = busName;
  }

  async publish(events: readonly CrawlEvent[]): Promise<void> {
    const entries = events.map(
      (event): PutEventsRequestEntry => ({
        Source: EVENT_SOURCE,
        DetailType: DETAIL_TYPES[event.kind],
        Detail: JSON.stringify(event.detail),
        EventBusName: this.#busName,
        Resources: [],
      }),
    );
    for (let i = 0; i < entries.length; i += AWS_LIMITS.putEventsEntries)
      await this.#send(entries.slice(i, i + AWS_LIMITS.putEventsEntries));
  }

  async #send(entries: PutEventsRequestEntry[]): Promise<void> {
    let pending = entries;
    for (let round = 0; round <= RESEND_ROUNDS && pending.length > 0; round++) {
      const answer = await this.#client.send(new PutEventsCommand({ Entries: pending }));
      if (!answer.FailedEntryCount) return;
      // Entries are answered in order; a failed one has an ErrorCode.
      const failed = pending.filter((_, index) => answer.Entries?.[index]?.ErrorCode !== undefined);
      if (failed.length === pending.length && round === RESEND_ROUNDS) break;
      pending = failed;
    }
    if (pending.length > 0)
      throw new RetryableError(
        'events-unpublished',
        `EventBridge did not take ${pending.length} event(s) on bus ${this.#busName} after ${RESEND_ROUNDS + 1} tries`,
      );
  }
}
