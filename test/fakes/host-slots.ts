/**
 * Imitates the HostSlots the per-URL step and the robots gate take (in a visit: VisitPacer,
 * lambdas/core/fetch/visit-pacer.ts) for any number of hosts at once: each host's next free slot, with the
 * pacer's reserve and pushBack arithmetic. Checked against VisitPacer by
 * test/integration/port-contracts.test.ts (hostSlotsContract in test/contracts/host-slots.ts).
 */
import type { HostSlots } from '../../lambdas/core/crawl/index.ts';

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class MemoryHostSlots implements HostSlots {
  /** Per `<crawlId> <host>`: the next free slot. Tests may set it. */
  readonly next = new Map<string, number>();
  /** Every reservation, in order. */
  readonly reserved: Array<{ host: string; slot: number; delayMs: number }> = [];
  /** Every pushBack (Retry-After), in order. */
  readonly pushedBack: Array<{ host: string; notBefore: number }> = [];

  async reserve(crawlId: string, host: string, delayMs: number, now: number): Promise<number> {
    await tick();
    const key = `${crawlId} ${host}`;
    const slot = Math.max(now, this.next.get(key) ?? 0);
    this.next.set(key, slot + delayMs);
    this.reserved.push({ host, slot, delayMs });
    return slot;
  }

  async pushBack(crawlId: string, host: string, notBefore: number): Promise<void> {
    await tick();
    const key = `${crawlId} ${host}`;
    this.next.set(key, Math.max(this.next.get(key) ?? 0, notBefore));
    this.pushedBack.push({ host, notBefore });
  }
}
