/**
 * The HTTP fetcher: one GET per call, raw bytes, no redirects, every limit explicit.
 *
 * With the modules it is split into (http-*.ts, each saying what it owns) and proxy-dispatcher.ts,
 * the only code that imports undici. What it guarantees:
 * - No redirect is followed: a 3xx comes back as a response and the crawler enqueues its Location
 *   as a new task, so every hop goes through scope, robots, dedup, politeness and this guard.
 * - Unless the request says `allowPrivate`, no connection is opened to a non-public address: IP
 *   literal hosts and metadata service names (`metadata.google.internal`, ...) are checked before
 *   the request (the former never reach a lookup, the latter need none) and every resolved
 *   address is checked inside undici's `connect.lookup`, i.e. on what is actually dialled, so DNS
 *   rebinding between an earlier check and the connect cannot get through. When a name resolves
 *   to several addresses, the blocked ones are dropped and only the public ones are dialled.
 *   With `refuseHostLocal` (inside Lambda) the same checks keep even an `allowPrivate` request off
 *   this machine's own addresses: loopback (the Runtime API) and link-local (the metadata service).
 * - The body is kept as received (content-encoding intact, transfer-encoding removed) and is cut
 *   at `maxBodyBytes`; the connection is then dropped, never drained.
 * - A total deadline bounds the whole exchange: undici's headers/body timeouts are inactivity
 *   timers that a trickling server defeats.
 * - The body bytes held by all requests at once are bounded by a BodyBudget (core/fetch/body-budget.ts):
 *   a response that would exceed it is paused (TCP flow control holds the sender) until others give
 *   bytes back; the total deadline keeps running while it waits.
 * - Statuses are returned, never thrown; failures are CrawlErrors with stable codes.
 * - Credentials in the URL (`user:pass@`) are never sent nor returned: they are cut before dialling.
 *   undici's dispatch takes only the origin and path (it never derives an Authorization header),
 *   so they would not reach the wire anyway; the cut keeps that true whatever undici does with a
 *   URL, and keeps them out of the returned `url` (the WARC-Target-URI).
 */
import type { LookupFunction } from 'node:net';
import { Agent } from 'undici';
import { ADDRESS_BLOCKED, FatalError, PermanentError, STORAGE_LIMITS } from '../core/base/index.ts';
import type { PageFetcher, PageResponse } from '../core/crawl/index.ts';
import { BodyBudget } from '../core/fetch/index.ts';
import { hostIpLiteral, metadataNameRefusal, withoutUserinfo } from '../core/urls/index.ts';
import {
  type AddressPolicy,
  blockedError,
  guardLookup,
  NOT_HOST_LOCAL,
  PUBLIC_ONLY,
  socketBlockList,
  systemLookup,
} from './http-address-guard.ts';
import { Exchange } from './http-exchange.ts';
import { bodyTimeout, type FetchLimits, timerMs } from './http-fetch-limits.ts';
import { checkProxiedTarget, ProxyDispatchers, type ProxyRoute } from './proxy-dispatcher.ts';

export type { LookupFunction } from 'node:net';
export { guardLookup, renderLookups, socketBlockList, systemLookup } from './http-address-guard.ts';
export type { FetchLimits } from './http-fetch-limits.ts';

export interface FetchRequest {
  url: URL;
  userAgent: string;
  /** Turns the address guard off for this request (tests, local demos: `--allow-private`). */
  allowPrivate: boolean;
  limits: FetchLimits;
  /** Extra request headers; a name matching a default header (user-agent, accept, ...) replaces it. */
  headers?: Record<string, string>;
  /** Through this HTTP proxy, by CONNECT (proxy-dispatcher.ts). */
  proxy?: ProxyRoute;
}

/** The response shape the core's PageFetcher port defines (lambdas/core/crawl/ports.ts). */
export type FetchedResponse = PageResponse;

export interface HttpFetcherOptions {
  /** Resolver with dns.lookup's shape; injectable so tests can claim any answer. Default dns.lookup. */
  lookup?: LookupFunction;
  /**
   * Never dial this machine's own addresses (loopback, link-local, unspecified), even for a request
   * that allows private ranges: set inside Lambda, whose Runtime API listens on loopback and whose
   * metadata service is link-local. Default false (a local crawl of 127.0.0.1 is allowed).
   */
  refuseHostLocal?: boolean;
  /**
   * Keep-alive connections per origin (scheme, host, port). Default 1: politeness allows one
   * request per host at a time anyway, and with one connection back-to-back requests reuse it
   * (with more, undici opens a second connection before the first is marked free).
   */
  connectionsPerOrigin?: number;
  /**
   * Bound on the body bytes all requests of this fetcher hold at once (see BodyBudget): default
   * DEFAULT_MAX_BUFFERED_BODY_BYTES, Infinity for none. Ignored when `bodyBudget` is given.
   */
  maxBufferedBodyBytes?: number;
  /** A budget to use (shared with other fetchers, or one whose holds the caller uses). */
  bodyBudget?: BodyBudget;
}

/**
 * 24 MiB: every ordinary page of a 64-task batch (~30 KB each) at once, or four bodies at the 5 MiB
 * cap while the others wait. Measured with bench/fetch-memory.ts (64 pages at the cap, bodies handed
 * to the WARC writer as they complete): peak RSS 217-227 MB with 16 MiB, 229-243 with 24, 237-256
 * with 32, 290-318 with 64; throughput the same (the work is CPU-bound on one core).
 */
export const DEFAULT_MAX_BUFFERED_BODY_BYTES: number = STORAGE_LIMITS.bufferedBodyBytes;

export const ACCEPT = 'text/html,application/xhtml+xml,*/*;q=0.8';
export const ACCEPT_ENCODING = 'gzip, deflate, br';
export const MAX_HEADER_BYTES = 64 * 1024;

/** Headers the fetcher owns or undici refuses; callers cannot set them. */
const RESERVED_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-connection',
]);

export class HttpFetcher implements PageFetcher {
  readonly #lookup: LookupFunction;
  readonly #refuseHostLocal: boolean;
  readonly #connections: number;
  /** One keep-alive agent per (address policy, connect timeout): the policy is per request. */
  readonly #agents = new Map<string, Agent>();
  readonly #proxies: ProxyDispatchers;
  /** Bounds the body bytes held by all requests at once; undefined: no bound. */
  readonly bodyBudget: BodyBudget | undefined;

  constructor(options: HttpFetcherOptions = {}) {
    this.#lookup = options.lookup ?? systemLookup;
    this.#refuseHostLocal = options.refuseHostLocal ?? false;
    this.#connections = options.connectionsPerOrigin ?? 1;
    // The proxy is named by the crawl: it may be on a private address, but inside Lambda never on
    // this machine's own (the metadata service is never a proxy).
    this.#proxies = new ProxyDispatchers({
      connections: this.#connections,
      maxHeaderSize: MAX_HEADER_BYTES,
      lookup: this.#refuseHostLocal ? guardLookup(this.#lookup, NOT_HOST_LOCAL) : this.#lookup,
      ...(this.#refuseHostLocal ? { blockList: socketBlockList(NOT_HOST_LOCAL.subnets) } : {}),
    });
    const max = options.maxBufferedBodyBytes ?? DEFAULT_MAX_BUFFERED_BODY_BYTES;
    this.bodyBudget =
      options.bodyBudget ?? (max === Number.POSITIVE_INFINITY ? undefined : new BodyBudget(max));
  }

  async fetch(request: FetchRequest): Promise<FetchedResponse> {
    const startedAt = new Date();
    const started = performance.now();
    const { limits } = request;
    const url = withoutUserinfo(request.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new PermanentError(
        'invalid',
        'unsupported-scheme',
        `unsupported scheme ${url.protocol} in ${url.href}: only http and https are fetched`,
      );
    }
    const host = url.hostname;
    const policy = !request.allowPrivate ? PUBLIC_ONLY : this.#refuseHostLocal ? NOT_HOST_LOCAL : undefined;
    if (policy) {
      const byName = metadataNameRefusal(host, policy.hint);
      if (byName !== undefined) throw new PermanentError('blocked', ADDRESS_BLOCKED, byName);
      const literal = hostIpLiteral(host);
      const reason = literal === undefined ? undefined : policy.reasonOf(literal);
      if (literal !== undefined && reason !== undefined)
        throw blockedError(host, 'is', literal, reason, policy);
    }

    // Through a proxy, the proxy dials: the target's address is checked here, as far as this
    // resolver knows the name (proxy-dispatcher.ts).
    if (request.proxy !== undefined && policy !== undefined)
      await checkProxiedTarget(host, guardLookup(this.#lookup, policy));
    const headers = requestHeaders(url, request);
    const path = `${url.pathname}${url.search}`;
    const budget = this.bodyBudget;
    // The hold is the caller's (its async context), taken here, before any undici callback.
    const target = { host, origin: url.origin, path };
    const exchange = new Exchange(target, limits, budget?.lease(budget.currentHold()));
    const agent =
      request.proxy === undefined
        ? this.#agent(policy, limits.connectTimeoutMs)
        : this.#proxies.dispatcher(request.proxy, limits.connectTimeoutMs);
    agent.dispatch(
      {
        origin: url.origin,
        path,
        method: 'GET',
        headers,
        headersTimeout: timerMs(limits.headersTimeoutMs),
        bodyTimeout: timerMs(bodyTimeout(limits)),
      },
      exchange,
    );
    const result = await exchange.done;
    const wire = exchange.wire.record ?? {
      // Not reached with the undici this was written for; kept so a change there degrades the
      // record (connection header assumed, address unknown) instead of failing the fetch.
      requestLine: `GET ${path} HTTP/1.1`,
      requestHeaders: wireOrder(headers),
      remoteAddress: '',
    };
    return {
      url: url.href,
      requestLine: wire.requestLine,
      requestHeaders: wire.requestHeaders,
      httpVersion: '1.1',
      ...result,
      remoteAddress: wire.remoteAddress,
      startedAt,
      ...(wire.sentAt === undefined ? {} : { sentAt: wire.sentAt }),
      elapsedMs: performance.now() - started,
    };
  }

  async close(): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all([...agents.map((agent) => agent.close()), this.#proxies.close()]);
  }

  #agent(policy: AddressPolicy | undefined, connectTimeoutMs: number): Agent {
    const timeout = timerMs(connectTimeoutMs);
    const key = `${policy?.name ?? 'open'}:${timeout}`;
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      agent = new Agent({
        connections: this.#connections,
        pipelining: 1,
        maxHeaderSize: MAX_HEADER_BYTES,
        allowH2: false,
        connect: {
          timeout,
          allowH2: false,
          lookup: policy ? guardLookup(this.#lookup, policy) : this.#lookup,
          ...(policy ? { blockList: socketBlockList(policy.subnets) } : {}),
        },
      });
      this.#agents.set(key, agent);
    }
    return agent;
  }
}

function requestHeaders(url: URL, request: FetchRequest): Record<string, string> {
  const headers: Record<string, string> = {
    host: url.host,
    'user-agent': request.userAgent,
    accept: ACCEPT,
    'accept-encoding': ACCEPT_ENCODING,
  };
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      throw new FatalError(
        'invalid-header',
        `request header ${name} is set by the fetcher and cannot be configured`,
      );
    }
    headers[lower] = value;
  }
  return headers;
}

/** undici writes host, then connection, then the other headers in the order given. */
function wireOrder(headers: Record<string, string>): Array<[string, string]> {
  const { host = '', ...rest } = headers;
  return [['host', host], ['connection', 'keep-alive'], ...Object.entries(rest)];
}
