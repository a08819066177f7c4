/**
 * `npm run bench -- --only recrawl` (issue 26): a first crawl, then `--since` re-crawl, of a site that
 * changed in between (test/fixtures/changing-site.ts: 5,000 pages of ~25 KB, as many as the bench
 * site; edition 2 changes 5 % of the pages, removes 1 % and adds 1 %), once with validators (ETag,
 * Last-Modified) and once without. `crawler crawl` runs as a child pinned to CPU 0, the site in this
 * process. Targets:
 *
 * - with validators, ≥ 90 % of the unchanged pages answered 304;
 * - every result's change exactly what the site's own list says;
 * - the re-crawl's counted cost (summary.json `aws.cost.total`) ≤ 50 % of the first crawl's;
 * - its stored bytes (WARC and content files) ≤ 10 % of the first crawl's;
 * - without validators, every unchanged page `same` by payload digest, and no body stored twice.
 */
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChangingSite, startChangingSite } from '../test/fixtures/changing-site.ts';
import { fixed, NODE, ROOT, run } from './processes.ts';

export const RECRAWL_SHAPE = { pages: 5_000, changed: 0.05, removed: 0.01, added: 0.01, pageBytes: 25_000 };
export const RECRAWL_TARGETS = { notModifiedShare: 0.9, costShare: 0.5, bytesShare: 0.1 };

interface CrawlFigures {
  crawlId: string;
  seconds: number;
  costUsd: number;
  /** The counted cost by service (summary.json `aws.cost`). */
  cost: Record<string, number>;
  storedBytes: number;
  results: Array<{ url: string; change?: string; revisit?: { profile: string } }>;
  /** URLs whose response record (a stored body) is in the crawl's WARC files. */
  responses: number;
}

export interface RecrawlCase {
  validators: boolean;
  first: Omit<CrawlFigures, 'results'>;
  second: Omit<CrawlFigures, 'results'>;
  unchanged: number;
  notModified: number;
  /** Result lines whose change differs from the site's list, and URLs of the list with no line. */
  wrongChanges: number;
  /** Unchanged pages the re-crawl stored a body for (a response record, not a revisit). */
  bodiesStoredTwice: number;
}

export interface RecrawlReport {
  shape: typeof RECRAWL_SHAPE;
  cases: RecrawlCase[];
}

async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? await sizeOf(path) : (await stat(path)).size;
  }
  return total;
}

async function crawl(site: ChangingSite, state: string, out: string, since: boolean, timeoutMs: number) {
  const done = await run(
    [
      NODE,
      join(ROOT, 'bin', 'crawler.ts'),
      'crawl',
      `${site.origin}/`,
      '--allow-private',
      '--delay',
      '0',
      '--concurrency',
      '2',
      '--quiet',
      '--out',
      out,
      '--state-dir',
      state,
      ...(since ? ['--since', 'latest'] : []),
    ],
    { cpu: 0, timeoutMs },
  );
  if (done.code !== 0) throw new Error(`crawler crawl failed (${done.code}): ${done.stderr.slice(-2000)}`);
  const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8'));
  const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  const stored =
    (await sizeOf(join(out, 'warc'))) +
    (await stat(join(out, 'pages.jsonl')).catch(() => ({ size: 0 }))).size;
  return {
    crawlId: summary.crawlId as string,
    seconds: summary.seconds as number,
    costUsd: summary.aws.cost.total as number,
    cost: summary.aws.cost as Record<string, number>,
    storedBytes: stored,
    results,
    responses: results.filter((line: { status?: number; revisit?: unknown }) => line.revisit === undefined)
      .length,
  };
}

async function runCase(validators: boolean, timeoutMs: number): Promise<RecrawlCase> {
  const site = await startChangingSite({ ...RECRAWL_SHAPE, validators });
  const dir = await mkdtemp(join(tmpdir(), 'bench-recrawl-'));
  try {
    const state = join(dir, 'state');
    const first = await crawl(site, state, join(dir, 'first'), false, timeoutMs);
    site.edition = 2;
    site.resetCounts();
    const second = await crawl(site, state, join(dir, 'second'), true, timeoutMs);
    const expected = site.expected();
    const seen = new Map(second.results.map((line) => [line.url, line]));
    let wrong = 0;
    for (const [url, change] of expected) if (seen.get(url)?.change !== change) wrong++;
    for (const url of seen.keys()) if (!expected.has(url)) wrong++;
    const unchanged = [...expected.values()].filter((change) => change === 'same').length;
    const bodiesStoredTwice = [...expected]
      .filter(([, change]) => change === 'same')
      .filter(([url]) => seen.get(url)?.revisit === undefined).length;
    const { results: _a, ...firstFigures } = first;
    const { results: _b, ...secondFigures } = second;
    return {
      validators,
      first: firstFigures,
      second: secondFigures,
      unchanged,
      notModified: site.notModified.size,
      wrongChanges: wrong,
      bodiesStoredTwice,
    };
  } finally {
    await site.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function runRecrawl(timeoutMs = 20 * 60_000): Promise<RecrawlReport> {
  return { shape: RECRAWL_SHAPE, cases: [await runCase(true, timeoutMs), await runCase(false, timeoutMs)] };
}

const pct = (value: number) => `${fixed(value * 100, 1)} %`;
const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');

export function recrawlTable(report: RecrawlReport): string {
  const { shape } = report;
  const lines = [
    `Re-crawl (issue 26): ${shape.pages} pages of ~${shape.pageBytes / 1000} KB; edition 2 changes ${pct(shape.changed)}, removes ${pct(shape.removed)}, adds ${pct(shape.added)}`,
    '',
    '| site | crawl | seconds | counted cost | stored bytes | response records |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const c of report.cases) {
    const name = c.validators ? 'with ETag + Last-Modified' : 'without validators';
    lines.push(
      `| ${name} | first | ${fixed(c.first.seconds)} | $${c.first.costUsd.toFixed(4)} | ${c.first.storedBytes} | ${c.first.responses} |`,
      `| ${name} | re-crawl | ${fixed(c.second.seconds)} | $${c.second.costUsd.toFixed(4)} | ${c.second.storedBytes} | ${c.second.responses} |`,
    );
  }
  lines.push(
    '',
    '| crawl (with validators) | lambda | sqs | s3 | dynamodb | total |',
    '| --- | --- | --- | --- | --- | --- |',
  );
  for (const c of report.cases.filter((c) => c.validators)) {
    for (const [name, figures] of [
      ['first', c.first],
      ['re-crawl', c.second],
    ] as const) {
      const usd = (service: string) => `$${(figures.cost[service] ?? 0).toFixed(5)}`;
      lines.push(
        `| ${name} | ${usd('lambda')} | ${usd('sqs')} | ${usd('s3')} | ${usd('dynamodb')} | ${usd('total')} |`,
      );
    }
  }
  lines.push('', '| target | measured | |', '| --- | --- | --- |');
  const withValidators = report.cases.find((c) => c.validators);
  const without = report.cases.find((c) => !c.validators);
  if (withValidators) {
    const share = withValidators.notModified / withValidators.unchanged;
    const cost = withValidators.second.costUsd / withValidators.first.costUsd;
    const bytes = withValidators.second.storedBytes / withValidators.first.storedBytes;
    lines.push(
      `| unchanged pages answered 304 ≥ ${pct(RECRAWL_TARGETS.notModifiedShare)} | ${withValidators.notModified} of ${withValidators.unchanged} (${pct(share)}) | ${mark(share >= RECRAWL_TARGETS.notModifiedShare)} |`,
      `| change statuses exact | ${withValidators.wrongChanges} wrong | ${mark(withValidators.wrongChanges === 0)} |`,
      `| re-crawl cost ≤ ${pct(RECRAWL_TARGETS.costShare)} of the first | ${pct(cost)} | ${mark(cost <= RECRAWL_TARGETS.costShare)} |`,
      `| re-crawl stored bytes ≤ ${pct(RECRAWL_TARGETS.bytesShare)} of the first | ${pct(bytes)} | ${mark(bytes <= RECRAWL_TARGETS.bytesShare)} |`,
    );
  }
  if (without) {
    lines.push(
      `| no validators: statuses exact | ${without.wrongChanges} wrong | ${mark(without.wrongChanges === 0)} |`,
      `| no validators: no body stored twice | ${without.bodiesStoredTwice} of ${without.unchanged} unchanged pages stored again | ${mark(without.bodiesStoredTwice === 0)} |`,
      `| no validators: re-crawl stored bytes | ${pct(without.second.storedBytes / without.first.storedBytes)} of the first | |`,
    );
  }
  return lines.join('\n');
}

if (import.meta.main) {
  const report = await runRecrawl();
  console.log(recrawlTable(report));
}
