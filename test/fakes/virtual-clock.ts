/**
 * A discrete-event clock for simulations (bench/scale.ts): hours of crawl in minutes of wall time.
 *
 * Virtual time moves only when nothing can run: every chain of work is waiting on a virtual timer
 * (`sleep`, or the global timers while `install()`ed). The check is exact, not a guess: it runs in a
 * `setImmediate` callback (so the microtask queue is empty) and counts the immediates the code under
 * test has queued (the fakes yield with `setImmediate`); when none is queued, the earliest timers fire.
 *
 * `install()` points the global setTimeout/setInterval (the core's retry back-offs, the batch's
 * periodic flush) at virtual time and counts setImmediate; node's own timers (the test runner's) are
 * not affected, as node's internals do not go through the globals.
 */

interface Timer {
  at: number;
  seq: number;
  fire: () => void;
  cancelled: boolean;
}

const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  clearImmediate: globalThis.clearImmediate,
};

/** What a virtual setTimeout returns: enough of node's Timeout for callers that unref or clear it. */
class VirtualTimeout {
  timer: Timer | undefined;
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  hasRef(): boolean {
    return true;
  }
  [Symbol.dispose](): void {
    if (this.timer) this.timer.cancelled = true;
  }
}

export class VirtualClock {
  #now: number;
  #seq = 0;
  readonly #heap: Timer[] = [];
  #pendingImmediates = 0;
  /** Timers fired so far (events of the simulation). */
  events = 0;

  constructor(startMs: number) {
    this.#now = startMs;
  }

  readonly now = (): number => this.#now;

  readonly sleep = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      this.schedule(ms, resolve);
    });

  /** Runs `fire` once `ms` of virtual time have passed. */
  schedule(ms: number, fire: () => void): Timer {
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const timer: Timer = { at: this.#now + delay, seq: this.#seq++, fire, cancelled: false };
    this.#push(timer);
    return timer;
  }

  /** Points the global timers at this clock until the returned function is called. */
  install(): () => void {
    const g = globalThis as unknown as Record<string, unknown>;
    /** Per immediate queued through the global, how to uncount it if it is cleared before it runs. */
    const pending = new WeakMap<object, () => void>();
    g.setTimeout = (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      const handle = new VirtualTimeout();
      handle.timer = this.schedule(ms ?? 0, () => fn(...args));
      return handle;
    };
    g.clearTimeout = (handle: unknown) => {
      if (handle instanceof VirtualTimeout && handle.timer) handle.timer.cancelled = true;
      else real.clearTimeout(handle as Parameters<typeof clearTimeout>[0]);
    };
    g.setInterval = (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      const handle = new VirtualTimeout();
      const every = Math.max(1, ms ?? 1);
      const tick = () => {
        handle.timer = this.schedule(every, tick);
        fn(...args);
      };
      handle.timer = this.schedule(every, tick);
      return handle;
    };
    g.clearInterval = g.clearTimeout;
    g.setImmediate = (fn: (...args: unknown[]) => void, ...args: unknown[]) => {
      this.#pendingImmediates++;
      let ran = false;
      const immediate = real.setImmediate(() => {
        ran = true;
        this.#pendingImmediates--;
        fn(...args);
      });
      pending.set(immediate, () => {
        if (!ran) this.#pendingImmediates--;
      });
      return immediate;
    };
    g.clearImmediate = (immediate: NodeJS.Immediate) => {
      pending.get(immediate)?.();
      real.clearImmediate(immediate);
    };
    return () => {
      Object.assign(globalThis, real);
    };
  }

  /**
   * Runs the simulation until `main` settles: whenever nothing can run, virtual time jumps to the
   * earliest timer. Throws if nothing can run and no timer is due (a deadlock), or past `maxMs`.
   */
  async run<T>(main: Promise<T>, maxMs = Number.POSITIVE_INFINITY): Promise<T> {
    let settled = false;
    const watched = main.finally(() => {
      settled = true;
    });
    watched.catch(() => {});
    const start = this.#now;
    while (!settled) {
      await this.#idle();
      if (settled) break;
      const next = this.#pop();
      if (next === undefined) throw new Error('simulation stuck: nothing can run and no timer is due');
      if (next.at - start > maxMs)
        throw new Error(`simulation ran past ${Math.round(maxMs / 1000)} s of virtual time`);
      this.#now = Math.max(this.#now, next.at);
      this.events++;
      next.fire();
      // Every timer due at the same instant fires before anything runs: they are simultaneous.
      for (let same = this.#peek(); same && same.at <= this.#now; same = this.#peek()) {
        this.#pop();
        this.events++;
        same.fire();
      }
    }
    return watched;
  }

  /** Resolves in an immediate callback that finds no immediate of the code under test queued. */
  #idle(): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.#pendingImmediates > 0) real.setImmediate(check);
        else resolve();
      };
      real.setImmediate(check);
    });
  }

  #peek(): Timer | undefined {
    while (this.#heap.length > 0 && this.#heap[0]!.cancelled) this.#popRaw();
    return this.#heap[0];
  }

  #pop(): Timer | undefined {
    return this.#peek() === undefined ? undefined : this.#popRaw();
  }

  #push(timer: Timer): void {
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #popRaw(): Timer {
    const heap = this.#heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
        if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
        if (least === i) break;
        [heap[i], heap[least]] = [heap[least]!, heap[i]!];
        i = least;
      }
    }
    return top;
  }
}

const before = (a: Timer, b: Timer): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);
