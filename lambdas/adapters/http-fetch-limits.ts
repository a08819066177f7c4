/**
 * The limits of one fetch, and how they become undici's timers. Apart so that the exchange, the
 * error classification and the fetcher read them from one place below all three.
 */

/**
 * headersTimeoutMs and bodyTimeoutMs are undici's inactivity timers, which tick at about 0.5 s
 * (they fire up to ~1 s late); totalTimeoutMs is a precise timer and the bound to rely on.
 */
export interface FetchLimits {
  /** TCP (+TLS) connect, including the DNS lookup. */
  connectTimeoutMs: number;
  /** From the request being sent to the end of the response headers (inactivity timer). */
  headersTimeoutMs: number;
  /** Longest pause between two body chunks (inactivity timer); defaults to headersTimeoutMs. */
  bodyTimeoutMs?: number;
  /** The whole exchange, from the call to the last body byte, queueing and DNS included. */
  totalTimeoutMs: number;
  /** Body bytes kept (as received, before any decoding); the rest is not read. */
  maxBodyBytes: number;
}

export function bodyTimeout(limits: FetchLimits): number {
  return limits.bodyTimeoutMs ?? limits.headersTimeoutMs;
}

export function timerMs(ms: number): number {
  return Math.max(1, Math.ceil(ms));
}
