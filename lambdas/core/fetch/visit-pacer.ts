/**
 * A host's request pacing while one visit owns it (docs/design/host-visits.md). Nobody else sends to
 * the host during the visit, so the pace is kept in memory: no slot writes, and each gap is measured
 * from when the previous request really left, so a late request never crowds the next one.
 *
 * It is the `HostSlots` of the per-URL step and the robots gate, so robots.txt, Crawl-delay and
 * Retry-After pace through it; the visit saves `nextAt` and `pausedUntil` on the host item when it
 * ends.
 */
import type { HostSlots } from '../crawl/index.ts';

export interface PaceState {
  /** Earliest time (epoch ms) the host's next request may leave. */
  nextAt: number;
  /** End of the host's latest Retry-After pause, if any. */
  pausedUntil?: number;
}

export class VisitPacer implements HostSlots {
  private next: number;
  private paused: number | undefined;
  /** The gap of the latest reservation, and when the latest request really left. */
  private gap = 0;
  private lastDeparture: number | undefined;
  /** The pace before the latest reservation: what `refund` restores. */
  private beforeReservation: { next: number; gap: number; lastDeparture: number | undefined } | undefined;

  constructor(state: PaceState) {
    this.next = state.nextAt;
    this.paused = state.pausedUntil;
  }

  /** The next free slot (now, or the host's next allowed time), and the one after it `gapMs` later. */
  async reserve(gapMs: number, now: number): Promise<number> {
    this.beforeReservation = { next: this.next, gap: this.gap, lastDeparture: this.lastDeparture };
    const slot = Math.max(now, this.next);
    this.next = slot + gapMs;
    this.gap = gapMs;
    return slot;
  }

  /** When a request that called `depart` at `now` would leave. */
  departureAt(now: number): number {
    return this.lastDeparture === undefined ? now : Math.max(now, this.lastDeparture + this.gap);
  }

  /**
   * The last word before a request leaves: it waits until the gap since the previous request's real
   * departure has passed, then records this departure. A slot handed out earlier cannot be used late
   * enough to crowd the next request.
   */
  async depart(now: () => number, sleep: (ms: number) => Promise<void>): Promise<void> {
    const wait = this.departureAt(now()) - now();
    if (wait > 0) await sleep(wait);
    this.lastDeparture = now();
    this.next = Math.max(this.next, this.lastDeparture + this.gap);
  }

  /**
   * When the request that last departed was really written to the socket: a busy event loop can
   * send it well after `depart`, and the next request then keeps its gap from the real send.
   */
  sent(at: number): void {
    if (this.lastDeparture === undefined || at <= this.lastDeparture) return;
    this.lastDeparture = at;
    this.next = Math.max(this.next, at + this.gap);
  }

  /**
   * The request reserved last never reached the host: the address guard refused it before dialing
   * (a name that resolves to loopback, the metadata address). It owes the host no gap, so the pace is
   * as it was before its reservation: the URLs after it, decided without a request (robots.txt
   * refused), do not wait a delay for nothing.
   */
  refund(): void {
    if (this.beforeReservation === undefined) return;
    ({ next: this.next, gap: this.gap, lastDeparture: this.lastDeparture } = this.beforeReservation);
    this.beforeReservation = undefined;
  }

  async pushBack(notBefore: number): Promise<void> {
    this.next = Math.max(this.next, notBefore);
    this.paused = Math.max(this.paused ?? 0, notBefore);
  }

  get state(): PaceState {
    return this.paused === undefined
      ? { nextAt: this.next }
      : { nextAt: this.next, pausedUntil: this.paused };
  }
}
