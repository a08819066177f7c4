/**
 * A CPU-time allowance for one piece of work (a page's content extraction, core/base/limits.ts
 * CONTENT_LIMITS). It counts the thread's CPU time, not the wall clock, so a loaded machine or a
 * paused container does not cut a page short. The clock is read every 256th `spent()` call: a read is
 * a system call, and work between two checks is linear in what it reads.
 */

/** The current thread's CPU time (user + system) in milliseconds. */
export function threadCpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

const CHECK_EVERY = 256;

export class CpuBudget {
  readonly limitMs: number;
  readonly #clock: () => number;
  #deadline: number;
  #calls = 0;
  #spent = false;

  constructor(limitMs: number, clock: () => number = threadCpuMs) {
    this.limitMs = limitMs;
    this.#clock = clock;
    this.#deadline = clock() + limitMs;
  }

  /** Whether the allowance is used up (once it is, it stays so until `renew`). */
  spent(): boolean {
    if (this.#spent) return true;
    if (++this.#calls % CHECK_EVERY !== 0) return false;
    this.#spent = this.#clock() > this.#deadline;
    return this.#spent;
  }

  /** A new allowance of the same size, from now. */
  renew(): void {
    this.#deadline = this.#clock() + this.limitMs;
    this.#calls = 0;
    this.#spent = false;
  }
}
