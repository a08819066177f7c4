/**
 * A bound on the response body bytes a container holds at once (docs/performance.md, Memory).
 *
 * - The fetcher takes one BodyLease per response body. Before reading on, a lease reserves a window
 *   of bytes (enough for the next socket read); when the budget cannot give it, the response is
 *   paused, so TCP flow control holds the sender, until other bodies give bytes back. Waiters are
 *   served in order.
 * - Holds: bytes are given back when the response completes, unless it was fetched inside
 *   `hold.run()`: then they stay charged to the hold until `hold.release()`, e.g. until the page has
 *   been written to the WARC file and its body dropped.
 * - Progress: one body at a time may overdraw. When a reservation does not fit and nothing is
 *   overdrawing, it is granted anyway and that lease reads on past the budget. The right passes on
 *   once the bytes in use are back within the budget or that body is given back (when it went to a
 *   hold: when the hold is released; until then the hold's later bodies, such as a task's page after
 *   its robots.txt, may overdraw too). Every other grant fits, so the bytes in use never exceed
 *   maxBytes + the bodies of one hold (one body without holds; a lease reserves at most its cap).
 *   A hold must be released whatever other fetches do; one that is not stalls the waiters until
 *   their total deadlines cut them (truncated 'time'), never longer.
 * - A chunk larger than the lease's reservation is charged all the same (it is already in memory);
 *   with a window of 128 KiB this does not happen on a plain socket, whose reads are at most 64 KiB
 *   plus a 64 KiB stream buffer.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** What a lease reserves ahead of the next chunk: one socket read (64 KiB) over a full stream buffer (64 KiB). */
export const BODY_WINDOW_BYTES = 128 * 1024;

/** The budget's books, as leases and holds see them. */
interface Ledger {
  /** Grants at once (true), or queues `granted` to be called when the bytes are given (false). */
  acquire(lease: BodyLease, bytes: number, granted: () => void): boolean;
  force(bytes: number): void;
  /**
   * The lease is done: its queued request (if any) is dropped, `reserved` bytes are given back, and
   * `kept` too unless `hold` (not yet released) takes them, along with the lease's right to overdraw.
   */
  end(lease: BodyLease, reserved: number, kept: number, hold: BodyHold | undefined): void;
  holdBytes(hold: BodyHold): number;
  releaseHold(hold: BodyHold): void;
  run<T>(hold: BodyHold, fn: () => T): T;
}

interface Waiter {
  lease: BodyLease;
  bytes: number;
  granted: () => void;
}

export class BodyBudget {
  readonly maxBytes: number;
  #used = 0;
  #peak = 0;
  #waits = 0;
  readonly #queue: Waiter[] = [];
  /**
   * The lease allowed past maxBytes (or the hold its body went to); cleared once the bytes in use are
   * back within maxBytes or that body is given back.
   */
  #overdraft: BodyLease | BodyHold | undefined;
  readonly #holdBytes = new Map<BodyHold, number>();
  readonly #context = new AsyncLocalStorage<BodyHold>();
  readonly #ledger: Ledger;

  constructor(maxBytes: number) {
    if (!(maxBytes > 0) || !Number.isFinite(maxBytes)) {
      throw new RangeError(`a body budget must be a positive number of bytes, got ${maxBytes}`);
    }
    this.maxBytes = maxBytes;
    this.#ledger = {
      acquire: (lease, bytes, granted) => this.#acquire(lease, bytes, granted),
      force: (bytes) => this.#charge(bytes),
      end: (lease, reserved, kept, hold) => {
        const index = this.#queue.findIndex((waiter) => waiter.lease === lease);
        if (index !== -1) this.#queue.splice(index, 1);
        const held = hold === undefined ? undefined : this.#holdBytes.get(hold);
        let back = reserved + kept;
        if (hold !== undefined && held !== undefined) {
          this.#holdBytes.set(hold, held + kept);
          back = reserved;
        }
        // The excess of an overdraft leaves with the body: directly, or when its hold is released.
        if (this.#overdraft === lease) this.#overdraft = back === reserved + kept ? undefined : hold;
        this.#give(back);
      },
      holdBytes: (hold) => this.#holdBytes.get(hold) ?? 0,
      releaseHold: (hold) => {
        const held = this.#holdBytes.get(hold);
        if (held === undefined) return;
        this.#holdBytes.delete(hold);
        if (this.#overdraft === hold) this.#overdraft = undefined;
        this.#give(held);
      },
      run: (hold, fn) => this.#context.run(hold, fn),
    };
  }

  /** Bytes charged now: kept bodies, held bodies and reservations. */
  get usedBytes(): number {
    return this.#used;
  }

  /** The most bytes charged at once since construction or resetPeak(). */
  get peakBytes(): number {
    return this.#peak;
  }

  /** Leases waiting for bytes. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Times a lease was made to wait for bytes, since construction. */
  get waits(): number {
    return this.#waits;
  }

  resetPeak(): void {
    this.#peak = this.#used;
  }

  /** The account of one response body (taken by the fetcher), charged to `hold` once complete. */
  lease(hold?: BodyHold): BodyLease {
    return new BodyLease(this.#ledger, hold);
  }

  /** A new hold: bodies fetched inside its run() stay charged until its release(). */
  hold(): BodyHold {
    const hold = new BodyHold(this.#ledger);
    this.#holdBytes.set(hold, 0);
    return hold;
  }

  /** The hold whose run() the caller is inside, if any. */
  currentHold(): BodyHold | undefined {
    return this.#context.getStore();
  }

  #acquire(lease: BodyLease, bytes: number, granted: () => void): boolean {
    // A hold that overdrew keeps the right for its later bodies (a task's page after its robots.txt):
    // made to wait, it could never release what it holds.
    if (lease === this.#overdraft || (lease.hold !== undefined && lease.hold === this.#overdraft)) {
      this.#charge(bytes);
      return true;
    }
    // In order: nobody passes a lease already waiting (the queue is only ever non-empty while another
    // lease overdraws, so an empty queue means the right to overdraw is free or this one's).
    if (this.#queue.length === 0) {
      if (this.#used + bytes > this.maxBytes) {
        if (this.#overdraft !== undefined) {
          this.#wait({ lease, bytes, granted });
          return false;
        }
        this.#overdraft = lease;
      }
      this.#charge(bytes);
      return true;
    }
    this.#wait({ lease, bytes, granted });
    return false;
  }

  #wait(waiter: Waiter): void {
    this.#queue.push(waiter);
    this.#waits += 1;
  }

  #give(bytes: number): void {
    this.#used -= bytes;
    if (this.#used <= this.maxBytes) this.#overdraft = undefined;
    this.#pump();
  }

  #pump(): void {
    for (let head = this.#queue[0]; head !== undefined; head = this.#queue[0]) {
      const fits = this.#used + head.bytes <= this.maxBytes;
      if (!fits) {
        if (this.#overdraft !== undefined && this.#overdraft !== head.lease) return;
        this.#overdraft = head.lease;
      }
      this.#queue.shift();
      this.#charge(head.bytes);
      head.granted();
    }
  }

  #charge(bytes: number): void {
    this.#used += bytes;
    if (this.#used > this.#peak) this.#peak = this.#used;
  }
}

/** One response body's share of a BodyBudget. */
export class BodyLease {
  /** Where the kept bytes go when the body is complete; undefined: given back then. */
  readonly hold: BodyHold | undefined;
  readonly #ledger: Ledger;
  #reserved = 0;
  #kept = 0;
  #waiting = false;
  #ended = false;

  constructor(ledger: Ledger, hold: BodyHold | undefined) {
    this.#ledger = ledger;
    this.hold = hold;
  }

  get reservedBytes(): number {
    return this.#reserved;
  }

  get keptBytes(): number {
    return this.#kept;
  }

  get waiting(): boolean {
    return this.#waiting;
  }

  /**
   * Tops the reservation up to `bytes`. True when it is; false when the lease now waits in line, and
   * then `onGranted` is called (from a microtask, never from inside the caller's stack) once it is.
   */
  reserve(bytes: number, onGranted: () => void): boolean {
    const need = bytes - this.#reserved;
    if (this.#ended || need <= 0) return true;
    if (this.#waiting) return false;
    const granted = (): void => {
      this.#waiting = false;
      this.#reserved += need;
      queueMicrotask(onGranted);
    };
    if (this.#ledger.acquire(this, need, granted)) {
      this.#reserved += need;
      return true;
    }
    this.#waiting = true;
    return false;
  }

  /** `bytes` of body were kept: taken from the reservation, the rest charged anyway. */
  keep(bytes: number): void {
    if (this.#ended) return;
    const reserved = Math.min(bytes, this.#reserved);
    this.#reserved -= reserved;
    this.#kept += bytes;
    if (bytes > reserved) this.#ledger.force(bytes - reserved);
  }

  /**
   * The body is complete: the unused reservation is given back, and the kept bytes too unless the
   * lease's hold takes them until it is released. Ends any wait. Idempotent, like cancel().
   */
  end(): void {
    this.#finish(this.hold);
  }

  /** The body is dropped (an error): everything is given back, any wait ended. */
  cancel(): void {
    this.#finish(undefined);
  }

  #finish(hold: BodyHold | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#waiting = false;
    const reserved = this.#reserved;
    const kept = this.#kept;
    this.#reserved = 0;
    this.#kept = 0;
    this.#ledger.end(this, reserved, kept, hold);
  }
}

/** Bodies fetched inside run() stay charged until release(), e.g. until the page is in the WARC writer. */
export class BodyHold {
  readonly #ledger: Ledger;

  constructor(ledger: Ledger) {
    this.#ledger = ledger;
  }

  /** Body bytes charged to this hold now. */
  get bytes(): number {
    return this.#ledger.holdBytes(this);
  }

  /** Runs `fn`; fetches it starts (awaited or not) charge their bodies to this hold. */
  run<T>(fn: () => T): T {
    return this.#ledger.run(this, fn);
  }

  /** Gives the held bytes back; bodies that complete later are given back as they complete. Idempotent. */
  release(): void {
    this.#ledger.releaseHold(this);
  }
}
