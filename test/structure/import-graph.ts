/**
 * The project's import graph and the rules it keeps (issue 28): no import loop anywhere, and no
 * import up the layers. The layers, from the bottom:
 *
 * - `lambdas/shared/contracts.ts`, `lambdas/shared/map-limit.ts`: names and layouts, no dependencies;
 * - `lambdas/core/`: pure crawl logic (no AWS SDK, no sockets, no browser), in folders by concern,
 *   each importing only the folders below it (CORE_FOLDERS, bottom first; lambdas/core/README.md),
 *   and only through their index (what any code outside a folder imports of it);
 * - `lambdas/shared/` (the rest): what the handlers share (env, clients, logs, metrics);
 * - `lambdas/adapters/`: the core's ports over the SDK, undici and the browser;
 * - `lambdas/submission/`: starting crawls (the CLI's submit and the fetch function's starts);
 * - the handlers, `lambdas/{fetch,aggregate,render}/`;
 * - beside them, never imported by `lambdas/`: `cdk/` (the stack), `local/` (the embedded AWS),
 *   `cli/`, `bin/`, `bench/`, `test/`.
 *
 * Imports are read from the sources (static `import`/`export ... from`, and `import()`), type-only
 * ones included: a loop of types is still a loop for a reader.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Module (repo-relative path) to the repo-relative modules and packages it imports. */
export type ImportGraph = Map<string, Array<{ to: string; line: number }>>;

export const SOURCE_DIRS = ['lambdas', 'cdk', 'local', 'cli', 'bin', 'bench'] as const;

const HANDLER_DIRS = ['lambdas/fetch/', 'lambdas/aggregate/', 'lambdas/render/'];
const OUTSIDE_LAMBDAS = ['local/', 'cli/', 'bin/', 'bench/', 'test/'];

/** What a folder may not import: repo-relative path prefixes, and packages (`pkg:` + name prefix). */
const FORBIDDEN: ReadonlyArray<{ from: string; not: readonly string[]; why: string }> = [
  {
    from: 'lambdas/',
    not: ['cdk/', ...OUTSIDE_LAMBDAS],
    why: 'the Lambda code never imports the stack, the local runtime, the CLI or the tests',
  },
  {
    from: 'lambdas/core/',
    not: [
      'lambdas/adapters/',
      'lambdas/submission/',
      ...HANDLER_DIRS,
      'pkg:@aws-sdk/',
      'pkg:undici',
      'pkg:playwright-core',
      'pkg:@sparticuz/',
    ],
    why: 'the core is pure crawl logic: its ports are implemented by the adapters',
  },
  {
    from: 'lambdas/shared/',
    not: ['lambdas/adapters/', 'lambdas/submission/', ...HANDLER_DIRS],
    why: 'what the handlers share depends on no adapter and no handler',
  },
  {
    from: 'lambdas/adapters/',
    not: ['lambdas/submission/', ...HANDLER_DIRS],
    why: 'an adapter serves the core, never a handler',
  },
  {
    from: 'lambdas/submission/',
    not: HANDLER_DIRS,
    why: 'submission is used by the handlers, not the other way round',
  },
  {
    from: 'cdk/',
    not: [...OUTSIDE_LAMBDAS, 'lambdas/adapters/', 'lambdas/submission/', ...HANDLER_DIRS],
    why: 'the stack reads only contracts and limits from the Lambda code',
  },
  { from: 'local/', not: ['cli/', 'bench/', 'test/'], why: 'the local runtime is below the CLI' },
];

/** The core's folders, bottom first: a folder imports only those before it (and itself). */
export const CORE_FOLDERS = [
  'base',
  'urls',
  'results',
  'crawl',
  'robots',
  'archive',
  'frontier',
  'content',
  'fetch',
  'batches',
] as const;

function coreFolderOf(module: string): string | undefined {
  return /^lambdas\/core\/([a-z]+)\//.exec(module)?.[1];
}

/** `lambdas/core/` may import only these of `lambdas/shared/` (the rest sits above it). */
const CORE_MAY_USE_FROM_SHARED = new Set(['lambdas/shared/contracts.ts', 'lambdas/shared/map-limit.ts']);

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The import graph of the repo's sources (comments are not parsed: an import in a comment counts). */
export function readImportGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const dir of SOURCE_DIRS) {
    for (const entry of readdirSync(join(root, dir), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const file = join(entry.parentPath, entry.name);
      graph.set(relative(root, file), importsOf(root, file, readFileSync(file, 'utf8')));
    }
  }
  return graph;
}

function importsOf(root: string, file: string, source: string): Array<{ to: string; line: number }> {
  const found: Array<{ to: string; line: number }> = [];
  for (const match of source.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? '';
    if (spec.startsWith('node:')) continue;
    const line = source.slice(0, match.index).split('\n').length;
    const to = spec.startsWith('.') ? relative(root, resolve(dirname(file), spec)) : `pkg:${spec}`;
    found.push({ to, line });
  }
  return found;
}

/** Every rule the graph breaks, one line each: upward imports, then loops. */
export function structureViolations(graph: ImportGraph): string[] {
  const problems: string[] = [];
  for (const [from, imports] of graph) {
    for (const { to, line } of imports) {
      for (const rule of FORBIDDEN) {
        if (!from.startsWith(rule.from)) continue;
        const hit = rule.not.find((prefix) => to.startsWith(prefix));
        if (hit) problems.push(`${from}:${line} imports ${to}: ${rule.why}`);
      }
      const [fromFolder, toFolder] = [coreFolderOf(from), coreFolderOf(to)];
      if (from.startsWith('lambdas/core/') && to.startsWith('lambdas/core/') && fromFolder === undefined)
        problems.push(`${from}:${line}: a core module belongs in a folder (${CORE_FOLDERS.join(', ')})`);
      // Another folder's modules are reached through its index (its public surface), from anywhere.
      if (toFolder !== undefined && fromFolder !== toFolder && !to.endsWith(`/${toFolder}/index.ts`))
        problems.push(
          `${from}:${line} imports ${to}: another folder's module is imported from lambdas/core/${toFolder}/index.ts`,
        );
      if (fromFolder !== undefined && toFolder !== undefined && fromFolder !== toFolder) {
        const rank = (folder: string) => CORE_FOLDERS.indexOf(folder as (typeof CORE_FOLDERS)[number]);
        if (rank(toFolder) < 0)
          problems.push(`${from}:${line} imports ${to}: ${toFolder} is not a core folder`);
        else if (rank(toFolder) > rank(fromFolder))
          problems.push(
            `${from}:${line} imports ${to}: core/${fromFolder} may import only the folders below it (${CORE_FOLDERS.slice(0, rank(fromFolder)).join(', ') || 'none'})`,
          );
      }
      if (
        from.startsWith('lambdas/core/') &&
        to.startsWith('lambdas/shared/') &&
        !CORE_MAY_USE_FROM_SHARED.has(to)
      )
        problems.push(
          `${from}:${line} imports ${to}: the core may use only ${[...CORE_MAY_USE_FROM_SHARED].join(', ')} of lambdas/shared`,
        );
    }
  }
  for (const loop of importLoops(graph)) problems.push(`import loop: ${[...loop, loop[0]].join(' -> ')}`);
  return problems;
}

/** The strongly connected components of more than one module (or a module importing itself). */
export function importLoops(graph: ImportGraph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  const edges = (v: string) => (graph.get(v) ?? []).map((e) => e.to).filter((to) => graph.has(to));
  // Iterative Tarjan: the graph is a few hundred modules deep at most, but recursion is not needed.
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ v: string; next: number }> = [{ v: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { v: string; next: number };
      const targets = edges(frame.v);
      if (frame.next < targets.length) {
        const w = targets[frame.next++] as string;
        if (!index.has(w)) {
          index.set(w, counter);
          low.set(w, counter++);
          stack.push(w);
          onStack.add(w);
          work.push({ v: w, next: 0 });
        } else if (onStack.has(w)) low.set(frame.v, Math.min(low.get(frame.v) ?? 0, index.get(w) ?? 0));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.v, Math.min(low.get(parent.v) ?? 0, low.get(frame.v) ?? 0));
      if (low.get(frame.v) === index.get(frame.v)) {
        const component: string[] = [];
        let w: string | undefined;
        do {
          w = stack.pop();
          if (w === undefined) break;
          onStack.delete(w);
          component.push(w);
        } while (w !== frame.v);
        const selfLoop = component.length === 1 && edges(frame.v).includes(frame.v);
        if (component.length > 1 || selfLoop) loops.push(component.reverse());
      }
    }
  }
  return loops;
}
