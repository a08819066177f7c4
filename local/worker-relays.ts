// What a handler's worker thread counts that the main thread must see (local/worker-container.ts): each
// relay takes what accumulated in the worker since its last take, and absorbs it on the main thread.
// Another process-wide tally is one more entry in RELAYS.
import { type AwsCallCounter, diffSnapshots } from '../lambdas/shared/aws-call-counter.ts';
import type { AwsCallLedger, LedgerSnapshot } from '../lambdas/shared/aws-call-ledger.ts';
import { processMeters } from './process-meters.ts';

export interface Relay<T> {
  name: string;
  /** In the worker: what accumulated since the last take (undefined when nothing did). */
  take(): T | undefined;
  /** On the main thread: adds what a worker took. */
  absorb(delta: T): void;
}

/** The AWS call counter (cost figures): windows of the worker's counter added to the main one's. */
export function counterRelay(
  counter: AwsCallCounter = processMeters.counter,
): Relay<ReturnType<AwsCallCounter['snapshot']>> {
  let last = counter.snapshot();
  return {
    name: 'aws-call-counter',
    take() {
      const now = counter.snapshot();
      const delta = diffSnapshots(last, now);
      last = now;
      return Object.keys(delta.operations).length > 0 ? delta : undefined;
    },
    absorb: (delta) => counter.absorb(delta),
  };
}

/** The IAM ledger (test/integration/iam-calls.test.ts): the worker's entries, handed over and cleared. */
export function ledgerRelay(ledger: AwsCallLedger = processMeters.ledger): Relay<LedgerSnapshot> {
  return {
    name: 'aws-call-ledger',
    take() {
      const { entries } = ledger.snapshot();
      ledger.reset();
      return entries.length > 0 ? { entries } : undefined;
    },
    absorb: (delta) => ledger.absorb(delta),
  };
}

/** Built once per thread: in a worker, each relay's baseline is the worker's start. */
export function createRelays(): ReadonlyArray<Relay<unknown>> {
  return [counterRelay() as Relay<unknown>, ledgerRelay() as Relay<unknown>];
}

/** In the worker: every relay's delta, by name (undefined when there is nothing to send). */
export function takeAll(relays: ReadonlyArray<Relay<unknown>>): Record<string, unknown> | undefined {
  const deltas: Record<string, unknown> = {};
  for (const relay of relays) {
    const delta = relay.take();
    if (delta !== undefined) deltas[relay.name] = delta;
  }
  return Object.keys(deltas).length > 0 ? deltas : undefined;
}

/** On the main thread: hands each delta to its relay. */
export function absorbAll(relays: ReadonlyArray<Relay<unknown>>, deltas: Record<string, unknown>): void {
  for (const relay of relays) if (relay.name in deltas) relay.absorb(deltas[relay.name]);
}
