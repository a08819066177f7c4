// Quiescence: the pipeline is idle when every consumed queue is empty (visible, in flight and
// delayed) and no poller holds messages, unchanged over consecutive checks.
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';

export interface QueueDepth {
  visible: number;
  inFlight: number;
  delayed: number;
}

export interface IdleSnapshot {
  /** Depth of every provisioned queue by logical id, DLQs included. */
  queues: Record<string, QueueDepth>;
  checks: number;
}

export interface IdleProbe {
  sqs: SQSClient;
  /** Logical id -> URL of every queue to report on. */
  queues: Record<string, string>;
  /** Queues that must drain (those an enabled event source consumes); DLQs only fill up. */
  gating: readonly string[];
  busySlots(): number;
  activity(): number;
}

export interface WaitForIdleOptions {
  /** Between checks; default 200 ms. */
  intervalMs?: number;
  /** Consecutive idle checks needed; default 2. */
  stableChecks?: number;
  /** Reject after this long; default: wait indefinitely. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called after every check, e.g. for progress output. */
  onCheck?: (snapshot: IdleSnapshot) => void;
}

export async function waitForIdle(probe: IdleProbe, options: WaitForIdleOptions = {}): Promise<IdleSnapshot> {
  const interval = options.intervalMs ?? 200;
  const needed = options.stableChecks ?? 2;
  const started = Date.now();
  let stable = 0;
  let lastActivity = -1;
  for (let checks = 1; ; checks++) {
    options.signal?.throwIfAborted();
    const before = probe.activity();
    const busyBefore = probe.busySlots();
    const queues = await depths(probe);
    const after = probe.activity();
    const drained = probe.gating.every((id) => {
      const d = queues[id];
      return d !== undefined && holdsNothing(d);
    });
    // Activity between or during the checks means work moved through: not yet stable.
    const quiet =
      busyBefore === 0 &&
      probe.busySlots() === 0 &&
      before === after &&
      (stable === 0 || after === lastActivity);
    stable = drained && quiet ? stable + 1 : 0;
    lastActivity = after;
    const snapshot = { queues, checks };
    options.onCheck?.(snapshot);
    if (stable >= needed) return snapshot;
    if (options.timeoutMs !== undefined && Date.now() - started > options.timeoutMs) {
      throw new Error(`not idle after ${options.timeoutMs} ms: ${JSON.stringify(queues)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/** No message visible, in flight or delayed. */
export function holdsNothing(depth: QueueDepth): boolean {
  return depth.visible + depth.inFlight + depth.delayed === 0;
}

/** Each queue's depth, read once. */
export async function depths(probe: Pick<IdleProbe, 'sqs' | 'queues'>): Promise<Record<string, QueueDepth>> {
  const entries = await Promise.all(
    Object.entries(probe.queues).map(async ([id, url]) => {
      const { Attributes: a = {} } = await probe.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ],
        }),
      );
      const depth: QueueDepth = {
        visible: Number(a.ApproximateNumberOfMessages ?? 0),
        inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
        delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
      };
      return [id, depth] as const;
    }),
  );
  return Object.fromEntries(entries);
}
