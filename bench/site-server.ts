/**
 * The benchmark site in its own process (so the crawler under test does not share its CPU or heap).
 * Started by bench/run.ts with an IPC channel: sends `{origin, plan}` once listening, answers
 * `{cmd: 'stats'}` with the counts since the last `{cmd: 'reset'}`, and exits on `{cmd: 'exit'}` or
 * when the parent goes away.
 */
import { type BenchSiteOptions, serveBenchSite } from './site.ts';

export type SiteRequest = { cmd: 'stats' } | { cmd: 'reset' } | { cmd: 'exit' };
export interface SiteReady {
  kind: 'ready';
  origin: string;
  expected: string[];
  forbidden: string[];
  htmlPages: number;
}
export interface SiteStats {
  kind: 'stats';
  answered: Array<[string, number]>;
  hits: Array<[string, number]>;
}

const options = JSON.parse(process.argv[2] ?? '{}') as Partial<BenchSiteOptions>;
const site = await serveBenchSite(options);
const plan = site.model.plan();
const send = (message: SiteReady | SiteStats | { kind: 'ok' }) => process.send?.(message);
send({
  kind: 'ready',
  origin: site.origin,
  expected: [...plan.expected],
  forbidden: [...plan.forbidden],
  htmlPages: plan.htmlPages,
});
process.on('message', async (message: SiteRequest) => {
  if (message.cmd === 'stats') send({ kind: 'stats', answered: [...site.answered], hits: [...site.hits] });
  else if (message.cmd === 'reset') {
    site.reset();
    send({ kind: 'ok' });
  } else {
    await site.close();
    process.exit(0);
  }
});
process.on('disconnect', () => {
  void site.close().then(() => process.exit(0));
});
