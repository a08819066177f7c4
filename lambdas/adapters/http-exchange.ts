/**
 * One GET as undici's dispatch handler: the body kept up to its cap and within the fetcher's body
 * budget, the total deadline, and the outcome as a result or a CrawlError. Apart from the fetcher,
 * which decides what to send and where; this owns what happens once it is dispatched.
 */
import type { Dispatcher } from 'undici';
import { type CrawlError, RetryableError } from '../core/base/index.ts';
import { BODY_WINDOW_BYTES, type BodyLease } from '../core/fetch/index.ts';
import { classifyError, errorCodes, type Phase } from './http-fetch-errors.ts';
import type { FetchLimits } from './http-fetch-limits.ts';
import { WireTap } from './http-wire-record.ts';

/** Where an exchange goes: the host names it in errors, origin and path find its header block. */
export interface ExchangeTarget {
  host: string;
  origin: string;
  path: string;
}

export interface ExchangeResult {
  status: number;
  statusText: string;
  headers: Array<[string, string]>;
  body: Uint8Array;
  truncated: 'length' | 'time' | undefined;
}

/** Raised by us to stop undici; never surfaces to callers. */
class Stop extends Error {}

export class Exchange implements Dispatcher.DispatchHandler {
  /** What went on the wire for this request (its header block, once written). */
  readonly wire: WireTap;
  readonly done: Promise<ExchangeResult>;

  readonly #host: string;
  readonly #limits: FetchLimits;
  #resolve!: (result: ExchangeResult) => void;
  #reject!: (error: CrawlError) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  #phase: Phase = 'queued';
  #status = 0;
  #statusText = '';
  #headers: Array<[string, string]> = [];
  #chunks: Buffer[] = [];
  #bytes = 0;
  #timer: NodeJS.Timeout;
  /** This body's share of the fetcher's budget (charged to the caller's hold, if any, at the end). */
  readonly #lease: BodyLease | undefined;
  /** Content-Length, when declared: no more than this is reserved. */
  #declared: number | undefined;

  constructor(target: ExchangeTarget, limits: FetchLimits, lease: BodyLease | undefined) {
    this.#host = target.host;
    this.wire = new WireTap(target.origin, target.path);
    this.#limits = limits;
    this.#lease = lease;
    this.done = new Promise<ExchangeResult>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#timer = setTimeout(() => this.#onDeadline(), Math.max(1, limits.totalTimeoutMs));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.#settled) {
      // The deadline passed while the request waited for a connection: do not send it.
      controller.abort(new Stop('deadline passed before the request was sent'));
      return;
    }
    this.#controller = controller;
    this.#phase = 'sent';
    this.wire.listen();
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    _headers: unknown,
    statusMessage?: string,
  ): void {
    if (this.#settled || statusCode < 200) return; // 1xx interim responses: the final one follows
    this.#phase = 'body';
    this.#status = statusCode;
    this.#statusText = statusMessage ?? '';
    this.#headers = rawHeaderPairs(controller.rawHeaders);
    // 204 and 304 have no body whatever their headers say: nothing to reserve.
    this.#declared = statusCode === 204 || statusCode === 304 ? 0 : declaredLength(this.#headers);
    this.#reserveAhead(controller);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    const room = this.#limits.maxBodyBytes - this.#bytes;
    if (chunk.length > room) {
      // A copy: a view would pin the whole chunk for what may be a few bytes of it.
      if (room > 0) this.#keep(Buffer.from(chunk.subarray(0, room)));
      this.#finish('length');
      controller.abort(new Stop('body cap reached'));
      return;
    }
    this.#keep(chunk);
    this.#reserveAhead(controller);
  }

  onResponseEnd(): void {
    this.#finish(undefined);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    if (this.#settled) return;
    if (this.#phase === 'body' && errorCodes(error).has('UND_ERR_BODY_TIMEOUT')) {
      this.#finish('time');
      return;
    }
    this.#fail(classifyError(error, this.#host, this.#phase, this.#limits, this.#bytes));
  }

  #keep(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    this.#lease?.keep(chunk.length);
  }

  /**
   * Reserves the next read's bytes (up to the cap, or the declared length) before reading on; when
   * the budget has none to give, the response is paused until it does. Paused, undici neither reads
   * the socket nor runs the body inactivity timer; the total deadline still runs.
   */
  #reserveAhead(controller: Dispatcher.DispatchController): void {
    if (this.#lease === undefined) return;
    const room = this.#limits.maxBodyBytes - this.#bytes;
    const left = this.#declared === undefined ? room : Math.min(room, this.#declared - this.#bytes);
    const window = Math.max(0, Math.min(BODY_WINDOW_BYTES, left));
    if (!this.#lease.reserve(window, () => this.#resume())) controller.pause();
  }

  #resume(): void {
    if (!this.#settled) this.#controller?.resume();
  }

  #onDeadline(): void {
    if (this.#settled) return;
    const ms = this.#limits.totalTimeoutMs;
    if (this.#phase === 'body') {
      this.#finish('time');
    } else {
      const what = this.#phase === 'queued' ? 'no connection' : 'no response headers';
      this.#fail(new RetryableError('timeout', `${this.#host}: ${what} within the ${ms} ms deadline`));
    }
    this.#controller?.abort(new Stop('deadline'));
  }

  #finish(truncated: 'length' | 'time' | undefined): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    const body = Buffer.concat(this.#chunks, this.#bytes);
    this.#chunks = [];
    // The bytes stay charged to the caller's hold, if it fetched inside one, else they are given back.
    this.#lease?.end();
    this.#resolve({
      status: this.#status,
      statusText: this.#statusText,
      headers: this.#headers,
      body,
      truncated,
    });
  }

  #fail(error: CrawlError): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#chunks = [];
    this.#lease?.cancel();
    this.#reject(error);
  }
}

/** A valid Content-Length (the only one, or all equal), else undefined. */
function declaredLength(headers: ReadonlyArray<[string, string]>): number | undefined {
  let length: number | undefined;
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== 'content-length') continue;
    const trimmed = value.trim();
    if (!/^\d{1,15}$/.test(trimmed)) return undefined;
    const parsed = Number(trimmed);
    if (length !== undefined && length !== parsed) return undefined;
    length = parsed;
  }
  return length;
}

function rawHeaderPairs(raw: unknown): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  const text = (value: unknown): string =>
    Buffer.isBuffer(value) ? value.toString('latin1') : typeof value === 'string' ? value : String(value);
  if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([text(raw[i]), text(raw[i + 1])]);
  } else if (typeof raw === 'object' && raw !== null) {
    for (const [name, value] of Object.entries(raw)) {
      for (const one of Array.isArray(value) ? value : [value]) pairs.push([name, text(one)]);
    }
  }
  return pairs;
}
