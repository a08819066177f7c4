/**
 * The realistic benchmark's web: H hosts, each its own loopback address 127.0.0.2 ... 127.0.0.(H+1)
 * (all of 127.0.0.0/8 is loopback on Linux), one HTTP server per address, all on the same port. Every
 * host serves the same small site of P content pages, bench/site.ts's generator (log-normal ~30 KB
 * pages, 20 content links + 4 nav links a page, all within the host) without its extras (no 404s,
 * 500s, redirects or private pages), and a robots.txt that allows everything. Each response waits
 * `latencyMs` (150) before it is answered: a server's think time, so a crawler has to keep requests
 * to many hosts in flight.
 *
 * Runs in its own process (bench/realistic.ts starts it with an IPC channel, pinned to CPU 1): sends
 * `ready` with the origins and one host's plan once listening, answers `stats` with, per host, the
 * requests and non-5xx answers per target since the last `reset` (judged with bench/site.ts's
 * `judgeCrawl`), and the gaps between consecutive requests to one host (arrival times, robots.txt
 * included: a politeness delay is about the server's load, whatever is asked for); exits on `exit`
 * or when the parent goes away.
 *
 * argv[2]: JSON `{hosts, pages, latencyMs}`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BenchSiteModel, closeServers } from './site.ts';

export const ALLOW_ALL_ROBOTS_TXT = ['User-agent: *', 'Disallow:', ''].join('\n');

export interface MultiHostArgs {
  hosts: number;
  pages: number;
  latencyMs: number;
}

export type MultiHostRequest = { cmd: 'stats'; delayMs: number } | { cmd: 'reset' } | { cmd: 'exit' };

export interface MultiHostReady {
  kind: 'ready';
  /** `http://127.0.0.(h+2):PORT`, h = 0 ... H-1. */
  origins: string[];
  /** One host's plan (every host's is the same). */
  expected: string[];
  htmlPages: number;
}

export interface GapStats {
  /** Consecutive-request pairs to one host, over all hosts. */
  gaps: number;
  /** The smallest gap between two consecutive requests to one host, over all hosts (ms). */
  minGapMs: number;
  medianGapMs: number;
  p90GapMs: number;
  maxGapMs: number;
  /** Gaps shorter than the delay asked for, and how many of those have robots.txt on either side. */
  belowDelay: number;
  belowDelayRobots: number;
  /** Gaps by length (ms, upper bounds, the last unbounded): how many, and their summed seconds. */
  histogram: Array<{ belowMs: number | null; count: number; seconds: number }>;
  /** The 10 smallest gaps below the delay: host index, the two targets, the gap, when (s after the first request). */
  belowDelayExamples: Array<{
    host: number;
    previous: string;
    target: string;
    gapMs: number;
    atSeconds: number;
  }>;
}

export interface MultiHostStats {
  kind: 'stats';
  /** Per host, in `origins` order: non-5xx answers and all requests per target. */
  hosts: Array<{ answered: Array<[string, number]>; hits: Array<[string, number]> }>;
  gaps: GapStats;
  /** Seconds from the first to the last request since the last reset (0 if none). */
  spanSeconds: number;
  /** Seconds from the first request to the first one that is not for robots.txt (NaN if none). */
  firstPageSeconds: number;
}

export type MultiHostMessage = MultiHostReady | MultiHostStats | { kind: 'ok' };

const FIRST_ADDRESS = 2;

interface HostState {
  hits: Map<string, number>;
  answered: Map<string, number>;
  /** Arrival time (performance.now()) and target of every request, in order. */
  arrivals: Array<[number, string]>;
}

function gapStats(states: readonly HostState[], delayMs: number, firstAt: number): GapStats {
  const all: number[] = [];
  let belowDelay = 0;
  let belowDelayRobots = 0;
  const belowDelayExamples: GapStats['belowDelayExamples'] = [];
  for (const [host, { arrivals }] of states.entries()) {
    for (let i = 1; i < arrivals.length; i++) {
      const [before, previous] = arrivals[i - 1] as [number, string];
      const [at, target] = arrivals[i] as [number, string];
      const gap = at - before;
      all.push(gap);
      if (gap < delayMs) {
        belowDelay++;
        if (previous === '/robots.txt' || target === '/robots.txt') belowDelayRobots++;
        belowDelayExamples.push({
          host,
          previous,
          target,
          gapMs: Math.round(gap * 10) / 10,
          atSeconds: Math.round(at - firstAt) / 1000,
        });
      }
    }
  }
  all.sort((a, b) => a - b);
  belowDelayExamples.sort((a, b) => a.gapMs - b.gapMs).splice(10);
  const histogram = [
    ...[delayMs, delayMs * 1.2, delayMs * 2, delayMs * 5, delayMs * 10].map((belowMs) => ({ belowMs })),
    { belowMs: null },
  ].map((bucket) => ({ ...bucket, count: 0, seconds: 0 }));
  for (const gap of all) {
    const bucket = histogram.find((b) => b.belowMs === null || gap < b.belowMs) as (typeof histogram)[number];
    bucket.count++;
    bucket.seconds += gap / 1000;
  }
  for (const bucket of histogram) bucket.seconds = Math.round(bucket.seconds * 10) / 10;
  const quantile = (q: number) => all[Math.min(all.length - 1, Math.floor(q * all.length))] ?? Number.NaN;
  return {
    gaps: all.length,
    minGapMs: all[0] ?? Number.NaN,
    medianGapMs: quantile(0.5),
    p90GapMs: quantile(0.9),
    maxGapMs: all.at(-1) ?? Number.NaN,
    belowDelay,
    belowDelayRobots,
    histogram,
    belowDelayExamples,
  };
}

async function listen(server: Server, port: number, host: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** One server per address, all on one port: the first address picks a free port, the rest follow. */
async function serveHosts(
  count: number,
  handler: (host: number) => (request: IncomingMessage, response: ServerResponse) => void,
): Promise<{ servers: Server[]; port: number }> {
  if (count < 1 || count > 250) throw new RangeError('hosts must be 1..250 (127.0.0.2 ... 127.0.0.251)');
  for (let attempt = 0; ; attempt++) {
    const servers: Server[] = [];
    try {
      let port = 0;
      for (let h = 0; h < count; h++) {
        const server = createServer(handler(h));
        server.keepAliveTimeout = 30_000;
        server.maxRequestsPerSocket = 0;
        servers.push(server);
        await listen(server, port, `127.0.0.${FIRST_ADDRESS + h}`);
        port = (server.address() as AddressInfo).port;
      }
      return { servers, port };
    } catch (error) {
      await closeServers(servers.filter((server) => server.listening));
      if (attempt >= 20) throw error;
    }
  }
}

const args = JSON.parse(process.argv[2] ?? '{}') as MultiHostArgs;
const model = new BenchSiteModel({ pages: args.pages, notFound: 0, flaky: 0, redirects: 0, privatePages: 0 });
const plan = model.plan();
const states: HostState[] = Array.from({ length: args.hosts }, () => ({
  hits: new Map(),
  answered: new Map(),
  arrivals: [],
}));
let firstMs: number | undefined;
let firstPageMs: number | undefined;
let lastMs = 0;

const { servers, port } = await serveHosts(args.hosts, (host) => {
  const state = states[host] as HostState;
  return (request, response) => {
    lastMs = performance.now();
    firstMs ??= lastMs;
    const target = request.url ?? '/';
    state.arrivals.push([lastMs, target]);
    if (target !== '/robots.txt') firstPageMs ??= lastMs;
    const before = state.hits.get(target) ?? 0;
    state.hits.set(target, before + 1);
    const answer =
      target === '/robots.txt'
        ? {
            status: 200,
            headers: { 'content-type': 'text/plain; charset=utf-8' },
            body: ALLOW_ALL_ROBOTS_TXT,
          }
        : model.answer(target, before);
    if (answer.status < 500) state.answered.set(target, (state.answered.get(target) ?? 0) + 1);
    const body = Buffer.from(answer.body);
    setTimeout(() => {
      response.writeHead(answer.status, { ...answer.headers, 'content-length': String(body.length) });
      response.end(request.method === 'HEAD' ? undefined : body);
    }, args.latencyMs);
  };
});

const send = (message: MultiHostMessage) => process.send?.(message);
send({
  kind: 'ready',
  origins: states.map((_, h) => `http://127.0.0.${FIRST_ADDRESS + h}:${port}`),
  expected: [...plan.expected],
  htmlPages: plan.htmlPages,
});

const exit = () => void closeServers(servers).then(() => process.exit(0));
process.on('message', (message: MultiHostRequest) => {
  if (message.cmd === 'stats') {
    send({
      kind: 'stats',
      hosts: states.map((state) => ({ answered: [...state.answered], hits: [...state.hits] })),
      gaps: gapStats(states, message.delayMs, firstMs ?? 0),
      spanSeconds: firstMs === undefined ? 0 : (lastMs - firstMs) / 1000,
      firstPageSeconds:
        firstMs === undefined || firstPageMs === undefined ? Number.NaN : (firstPageMs - firstMs) / 1000,
    });
  } else if (message.cmd === 'reset') {
    for (const state of states) {
      state.hits.clear();
      state.answered.clear();
      state.arrivals.length = 0;
    }
    firstMs = undefined;
    firstPageMs = undefined;
    lastMs = 0;
    send({ kind: 'ok' });
  } else exit();
});
process.on('disconnect', exit);
