/**
 * Options of `crawler crawl` (and `submit`): parsed strictly, so an unknown or malformed option fails
 * fast with a message naming it and what it accepts. Defaults live in the crawl config schema.
 */
import { parseArgs } from 'node:util';
import { type CrawlConfigInput, DEFAULT_USER_AGENT } from '../lambdas/core/crawl-config.ts';
import { SCOPES, type Scope } from '../lambdas/core/scope.ts';
import { UsageError } from './usage-error.ts';

export interface CrawlCommandOptions {
  urls: string[];
  out: string | undefined;
  endpoint: string | undefined;
  stateDir: string | undefined;
  quiet: boolean;
  /** Clear a non-empty --out first (otherwise it is refused). */
  force: boolean;
  /** Also the per-million-pages cost of a small crawl. */
  verbose: boolean;
  concurrency: number | undefined;
  sitemap: string | undefined;
  config: Omit<CrawlConfigInput, 'crawlId' | 'seeds'>;
}

export const CRAWL_OPTIONS_HELP = `crawl options:
  --max-pages N        fetch at most N pages (exact, across all workers); default: no limit
  --max-depth N        follow links at most N hops from a seed (default 20)
  --scope S            host (default) | domain (registrable domain) | prefix (seed URL up to its last /)
  --include RE         only URLs matching RE (repeatable; any may match)
  --exclude RE         never URLs matching RE (repeatable; wins over --include)
  --delay MS           at least MS between two requests to one host (default 1000; robots Crawl-delay wins if larger)
  --concurrency N      concurrent fetch workers (local run: event-source slots; default from the stack)
  --user-agent S       User-Agent header and robots.txt product token (default: ${DEFAULT_USER_AGENT})
  --allow-private      allow private, loopback and link-local addresses (tests, local demos)
  --no-respect-robots  ignore robots.txt (on by default)
  --max-cost-usd N     stop the crawl once its estimated AWS cost reaches N dollars (its queued URLs end cancelled)
  --sitemap URL|auto   also seed from a sitemap (or sitemap index); auto = the seeds' robots.txt Sitemap: lines`;

export const CRAWL_USAGE = `usage: crawler crawl URL... [options]
  --out DIR            where to write results.jsonl, warc/ and summary.json (default: crawl-out/<crawl id>)
  --endpoint URL       use a running AWS endpoint (LocalStack, \`crawler local\`) instead of embedded emulators
  --state-dir DIR      where the embedded AWS keeps its state between runs (default .crawler, or $CRAWLER_STATE_DIR)
  --quiet              no progress on stderr
  --force              clear a non-empty --out DIR first (otherwise it is refused)
  --verbose            also print the cost per million pages for a crawl under 1,000 pages
${CRAWL_OPTIONS_HELP}`;

const OPTIONS = {
  out: { type: 'string' },
  endpoint: { type: 'string' },
  'state-dir': { type: 'string' },
  quiet: { type: 'boolean' },
  force: { type: 'boolean' },
  verbose: { type: 'boolean' },
  'max-pages': { type: 'string' },
  'max-depth': { type: 'string' },
  scope: { type: 'string' },
  include: { type: 'string', multiple: true },
  exclude: { type: 'string', multiple: true },
  delay: { type: 'string' },
  concurrency: { type: 'string' },
  'user-agent': { type: 'string' },
  'allow-private': { type: 'boolean' },
  'respect-robots': { type: 'boolean' },
  sitemap: { type: 'string' },
  'max-cost-usd': { type: 'string' },
} as const;

export function parseCrawlOptions(args: string[]): CrawlCommandOptions {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${CRAWL_USAGE}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length === 0) throw new UsageError(`crawl needs at least one URL\n${CRAWL_USAGE}`);
  if (values.endpoint !== undefined && !/^https?:\/\//.test(values.endpoint)) {
    throw new UsageError(
      `--endpoint expects an http(s) URL such as http://127.0.0.1:4566, got ${JSON.stringify(values.endpoint)}`,
    );
  }
  if (values['user-agent'] !== undefined && values['user-agent'].trim() === '') {
    throw new UsageError('--user-agent expects a non-empty string');
  }
  if (values.scope !== undefined && !SCOPES.includes(values.scope as Scope)) {
    throw new UsageError(`--scope expects one of ${SCOPES.join(', ')}, got ${JSON.stringify(values.scope)}`);
  }
  if (values.sitemap !== undefined && values.sitemap !== 'auto' && !/^https?:\/\//.test(values.sitemap)) {
    throw new UsageError(`--sitemap expects an http(s) URL or "auto", got ${JSON.stringify(values.sitemap)}`);
  }
  const maxPages = integer(values['max-pages'], '--max-pages', 1);
  const maxDepth = integer(values['max-depth'], '--max-depth', 0);
  const delayMs = integer(values.delay, '--delay', 0);
  const concurrency = integer(values.concurrency, '--concurrency', 1, 1000);
  const maxCostUsd = values['max-cost-usd'] === undefined ? undefined : Number(values['max-cost-usd']);
  if (maxCostUsd !== undefined && !(Number.isFinite(maxCostUsd) && maxCostUsd > 0)) {
    throw new UsageError(
      `--max-cost-usd expects a positive number of US dollars, got ${JSON.stringify(values['max-cost-usd'])}`,
    );
  }
  return {
    urls: positionals,
    out: values.out,
    endpoint: values.endpoint,
    stateDir: values['state-dir'],
    quiet: values.quiet ?? false,
    force: values.force ?? false,
    verbose: values.verbose ?? false,
    concurrency,
    sitemap: values.sitemap,
    config: {
      allowPrivate: values['allow-private'] ?? false,
      respectRobots: values['respect-robots'] ?? true,
      ...(values['user-agent'] === undefined ? {} : { userAgent: values['user-agent'] }),
      ...(values.scope === undefined ? {} : { scope: values.scope as Scope }),
      ...(maxPages === undefined ? {} : { maxPages }),
      ...(maxDepth === undefined ? {} : { maxDepth }),
      ...(delayMs === undefined ? {} : { delayMs }),
      ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
      include: patterns(values.include, '--include'),
      exclude: patterns(values.exclude, '--exclude'),
    },
  };
}

function parse(args: string[]) {
  return parseArgs({ args, allowPositionals: true, allowNegative: true, strict: true, options: OPTIONS });
}

function integer(
  text: string | undefined,
  option: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    const range =
      max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
    throw new UsageError(`${option} expects ${range}, got ${JSON.stringify(text)}`);
  }
  return value;
}

function patterns(list: string[] | undefined, option: string): string[] {
  for (const pattern of list ?? []) {
    try {
      new RegExp(pattern);
    } catch (error) {
      throw new UsageError(
        `${option} expects a JavaScript regular expression; ${JSON.stringify(pattern)} is not one (${(error as Error).message})`,
      );
    }
  }
  return list ?? [];
}
