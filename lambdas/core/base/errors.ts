/**
 * Errors are typed by what the caller does next, not by where they came from:
 * - RetryableError: try again later (the message goes back to the queue / is re-sent with a delay).
 * - PermanentError: record a result with `outcome` and `code` as its reason, then drop the task.
 * - FatalError: the crawl (or process) cannot go on; give up and report it.
 * Every error carries a stable `code` that appears in result records, logs and tests.
 * - OutOfTime (not a CrawlError): the invocation's time ran out before the work started; nothing
 *   failed, so nothing is recorded or counted as an attempt: the caller hands the work back.
 */
import type { Outcome } from './outcome.ts';

export type Disposition = 'retry' | 'record' | 'fatal';

/** The code of a request the address guard refused before dialing: nothing reached the host. */
export const ADDRESS_BLOCKED = 'address-blocked';

export abstract class CrawlError extends Error {
  abstract readonly disposition: Disposition;
  readonly code: string;

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

export class RetryableError extends CrawlError {
  readonly disposition = 'retry' as const;
  /** Earliest sensible retry, e.g. from Retry-After; undefined means "use backoff". */
  readonly retryAfterMs: number | undefined;

  constructor(code: string, message: string, options?: ErrorOptions & { retryAfterMs?: number }) {
    super(code, message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
}

export class PermanentError extends CrawlError {
  readonly disposition = 'record' as const;
  readonly outcome: Outcome;

  constructor(outcome: Outcome, code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.outcome = outcome;
  }
}

export class FatalError extends CrawlError {
  readonly disposition = 'fatal' as const;
}

/**
 * A request was not started because it could not end before the invocation's deadline. Not a crawl
 * error on purpose: a robots.txt fetch or a page is not failed by it (no attempt, no backoff), the
 * visit that owns it hands its host back (host-visit.ts).
 */
export class OutOfTime extends Error {
  constructor(message = 'not started: the invocation would end before the request could') {
    super(message);
    this.name = 'OutOfTime';
  }
}

export function isCrawlError(error: unknown): error is CrawlError {
  return error instanceof CrawlError;
}

/** A short, single-line description of any thrown value, for reasons and logs. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}
