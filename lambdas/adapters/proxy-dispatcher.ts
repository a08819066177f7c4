/**
 * A crawl's HTTP proxy (`--proxy`): undici's ProxyAgent, tunnelling every request with CONNECT (http
 * targets too, so the proxy sees no request line or header of ours), one agent per proxy and
 * credentials. Proxy-Authorization goes on the CONNECT only, never to the target.
 *
 * The address guard still holds: the proxy dials the target, so the fetcher resolves the target's
 * name first and refuses a blocked address before any CONNECT (checkProxiedTarget). A name this
 * resolver cannot resolve is left to the proxy (its DNS may know names ours does not): the proxy's
 * operator is trusted with where it connects.
 */
import type { BlockList, LookupFunction } from 'node:net';
import { type Dispatcher, ProxyAgent } from 'undici';
import { type CrawlError, isCrawlError, PermanentError, RetryableError } from '../core/base/index.ts';

export interface ProxyRoute {
  /** `http://host:port` */
  url: string;
  /** `Basic …`, sent on CONNECT. */
  authorization?: string;
}

export interface ProxyDispatcherOptions {
  connections: number;
  maxHeaderSize: number;
  /** How the proxy's own name is resolved (inside Lambda: never to this machine's addresses). */
  lookup: LookupFunction;
  /** Addresses the socket to the proxy refuses, an IP literal included (which skips `lookup`). */
  blockList?: BlockList;
}

export class ProxyDispatchers {
  readonly #options: ProxyDispatcherOptions;
  readonly #agents = new Map<string, ProxyAgent>();

  constructor(options: ProxyDispatcherOptions) {
    this.#options = options;
  }

  dispatcher(route: ProxyRoute, connectTimeoutMs: number): Dispatcher {
    const timeout = Math.max(1, Math.ceil(connectTimeoutMs));
    const key = `${route.url} ${route.authorization ?? ''} ${timeout}`;
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      agent = new ProxyAgent({
        uri: route.url,
        proxyTunnel: true,
        ...(route.authorization === undefined ? {} : { token: route.authorization }),
        connections: this.#options.connections,
        pipelining: 1,
        maxHeaderSize: this.#options.maxHeaderSize,
        allowH2: false,
        connectTimeout: timeout,
        proxyTls: {
          lookup: this.#options.lookup,
          timeout,
          ...(this.#options.blockList === undefined ? {} : { blockList: this.#options.blockList }),
        },
        requestTls: { timeout },
      });
      this.#agents.set(key, agent);
    }
    return agent;
  }

  async close(): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(agents.map((agent) => agent.close()));
  }
}

/**
 * Resolves `host` with the guarded resolver: a name that resolves only to refused addresses is
 * refused (the guard's PermanentError); one that does not resolve here is the proxy's to resolve.
 */
export function checkProxiedTarget(host: string, guarded: LookupFunction): Promise<void> {
  return new Promise((resolve, reject) => {
    guarded(host, { all: true }, (error) => {
      if (error !== null && isCrawlError(error)) reject(error);
      else resolve();
    });
  });
}

/** The proxy's answer to CONNECT when it was not 200, as what the caller does next. */
export function proxyRefusal(chain: readonly unknown[], host: string): CrawlError | undefined {
  for (const item of chain) {
    if (!(item instanceof Error)) continue;
    const answer = /^Proxy response \((\d{3})\) !== 200/.exec(item.message);
    if (answer !== null) {
      const status = Number(answer[1]);
      const why = `the proxy answered ${status} to CONNECT ${host}`;
      // 407: its credentials are wrong or missing; 403: it will not go there. Both hold on a retry.
      if (status === 407 || status === 403)
        return new PermanentError('failed', 'proxy-refused', why, { cause: item });
      return new RetryableError('proxy-failed', why, { cause: item });
    }
    if ('code' in item && item.code === 'UND_ERR_PRX_CONN') {
      return new RetryableError(
        'proxy-unreachable',
        `${host}: the proxy could not be reached (${item.message})`,
        {
          cause: item,
        },
      );
    }
  }
  return undefined;
}
