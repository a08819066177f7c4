/**
 * Imitates the HostSlots the per-URL step and the robots gate take (in a visit: VisitPacer,
 * lambdas/core/fetch/visit-pacer.ts): one visited host's next free slot, with the pacer's reserve and
 * pushBack arithmetic, every reservation and pushBack recorded. Checked against VisitPacer by
 * test/integration/port-contracts.test.ts (hostSlotsContract in test/contracts/host-slots.ts).
 */
import type { HostSlots } from '../../lambdas/core/crawl/index.ts';

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class MemoryHostSlots implements HostSlots {
  /** The next free slot. Tests may set it. */
  next = 0;
  /** Every reservation, in order. */
  readonly reserved: Array<{ slot: number; delayMs: number }> = [];
  /** Every pushBack (Retry-After), in order. */
  readonly pushedBack: Array<{ notBefore: number }> = [];

  async reserve(delayMs: number, now: number): Promise<number> {
    await tick();
    const slot = Math.max(now, this.next);
    this.next = slot + delayMs;
    this.reserved.push({ slot, delayMs });
    return slot;
  }

  async pushBack(notBefore: number): Promise<void> {
    await tick();
    this.next = Math.max(this.next, notBefore);
    this.pushedBack.push({ notBefore });
  }
}
