/**
 * Where a crawl's CPU goes (issue 25): one `crawler crawl` of the bench site under `--cpu-prof`, each
 * sample given to a component by the frames on its stack. A sample goes to the highest-ranked
 * component any of its frames names (COMPONENTS, in order), so the zlib call under the WARC writer is
 * WARC and the SDK's code under the frontier adapter is the SDK; a sample none names goes to what its
 * own frame is (Node's internals, GC). Asynchronous code has short stacks: the AWS SDK's middleware
 * and the emulators' request handling start at the event loop, so they are counted as themselves,
 * not under the crawl step that called them.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fixed } from './processes.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ComponentTime {
  component: string;
  /** The groups: fetch, parse, extraction, WARC, frontier, queues, and the rest. */
  group: string;
  ms: number;
}

/** Ranked: the first that names any frame of a sample's stack takes the sample. */
const COMPONENTS: ReadonlyArray<{ component: string; group: string; url: RegExp }> = [
  {
    component: 'DynamoDB emulator (dynalite, LevelDB)',
    group: 'frontier',
    url: /node_modules\/(dynalite|classic-level|abstract-level|level-[a-z]+|memory-level)\/|local\/(strict-dynamodb|dynalite-)/,
  },
  {
    component: 'S3 emulator (fauxqs, files)',
    group: 'WARC',
    url: /fauxqs\/dist\/s3\/|local\/atomic-s3-files/,
  },
  { component: 'SQS emulator (fauxqs)', group: 'queues', url: /fauxqs\/dist\/sqs\/|local\/strict-fauxqs/ },
  {
    component: "emulators' HTTP server (fastify)",
    group: 'queues',
    url: /node_modules\/(fauxqs|fastify|find-my-way|light-my-request|avvio|@fastify\/[^/]+)\/|local\/(request-guard|endpoint-router)/,
  },
  {
    component: 'AWS SDK clients (serialize, sign, HTTP)',
    group: 'AWS SDK',
    url: /node_modules\/(@aws-sdk|@smithy)\//,
  },
  { component: 'WARC records (gzip)', group: 'WARC', url: /lambdas\/core\/archive\// },
  {
    component: 'main content and Markdown',
    group: 'extraction',
    url: /lambdas\/core\/content\/(?!links)|lambdas\/core\/crawl\/page-content/,
  },
  {
    component: 'HTML parse and links',
    group: 'parse',
    url: /node_modules\/(htmlparser2|domhandler|entities)\/|lambdas\/core\/(content\/links|urls\/)/,
  },
  {
    component: 'HTTP fetch (undici)',
    group: 'fetch',
    url: /node_modules\/undici\/|lambdas\/adapters\/http-|lambdas\/core\/(robots\/|base\/encoding|fetch\/body-)/,
  },
  {
    component: 'frontier logic (admission, visits, finalize)',
    group: 'frontier',
    url: /lambdas\/core\/(frontier|fetch|batches)\/|lambdas\/adapters\/(frontier|crawl-)/,
  },
  { component: 'other handler code', group: 'handlers', url: /lambdas\// },
  { component: 'local runtime (pollers, containers)', group: 'queues', url: /\/local\// },
  { component: 'CLI (progress, output files)', group: 'CLI', url: /\/cli\// },
];

/** A sample no component names: by its own frame. */
function leafKind(frame: ProfileNode['callFrame']): { component: string; group: string } {
  if (frame.functionName === '(garbage collector)')
    return { component: 'garbage collection', group: 'runtime' };
  if (frame.functionName === '(idle)') return { component: 'idle', group: 'idle' };
  if (frame.url.startsWith('node:') || frame.url === '')
    return { component: "Node's internals (streams, sockets, timers)", group: 'runtime' };
  return { component: 'other modules', group: 'runtime' };
}

export function componentTimes(profile: CpuProfile): ComponentTime[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const totals = new Map<string, ComponentTime>();
  for (const [id, us] of selfUs) {
    const leaf = byId.get(id);
    if (!leaf) continue;
    let rank = COMPONENTS.length;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const url = byId.get(at)?.callFrame.url ?? '';
      const found = COMPONENTS.findIndex((c, i) => i < rank && c.url.test(url));
      if (found >= 0) rank = found;
    }
    const kind = COMPONENTS[rank] ?? leafKind(leaf.callFrame);
    const entry = totals.get(kind.component) ?? { component: kind.component, group: kind.group, ms: 0 };
    entry.ms += us / 1000;
    totals.set(kind.component, entry);
  }
  return [...totals.values()].sort((a, b) => b.ms - a.ms);
}

/** The profile `--cpu-prof-dir` left in `dir` (one process: one file). */
export async function readProfile(dir: string): Promise<CpuProfile> {
  const file = (await readdir(dir)).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile in ${dir}`);
  return JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile;
}

export function componentTable(times: readonly ComponentTime[], pages: number, workload: string): string[] {
  const busy = times.filter((t) => t.group !== 'idle');
  const total = busy.reduce((sum, t) => sum + t.ms, 0);
  const idle = times.find((t) => t.group === 'idle')?.ms ?? 0;
  return [
    `### CPU per page by component (${workload})`,
    '',
    '| component | group | CPU ms / page | share |',
    '| --- | --- | --- | --- |',
    ...busy.map(
      (t) =>
        `| ${t.component} | ${t.group} | ${fixed(t.ms / pages, 2)} | ${fixed((100 * t.ms) / total, 1)} % |`,
    ),
    `| **all** | | **${fixed(total / pages, 2)}** | 100 % |`,
    '',
    `The process was idle ${fixed(idle / 1000, 1)} s of the profile (waiting on the site, the queues or a timer).`,
  ];
}
