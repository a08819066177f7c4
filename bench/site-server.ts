/**
 * The benchmark site in its own process (so the crawler under test does not share its CPU or heap).
 * Started by bench/run.ts with an IPC channel: sends `ready` with the origins and the plan once
 * listening, answers `stats` with the counts since the last `reset`, and exits on `exit` or when the
 * parent goes away.
 *
 * argv[2]: JSON `{site?: Partial<BenchSiteOptions>, ports?: number}`.
 */
import { type BenchSiteOptions, serveBenchSite } from './site.ts';

export type SiteRequest = { cmd: 'stats' } | { cmd: 'reset' } | { cmd: 'exit' };

export interface SiteReady {
  kind: 'ready';
  origins: string[];
  expected: string[];
  forbidden: string[];
  htmlPages: number;
}

export interface SiteStats {
  kind: 'stats';
  answered: Array<[string, number]>;
  hits: Array<[string, number]>;
  /** Seconds from the first to the last request since the last reset (0 if none). */
  spanSeconds: number;
}

export type SiteMessage = SiteReady | SiteStats | { kind: 'ok' };

const args = JSON.parse(process.argv[2] ?? '{}') as { site?: Partial<BenchSiteOptions>; ports?: number };
const site = await serveBenchSite(args.site ?? {}, args.ports ?? 1);
const plan = site.model.plan();
const send = (message: SiteMessage) => process.send?.(message);

send({
  kind: 'ready',
  origins: site.origins,
  expected: [...plan.expected],
  forbidden: [...plan.forbidden],
  htmlPages: plan.htmlPages,
});

process.on('message', (message: SiteRequest) => {
  if (message.cmd === 'stats') {
    const span = site.span();
    send({
      kind: 'stats',
      answered: [...site.answered],
      hits: [...site.hits],
      spanSeconds: span === undefined ? 0 : (span.lastMs - span.firstMs) / 1000,
    });
  } else if (message.cmd === 'reset') {
    site.reset();
    send({ kind: 'ok' });
  } else {
    void site.close().then(() => process.exit(0));
  }
});
process.on('disconnect', () => {
  void site.close().then(() => process.exit(0));
});
