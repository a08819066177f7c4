/**
 * Options of `crawler crawl` (and `submit`): parsed strictly, so an unknown or malformed option fails
 * fast with a message naming it and what it accepts. Defaults live in the crawl config schema.
 */
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseSeedSource, type SeedSource } from '../lambdas/adapters/seed-source.ts';
import { CRAWL_LIMITS } from '../lambdas/core/base/index.ts';
import {
  ADAPTIVE_BOUNDS,
  CONTENT_MODES,
  type ContentMode,
  type CrawlConfigInput,
  type CredentialBundle,
  DEFAULT_USER_AGENT,
  RENDER_MODES,
  type RenderMode,
} from '../lambdas/core/crawl/index.ts';
import { normalizeUrl, SCOPES, type Scope } from '../lambdas/core/urls/index.ts';
import { isCrawlId } from '../lambdas/shared/contracts.ts';
import { LATEST } from '../lambdas/submission/since-crawl.ts';
import { PROGRESS_MODES, type ProgressMode } from './crawl-progress.ts';
import { type CrawlAccess, crawlAccess } from './credential-options.ts';
import { UsageError } from './usage-error.ts';
import { parseOptions } from './usage-hints.ts';

export interface CrawlCommandOptions {
  urls: string[];
  out: string | undefined;
  endpoint: string | undefined;
  stateDir: string | undefined;
  quiet: boolean;
  progress: ProgressMode;
  /** Clear a non-empty --out first (otherwise it is refused). */
  force: boolean;
  /** Also the per-million-pages cost of a small crawl. */
  verbose: boolean;
  concurrency: number | undefined;
  sitemap: string | undefined;
  /** `--resume ID`: go on with an interrupted crawl (its stored config; no URLs). */
  resume: string | undefined;
  /** `--markdown-dir DIR`: also one .md file per page. */
  markdownDir: string | undefined;
  /** `--seeds-file F`: more seeds, streamed from a file or an S3 object (any number). */
  seedsFile: SeedSource | undefined;
  /** `--since ID|latest`: re-crawl what that finished crawl fetched, conditionally (submit-crawl.ts). */
  since: string | undefined;
  /** `--events FILE`: also append every event put on the embedded EventBridge to FILE. */
  events: string | undefined;
  /** Headers and cookies for the crawl's requests (credential-options.ts): stored apart from the config. */
  credentials: CredentialBundle | undefined;
  config: Omit<CrawlConfigInput, 'crawlId' | 'seeds'>;
}

export const CRAWL_OPTIONS_HELP = `crawl options:
  --max-pages N        fetch at most N pages (exact, across all workers); default: no limit
  --max-depth N        follow links at most N hops from a seed (default 20)
  --scope S            host (default) | domain (registrable domain) | prefix (seed URL up to its last /)
  --include RE         only URLs matching RE (repeatable; any may match)
  --exclude RE         never URLs matching RE (repeatable; wins over --include)
  --delay MS           at least MS between two requests to one host (default 1000, at most 900000; robots Crawl-delay wins if larger)
  --concurrency N      concurrent fetch workers (local run: event-source slots; default from the stack)
  --user-agent S       User-Agent header and robots.txt product token (default: ${DEFAULT_USER_AGENT})
  --allow-private      allow private, loopback and link-local addresses (tests, local demos)
  --no-respect-robots  ignore robots.txt (on by default)
  --max-cost-usd N     stop the crawl once the counted cost of its AWS calls reaches N dollars (its queued URLs end cancelled)
  --seeds-file F       also seed from F (a file or s3://bucket/key): one URL a line, blank lines and # comments
                       skipped, gzip read as such; streamed, so any number of seeds (a million and more)
  --sitemap URL|auto   also seed from a sitemap (or sitemap index); auto = the seeds' robots.txt Sitemap: lines
  --content MODE       each page's main content and metadata: markdown (default) | text (plain text instead) | none
  --warc-conversion    also put each page's Markdown (or text) into the WARC files, as conversion records
  --since ID|latest    re-crawl: every URL that finished crawl fetched is due again, asked with its ETag and
                       Last-Modified; unchanged pages become WARC revisit records, and each result says
                       change: new | same | changed | removed
  --page-events        with --since: also publish a "Page Changed" event per new, changed or removed page
  --adaptive           each URL keeps a revisit interval (a day to start), halved toward --min-interval when
                       its page changed, ×1.5 toward --max-interval when not; a --since re-crawl fetches only
                       the URLs that are due and reports the others same, with no request
  --min-interval D     with --adaptive: the shortest interval, as 90s, 30m, 6h or 14d (default 1h)
  --max-interval D     with --adaptive: the longest interval (default 14d)
  --header 'N: V'      send this header (repeatable) to the seeds' hosts or --credentials-hosts only
  --cookie NAME=VALUE  send this cookie (repeatable), scoped the same way
  --cookie-file F      send the cookies of F (Netscape format, as curl and browser extensions write), each to its domain
  --basic-auth U:P     HTTP Basic credentials, scoped the same way
  --credentials-hosts H,...  the hosts (host[:port]) that get --header, --cookie and --basic-auth (default: the seeds' hosts);
                       kept in an SSM SecureString parameter, never in the crawl's config, and REDACTED in WARC request records
  --proxy URL          send every request through this HTTP proxy (CONNECT), http://[user:password@]host:port; the user and
                       password are kept with the credentials
  --proxy-hosts H,...  only the requests to these hosts (host[:port]) go through --proxy
  --render MODE        never (default) | auto (pages that look like an app shell, and later pages of their host) | always:
                       HTML pages rendered in headless Chromium, their links and content read from the rendered DOM
  --render-pattern RE  also render the URLs matching RE (repeatable), in any mode`;

export const CRAWL_USAGE = `usage: crawler crawl URL... [options]
       crawler crawl --resume ID [--out DIR] [--state-dir DIR | --endpoint URL]
  --resume ID          go on with an interrupted crawl (Ctrl-C, kill) where it stopped
  --out DIR            where to write results.jsonl, warc/, pages.jsonl and summary.json (default: crawl-out/<crawl id>)
  --markdown-dir DIR   also write each page's Markdown to DIR/<host>/<path>.md, with YAML front matter
  --events FILE        also append every crawl event (Crawl Started, Completed, ...) to FILE, one JSON line each
  --endpoint URL       use a running AWS endpoint (LocalStack, \`crawler local\`) instead of embedded emulators
  --state-dir DIR      where the embedded AWS keeps its state between runs (default .crawler, or $CRAWLER_STATE_DIR)
  --quiet              nothing on stderr but errors
  --progress MODE      auto (default: one line updated in place on a terminal, else a plain line every few s) | line | json (one event per line) | none
  --keep-going         crawl the other seeds when some are not URLs (they end as \`invalid\` results)
  --force              clear a non-empty --out DIR first (otherwise it is refused)
  --verbose            also print the cost per million pages for a crawl under 1,000 pages
${CRAWL_OPTIONS_HELP}`;

const OPTIONS = {
  out: { type: 'string' },
  endpoint: { type: 'string' },
  'state-dir': { type: 'string' },
  quiet: { type: 'boolean' },
  progress: { type: 'string' },
  'keep-going': { type: 'boolean' },
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
  resume: { type: 'string' },
  content: { type: 'string' },
  'warc-conversion': { type: 'boolean' },
  'markdown-dir': { type: 'string' },
  'seeds-file': { type: 'string' },
  since: { type: 'string' },
  'page-events': { type: 'boolean' },
  adaptive: { type: 'boolean' },
  'min-interval': { type: 'string' },
  'max-interval': { type: 'string' },
  events: { type: 'string' },
  header: { type: 'string', multiple: true },
  cookie: { type: 'string', multiple: true },
  'cookie-file': { type: 'string' },
  'basic-auth': { type: 'string' },
  'credentials-hosts': { type: 'string' },
  proxy: { type: 'string' },
  'proxy-hosts': { type: 'string' },
  render: { type: 'string' },
  'render-pattern': { type: 'string', multiple: true },
} as const;

/** How a command that takes the crawl options (crawl, submit, local) reads them. */
export interface CrawlOptionsContext {
  /** The command's usage text: what each option accepts is quoted from it. */
  usage: string;
  /** The command's own options, taken out before (for "did you mean"). */
  ownOptions: readonly string[];
  /** Seed URLs from elsewhere than the command line (a file): not checked, they end as `invalid` results. */
  moreUrls: readonly string[];
  /** Every crawl after the first is a re-crawl without --since (a schedule's runs): --page-events stands alone. */
  recrawls: boolean;
}

export function parseCrawlOptions(
  args: string[],
  context: Partial<CrawlOptionsContext> = {},
): CrawlCommandOptions {
  const usage = context.usage ?? CRAWL_USAGE;
  const { values, positionals } = parseOptions(args, OPTIONS, usage, {
    allowNegative: true,
    otherOptions: context.ownOptions ?? [],
  });
  // Checked in this order, so that of several mistakes the same one is named first.
  checkSeedUrls(values, positionals);
  checkCrawlIds(values, context.recrawls);
  checkEventsFile(values);
  const adaptive = adaptiveBounds(values);
  const { urls, seedsFile } = crawlSeeds(values, positionals, context.moreUrls ?? []);
  const { credentials, proxy } = crawlAccess(values, positionals);
  if ((credentials !== undefined || proxy !== undefined) && values.resume !== undefined)
    throw new UsageError(
      '--resume goes on with the credentials and proxy the crawl was submitted with: give none with it',
    );
  checkChoices(values);
  const numbers = numericOptions(values);
  return {
    urls,
    out: values.out,
    endpoint: values.endpoint,
    stateDir: values['state-dir'],
    quiet: values.quiet ?? false,
    progress: (values.progress as ProgressMode | undefined) ?? 'auto',
    force: values.force ?? false,
    verbose: values.verbose ?? false,
    concurrency: numbers.concurrency,
    sitemap: values.sitemap,
    resume: values.resume,
    markdownDir: values['markdown-dir'],
    seedsFile,
    since: values.since,
    events: values.events,
    credentials,
    config: crawlConfig(values, numbers, adaptive, proxy),
  };
}

/** The options as node's parseArgs gives them. */
type CrawlValues = ReturnType<typeof parseOptions<typeof OPTIONS>>['values'];

/** The numbers among the options, each checked against its range. */
interface NumericOptions {
  maxPages: number | undefined;
  maxDepth: number | undefined;
  delayMs: number | undefined;
  concurrency: number | undefined;
  maxCostUsd: number | undefined;
}

/** A typo in a URL typed on the command line is a mistake to fix before anything starts. */
function checkSeedUrls(values: CrawlValues, positionals: readonly string[]): void {
  if (values['keep-going']) return;
  for (const url of positionals) {
    const normalized = normalizeUrl(url);
    if (!normalized.ok) {
      throw new UsageError(
        `seed URL: ${normalized.reason}; fix it, or pass --keep-going to crawl the other seeds`,
      );
    }
  }
}

/** `--resume ID`, `--since ID|latest`, and `--page-events`, which reports what a re-crawl finds. */
function checkCrawlIds(values: CrawlValues, recrawls: boolean | undefined): void {
  if (values.resume !== undefined && !isCrawlId(values.resume))
    throw new UsageError(
      `--resume expects a crawl id (crawler list shows them), got ${JSON.stringify(values.resume)}`,
    );
  if (values.since !== undefined && values.since !== LATEST && !isCrawlId(values.since))
    throw new UsageError(
      `--since expects a crawl id (crawler list shows them) or "latest", got ${JSON.stringify(values.since)}`,
    );
  if (values['page-events'] && values.since === undefined && !recrawls)
    throw new UsageError(
      '--page-events reports the pages a re-crawl finds new, changed or removed: give --since with it',
    );
}

/** `--events FILE`: the embedded EventBridge's, in a directory that exists. */
function checkEventsFile(values: CrawlValues): void {
  if (values.events !== undefined && values.events.trim() === '')
    throw new UsageError('--events expects a file');
  if (values.events !== undefined && values.endpoint !== undefined)
    throw new UsageError(
      '--events writes what the embedded EventBridge receives; with --endpoint, read the events where that endpoint delivers them',
    );
  if (
    values.events !== undefined &&
    !statSync(dirname(resolve(values.events)), { throwIfNoEntry: false })?.isDirectory()
  )
    throw new UsageError(`--events ${values.events}: its directory does not exist`);
}

/** `--adaptive` with its `--min-interval` and `--max-interval` bounds, in minutes. */
function adaptiveBounds(values: CrawlValues): { minMinutes: number; maxMinutes: number } | undefined {
  const minMinutes = duration(values['min-interval'], '--min-interval');
  const maxMinutes = duration(values['max-interval'], '--max-interval');
  if ((minMinutes !== undefined || maxMinutes !== undefined) && !values.adaptive)
    throw new UsageError(
      '--min-interval and --max-interval bound --adaptive revisits: give --adaptive with them',
    );
  const adaptive = values.adaptive
    ? {
        minMinutes: minMinutes ?? ADAPTIVE_BOUNDS.minMinutes,
        maxMinutes: maxMinutes ?? ADAPTIVE_BOUNDS.maxMinutes,
      }
    : undefined;
  if (adaptive !== undefined && adaptive.minMinutes > adaptive.maxMinutes)
    throw new UsageError(
      `--min-interval (${adaptive.minMinutes} min) must not exceed --max-interval (${adaptive.maxMinutes} min)`,
    );
  return adaptive;
}

/** The seeds: URLs (the command line's, then `moreUrls`) and a --seeds-file; none with --resume. */
function crawlSeeds(
  values: CrawlValues,
  positionals: readonly string[],
  moreUrls: readonly string[],
): { urls: string[]; seedsFile: SeedSource | undefined } {
  if (values.since !== undefined && values.resume !== undefined)
    throw new UsageError('--resume goes on with the crawl as it was submitted: give no --since with it');
  const urls = [...positionals, ...moreUrls];
  const seedsFile = seedSource(values['seeds-file']);
  if (values.resume !== undefined && (urls.length > 0 || seedsFile !== undefined))
    throw new UsageError('--resume goes on with the crawl as it was submitted: give no URLs with it');
  if (urls.length === 0 && seedsFile === undefined && values.resume === undefined)
    throw new UsageError('crawl needs at least one URL');
  if (seedsFile !== undefined && values.sitemap === 'auto')
    throw new UsageError(
      "--sitemap auto reads each seed's robots.txt, too many with --seeds-file: give --sitemap URL instead",
    );
  return { urls, seedsFile };
}

/** The options that take a URL, a name or one of a few modes. */
function checkChoices(values: CrawlValues): void {
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
  oneOf(values.progress, '--progress', PROGRESS_MODES);
  oneOf(values.render, '--render', RENDER_MODES);
  oneOf(values.content, '--content', CONTENT_MODES);
  if (values['markdown-dir'] !== undefined && values['markdown-dir'].trim() === '') {
    throw new UsageError('--markdown-dir expects a directory');
  }
}

function oneOf(text: string | undefined, option: string, choices: readonly string[]): void {
  if (text !== undefined && !choices.includes(text)) {
    throw new UsageError(`${option} expects one of ${choices.join(', ')}, got ${JSON.stringify(text)}`);
  }
}

function numericOptions(values: CrawlValues): NumericOptions {
  const maxPages = integer(values['max-pages'], '--max-pages', 1);
  const maxDepth = integer(values['max-depth'], '--max-depth', 0);
  const delayMs = integer(values.delay, '--delay', 0);
  if (delayMs !== undefined && delayMs > CRAWL_LIMITS.maxDelayMs) {
    throw new UsageError(
      `--delay expects milliseconds from 0 to ${CRAWL_LIMITS.maxDelayMs} (${CRAWL_LIMITS.maxDelayMs / 60_000} min, the longest pace a host is kept to), got ${JSON.stringify(values.delay)}`,
    );
  }
  const concurrency = integer(values.concurrency, '--concurrency', 1, 1000);
  const maxCostUsd = values['max-cost-usd'] === undefined ? undefined : Number(values['max-cost-usd']);
  if (maxCostUsd !== undefined && !(Number.isFinite(maxCostUsd) && maxCostUsd > 0)) {
    throw new UsageError(
      `--max-cost-usd expects a positive number of US dollars, got ${JSON.stringify(values['max-cost-usd'])}`,
    );
  }
  return { maxPages, maxDepth, delayMs, concurrency, maxCostUsd };
}

/** The crawl config's input: what the options set, the rest left to the schema's defaults. */
function crawlConfig(
  values: CrawlValues,
  { maxPages, maxDepth, delayMs, maxCostUsd }: NumericOptions,
  adaptive: { minMinutes: number; maxMinutes: number } | undefined,
  proxy: CrawlAccess['proxy'],
): CrawlCommandOptions['config'] {
  return {
    allowPrivate: values['allow-private'] ?? false,
    respectRobots: values['respect-robots'] ?? true,
    ...(values['user-agent'] === undefined ? {} : { userAgent: values['user-agent'] }),
    ...(values.scope === undefined ? {} : { scope: values.scope as Scope }),
    ...(maxPages === undefined ? {} : { maxPages }),
    ...(maxDepth === undefined ? {} : { maxDepth }),
    ...(delayMs === undefined ? {} : { delayMs }),
    ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
    ...(values.content === undefined ? {} : { content: values.content as ContentMode }),
    ...(values['warc-conversion'] ? { warcConversion: true } : {}),
    ...(values['page-events'] ? { pageEvents: true } : {}),
    ...(adaptive === undefined ? {} : { adaptive }),
    ...(proxy === undefined ? {} : { proxy }),
    ...(values.render === undefined ? {} : { render: values.render as RenderMode }),
    renderPatterns: patterns(values['render-pattern'], '--render-pattern'),
    include: patterns(values.include, '--include'),
    exclude: patterns(values.exclude, '--exclude'),
  };
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

const DURATION_UNITS: Record<string, number> = { s: 1 / 60, m: 1, h: 60, d: 1440 };

/** `90s`, `30m`, `6h`, `14d` as minutes; undefined when absent. */
function duration(text: string | undefined, option: string): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(\d{1,7})(s|m|h|d)$/.exec(text.trim());
  const minutes = match ? Number(match[1]) * (DURATION_UNITS[match[2] ?? ''] ?? 0) : 0;
  if (!(minutes > 0))
    throw new UsageError(
      `${option} expects a duration such as 90s, 30m, 6h or 14d, got ${JSON.stringify(text)}`,
    );
  return minutes;
}

function seedSource(text: string | undefined): SeedSource | undefined {
  if (text === undefined) return undefined;
  if (text.trim() === '' || text === '-')
    throw new UsageError('--seeds-file expects a file or s3://bucket/key (for stdin: --file -)');
  const source = parseSeedSource(text);
  if (source === undefined)
    throw new UsageError(
      `--seeds-file expects s3://bucket/key for an S3 object, got ${JSON.stringify(text)}`,
    );
  // A local file is checked before anything starts (an S3 object once the stack's S3 is open).
  if (source.kind === 'file' && !statSync(source.path, { throwIfNoEntry: false })?.isFile())
    throw new UsageError(`--seeds-file ${source.path}: no such file`);
  return source;
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
