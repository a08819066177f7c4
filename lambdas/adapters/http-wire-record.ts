/**
 * What went on the wire: the request line and header block undici wrote for one request, the
 * address it was written to and when, for the WARC request record. Apart from the exchange because
 * it reads undici's diagnostics channel, not the request's handler callbacks.
 *
 * undici publishes the exact block it writes, with the socket, on the process-wide channel
 * `undici:client:sendHeaders`, synchronously after calling the handler's onRequestStart (writeH1 in
 * client-h1.js runs nothing in between but the building of the block, direct or through a proxy's
 * tunnel). So each request listens for itself (WireTap), from its onRequestStart to its block and at
 * most to the end of that tick: nothing is subscribed on import, no listener outlives its request
 * (closed fetcher or not), and no state is shared between requests or fetchers. Not chosen: matching
 * the published Request to its exchange (undici keeps the handler on it under a private symbol only;
 * `undici:request:create` also fires for a proxy's CONNECT, and for a queued request only later, in
 * the pool), or a listener per fetcher (one never closed would keep it).
 */
import diagnosticsChannel from 'node:diagnostics_channel';

export interface WireRecord {
  requestLine: string;
  requestHeaders: Array<[string, string]>;
  remoteAddress: string;
  /** When undici wrote the header block (epoch ms). */
  sentAt?: number;
}

const SEND_HEADERS = 'undici:client:sendHeaders';

/** One request's listener for its own header block on undici's channel. */
export class WireTap {
  /** The block written for this request, once undici has published it. */
  record: WireRecord | undefined;
  /** The target's origin and path: what a header block on the channel must name to be this one's. */
  readonly #origin: string;
  readonly #path: string;
  #listening = false;

  constructor(origin: string, path: string) {
    this.#origin = origin;
    this.#path = path;
  }

  /** From the request's onRequestStart: its block follows before anything else runs. */
  listen(): void {
    if (this.#listening) return;
    this.#listening = true;
    diagnosticsChannel.subscribe(SEND_HEADERS, this.#onSendHeaders);
    queueMicrotask(() => this.#stop());
  }

  #stop(): void {
    if (!this.#listening) return;
    this.#listening = false;
    diagnosticsChannel.unsubscribe(SEND_HEADERS, this.#onSendHeaders);
  }

  readonly #onSendHeaders = (message: unknown): void => {
    if (typeof message !== 'object' || message === null) return;
    const { headers, socket, request } = message as {
      headers?: unknown;
      socket?: unknown;
      request?: unknown;
    };
    if (typeof headers !== 'string') return;
    const { path, origin } =
      typeof request === 'object' && request !== null
        ? (request as { path?: unknown; origin?: unknown })
        : {};
    // By the order above no other block is published while this request listens; but the channel is
    // the whole process's, so one that names another target (a proxy's CONNECT names the target's
    // host:port at the proxy's origin) is never taken for this request's own.
    if (path !== this.#path || (typeof origin === 'string' && origin !== this.#origin)) return;
    this.#stop();
    const remote =
      typeof socket === 'object' && socket !== null
        ? (socket as { remoteAddress?: unknown }).remoteAddress
        : '';
    this.record = {
      ...parseHeaderBlock(headers),
      remoteAddress: typeof remote === 'string' ? remote : '',
      sentAt: Date.now(),
    };
  };
}

function parseHeaderBlock(block: string): Omit<WireRecord, 'remoteAddress'> {
  const lines = block.split('\r\n').filter((line) => line !== '');
  const requestHeaders: Array<[string, string]> = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    requestHeaders.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  return { requestLine: lines[0] ?? '', requestHeaders };
}
