/**
 * Call counts and injected failures for the in-memory fakes of test/fakes/: a fake runs each call
 * through `run` (`enter` as it starts, `leave` once it took effect). A failure `before` throws with nothing done (an
 * AWS call that failed after the SDK's retries); one `after` throws once the call took effect (its
 * answer was lost, so the caller repeats a call that already happened).
 */
export interface FaultSpec {
  /** How many matching calls fail (default 1; Infinity: all). */
  times?: number;
  /** Which calls match (default: all), by the call's arguments. */
  when?: (args: readonly unknown[]) => boolean;
  /** `before` (default): nothing done. `after`: done, answer lost. */
  at?: 'before' | 'after';
  error?: () => Error;
}

interface Armed extends Required<Omit<FaultSpec, 'error'>> {
  method: string;
  error: () => Error;
}

export class Faults<M extends string> {
  readonly #calls = new Map<M, number>();
  readonly #armed: Armed[] = [];

  calls(method: M): number {
    return this.#calls.get(method) ?? 0;
  }

  fail(method: M, spec: FaultSpec = {}): void {
    this.#armed.push({
      method,
      times: spec.times ?? 1,
      when: spec.when ?? (() => true),
      at: spec.at ?? 'before',
      error: spec.error ?? (() => new Error(`${method} failed (injected)`)),
    });
  }

  /** Every armed failure of `method` is disarmed. */
  heal(method: M): void {
    for (const armed of this.#armed) if (armed.method === method) armed.times = 0;
  }

  /** Runs a fake's call: `enter`, the call's effect, `leave` (whatever the call answers). */
  async run<T>(method: M, args: readonly unknown[], effect: () => T | Promise<T>): Promise<T> {
    await this.enter(method, args);
    const answer = await effect();
    this.leave(method, args);
    return answer;
  }

  /** Counts the call, yields once (as a network call does), and throws if a `before` failure matches. */
  async enter(method: M, args: readonly unknown[]): Promise<void> {
    this.#calls.set(method, this.calls(method) + 1);
    await new Promise((resolve) => setImmediate(resolve));
    this.#trip(method, args, 'before');
  }

  /** Throws if an `after` failure matches: the call took effect, its answer is lost. */
  leave(method: M, args: readonly unknown[]): void {
    this.#trip(method, args, 'after');
  }

  #trip(method: M, args: readonly unknown[], at: 'before' | 'after'): void {
    const armed = this.#armed.find((a) => a.method === method && a.at === at && a.times > 0 && a.when(args));
    if (!armed) return;
    armed.times--;
    throw armed.error();
  }
}
