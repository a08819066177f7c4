/**
 * What a failed exchange means for the crawl: undici's and the socket's errors classified into
 * CrawlErrors with stable codes (retryable or not), by error code and by how far the exchange got.
 * Apart from the exchange because it is a table of cases, read and tested on its own terms.
 */
import {
  ADDRESS_BLOCKED,
  type CrawlError,
  isCrawlError,
  PermanentError,
  RetryableError,
} from '../core/base/index.ts';
import { bodyTimeout, type FetchLimits } from './http-fetch-limits.ts';
import { proxyRefusal } from './proxy-dispatcher.ts';

/** How far an exchange got: waiting for a connection, request sent, response body started. */
export type Phase = 'queued' | 'sent' | 'body';

/** The error, its causes and (for AggregateError) the errors it aggregates. */
function errorChain(error: unknown): unknown[] {
  const seen: unknown[] = [];
  const queue: unknown[] = [error];
  while (queue.length > 0 && seen.length < 20) {
    const next = queue.shift();
    if (next === undefined || next === null || seen.includes(next)) continue;
    seen.push(next);
    if (next instanceof AggregateError) queue.push(...next.errors);
    if (next instanceof Error && next.cause !== undefined) queue.push(next.cause);
  }
  return seen;
}

export function errorCodes(error: unknown): Set<string> {
  const codes = new Set<string>();
  for (const item of errorChain(error)) {
    if (typeof item === 'object' && item !== null && 'code' in item && typeof item.code === 'string') {
      codes.add(item.code);
    }
  }
  return codes;
}

const DNS_CODES = ['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA', 'ESERVFAIL'];
const CONNECT_CODES = [
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
];
const RESET_CODES = ['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'];
const TLS_PATTERN = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|EPROTO$)/;

function firstMessage(error: unknown): string {
  for (const item of errorChain(error)) {
    if (item instanceof Error && item.message !== '' && !(item instanceof AggregateError)) {
      const code = 'code' in item && typeof item.code === 'string' ? `${item.code}: ` : '';
      return `${code}${item.message}`;
    }
  }
  return String(error);
}

/** One failure as the classification steps read it. */
interface Failure {
  error: unknown;
  chain: unknown[];
  codes: Set<string>;
  /** The first message of the chain, with its code: what the CrawlError's message quotes. */
  detail: string;
  host: string;
  phase: Phase;
  limits: FetchLimits;
  /** Body bytes read before the failure. */
  bytes: number;
}

function hasAny(failure: Failure, list: readonly string[]): boolean {
  return list.some((code) => failure.codes.has(code));
}

export function classifyError(
  error: unknown,
  host: string,
  phase: Phase,
  limits: FetchLimits,
  bytes: number,
): CrawlError {
  const chain = errorChain(error);
  const ours = chain.find(isCrawlError);
  if (ours !== undefined) return ours; // e.g. the guard's PermanentError raised inside connect
  const refusedByProxy = proxyRefusal(chain, host);
  if (refusedByProxy !== undefined) return refusedByProxy;
  const failure: Failure = {
    error,
    chain,
    codes: errorCodes(error),
    detail: firstMessage(error),
    host,
    phase,
    limits,
    bytes,
  };
  // In this order: the first step that recognises the failure names it.
  return (
    notDialled(failure) ??
    timedOut(failure) ??
    malformedResponse(failure) ??
    refusedByClient(failure) ??
    connectionLost(failure)
  );
}

/** The socket refused the address, or the name did not resolve. */
function notDialled(failure: Failure): CrawlError | undefined {
  const { codes, detail, host } = failure;
  const options = { cause: failure.error };
  if (codes.has('ERR_IP_BLOCKED')) {
    return new PermanentError(
      'blocked',
      ADDRESS_BLOCKED,
      `address not allowed: ${host}: the socket refused to dial it (${detail}); crawl with --allow-private to permit`,
      options,
    );
  }
  if (hasAny(failure, DNS_CODES))
    return new RetryableError('dns-failed', `${host}: DNS lookup failed (${detail})`, options);
  return undefined;
}

/** One of undici's timers fired: connect, response headers, or a stalled body. */
function timedOut(failure: Failure): CrawlError | undefined {
  const { codes, host, limits } = failure;
  const options = { cause: failure.error };
  if (codes.has('UND_ERR_CONNECT_TIMEOUT')) {
    return new RetryableError(
      'timeout',
      `${host}: connect timed out after ${limits.connectTimeoutMs} ms`,
      options,
    );
  }
  if (codes.has('UND_ERR_HEADERS_TIMEOUT')) {
    return new RetryableError(
      'timeout',
      `${host}: no response headers within ${limits.headersTimeoutMs} ms`,
      options,
    );
  }
  if (codes.has('UND_ERR_BODY_TIMEOUT')) {
    return new RetryableError('timeout', `${host}: body stalled for ${bodyTimeout(limits)} ms`, options);
  }
  return undefined;
}

/** The server answered something that is not HTTP the parser accepts: a retry gets the same. */
function malformedResponse(failure: Failure): CrawlError | undefined {
  const { codes, chain, detail, host, phase } = failure;
  const options = { cause: failure.error };
  if (codes.has('UND_ERR_RES_CONTENT_LENGTH_MISMATCH') && phase !== 'body') {
    // undici reports any parser error met after a Content-Length header as this "mismatch", hiding
    // llhttp's reason: before the response started it is the header block that was refused (duplicate
    // or invalid Content-Length, Content-Length with Transfer-Encoding). A peer closing mid-headers is
    // UND_ERR_SOCKET instead, and a body cut short is phase 'body', both retried below.
    return new PermanentError(
      'failed',
      'bad-response',
      `${host}: malformed HTTP response (framing headers refused: conflicting or invalid Content-Length, or Content-Length with Transfer-Encoding)`,
      options,
    );
  }
  const parserError = chain.find((item) => item instanceof Error && item.name === 'HTTPParserError');
  // llhttp's "Invalid EOF state": the peer closed inside a message, a cut, not a malformed one.
  const cutShort =
    codes.has('HPE_INVALID_EOF_STATE') ||
    (parserError instanceof Error && /\bEOF\b/i.test(parserError.message));
  if (
    codes.has('UND_ERR_HEADERS_OVERFLOW') ||
    (parserError !== undefined && !cutShort) ||
    chain.some((item) => item instanceof Error && /^bad (response|upgrade)$/.test(item.message))
  ) {
    return new PermanentError(
      'failed',
      'bad-response',
      `${host}: malformed HTTP response (${detail})`,
      options,
    );
  }
  return undefined;
}

/** TLS failed, or undici itself refused the request: neither changes on a retry. */
function refusedByClient(failure: Failure): CrawlError | undefined {
  const { codes, detail, host } = failure;
  const options = { cause: failure.error };
  if ([...codes].some((code) => TLS_PATTERN.test(code))) {
    return new PermanentError('failed', 'tls-failed', `${host}: TLS failed (${detail})`, options);
  }
  if (codes.has('UND_ERR_INVALID_ARG')) {
    return new PermanentError(
      'invalid',
      'bad-request',
      `${host}: request rejected by the client (${detail})`,
      options,
    );
  }
  return undefined;
}

/** The rest: no connection, or one lost before or during the response; all retried. */
function connectionLost(failure: Failure): CrawlError {
  const { codes, detail, host, phase } = failure;
  const options = { cause: failure.error };
  if (hasAny(failure, CONNECT_CODES))
    return new RetryableError('connect-failed', `${host}: connect failed (${detail})`, options);
  if (phase === 'body') {
    return new RetryableError(
      'connection-reset',
      `${host}: connection lost mid-body after ${failure.bytes} bytes (${detail})`,
      options,
    );
  }
  if (
    phase === 'sent' ||
    hasAny(failure, RESET_CODES) ||
    codes.has('UND_ERR_SOCKET') ||
    codes.has('HPE_INVALID_EOF_STATE')
  ) {
    return new RetryableError(
      'connection-reset',
      `${host}: connection closed before a response (${detail})`,
      options,
    );
  }
  return new RetryableError('connect-failed', `${host}: connect failed (${detail})`, options);
}
