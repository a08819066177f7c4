/**
 * Ctrl-C (and SIGTERM) during `crawler crawl`: once, the crawl stops taking work and what exists is
 * written (`signal` aborts; the run winds down on it); twice, the process exits at once. Before the
 * local AWS is up there is nothing to wind down or write, so a first signal exits at once too.
 * Apart from crawl-command.ts: the handlers live for the whole command, and must be removed after it.
 */
export class CrawlSignals {
  readonly #interrupt = new AbortController();
  /** Set once the local AWS is up: before, there is nothing to wind down or write. */
  #up = false;
  readonly #crawlId: string;
  readonly #progress: (line: string) => void;
  readonly #onSignal = (signal: NodeJS.Signals): void => {
    if (!this.#up) {
      this.#progress(`crawl ${this.#crawlId}: ${signal}: stopped before the crawl started`);
      process.exit(130);
    }
    if (this.#interrupt.signal.aborted) {
      this.#progress(`crawl ${this.#crawlId}: ${signal} again: exiting at once`);
      process.exit(130);
    }
    this.#progress(
      `crawl ${this.#crawlId}: ${signal}: stopping; no new request starts, the requests in flight finish and what exists is written (${signal === 'SIGINT' ? 'Ctrl-C' : signal} again to exit at once)`,
    );
    this.#interrupt.abort();
  };

  /** Listens for SIGINT and SIGTERM from now until `dispose`. */
  constructor(crawlId: string, progress: (line: string) => void) {
    this.#crawlId = crawlId;
    this.#progress = progress;
    process.on('SIGINT', this.#onSignal);
    process.on('SIGTERM', this.#onSignal);
  }

  /** Aborted by the first signal once the local AWS is up. */
  get signal(): AbortSignal {
    return this.#interrupt.signal;
  }

  /** The local AWS is up: a first signal now winds the crawl down. */
  markUp(): void {
    this.#up = true;
  }

  dispose(): void {
    process.off('SIGINT', this.#onSignal);
    process.off('SIGTERM', this.#onSignal);
  }
}
