/**
 * `crawler submit URL... [--file F] [--sitemap URL|auto] [crawl options] [--stack NAME | --endpoint URL | --state-dir DIR]`:
 * starts a crawl on a running stack and prints its id. The stack is found, never typed by hand:
 *
 *   --stack NAME       a deployed stack: queue URLs, bucket and table from its CloudFormation outputs
 *                      (with --endpoint too: a stack that `cdklocal deploy` put into LocalStack)
 *   --endpoint URL     a running local AWS (`crawler local`) or LocalStack provisioned by `crawler crawl --endpoint`
 *   --state-dir DIR    the embedded AWS's state (a running `crawler local` on it is used directly)
 *   none of them       the deployed stack `ServerlessCrawler`
 *
 * The crawl config is stored once, the seeds go in batches (lambdas/submission/submit-crawl.ts).
 * stdout carries only the crawl id (or one JSON object with --json), so `ID=$(crawler submit ...)`
 * works; what was sent goes to stderr.
 */
import { readFile } from 'node:fs/promises';
import { describeSeedSource, SeedSourceError, seedSourceLines } from '../lambdas/adapters/seed-source.ts';
import { type CrawlConfig, parseCrawlConfig } from '../lambdas/core/crawl/index.ts';
import { CRAWL_ID_RULE, isCrawlId, STACK_NAME } from '../lambdas/shared/contracts.ts';
import { SinceError } from '../lambdas/submission/since-crawl.ts';
import {
  ConfigTooLargeError,
  type SubmitSummary,
  sinceNote,
  submitCrawl,
} from '../lambdas/submission/submit-crawl.ts';
import type { LocatedStack } from '../local/stack-locator.ts';
import { type CliIo, write, writingTo } from './cli-io.ts';
import { newCrawlId } from './crawl-id.ts';
import { CRAWL_OPTIONS_HELP, type CrawlCommandOptions, parseCrawlOptions } from './crawl-options.ts';
import { defineCommand } from './define-command.ts';
import { type ExtractedValues, extractOptions } from './own-options.ts';
import { discoverSitemapUrls } from './sitemap-seeds.ts';
import { openStack, StackNotFoundError } from './stack-access.ts';
import { UsageError } from './usage-error.ts';

/** The stack `cdk deploy` creates (cdk/crawler-stack.ts STACK_NAME; not imported: it loads aws-cdk-lib). */
export const SUBMIT_USAGE = `usage: crawler submit URL... [options]
starts a crawl on a deployed stack (default: stack ${STACK_NAME}), a running \`crawler local\` or
LocalStack, and prints its id
  --file F             also read seed URLs from F, one per line (blank lines and # comments skipped; - = stdin)
  --crawl-id ID        the crawl's id (1-64 of A-Z a-z 0-9 _ -; default: a new c-<time>-<random>)
  --json               print {crawlId, tasks, skipped, invalid, duplicates, stack} as JSON instead of the id
  --quiet              nothing on stderr
  --keep-going         submit the other seeds when some are not URLs (they end as \`invalid\` results)
  --stack NAME         a deployed stack: names from its CloudFormation outputs (default ${STACK_NAME});
                       with --endpoint: a stack deployed into LocalStack with cdklocal
  --endpoint URL       a running local AWS (\`crawler local\`) or LocalStack provisioned by \`crawler crawl --endpoint\`
  --state-dir DIR      the embedded AWS's state (used through \`crawler local\` when it runs on it)
${CRAWL_OPTIONS_HELP.replace(/\n {2}--concurrency N[^\n]*/, '')}
Concurrency is the stack's (the fetch event source's MaximumConcurrency), not a crawl's.`;

/** Options of `submit` that `crawl` does not have; the rest is parsed as crawl options. */
const OWN = { file: 'strings', stack: 'string', 'crawl-id': 'string', json: 'boolean' } as const;

export interface SubmitCommandOptions {
  crawl: CrawlCommandOptions;
  files: string[];
  stack: string | undefined;
  crawlId: string | undefined;
  json: boolean;
}

export const submitCommand = defineCommand({
  usage: SUBMIT_USAGE,
  parse: async (args) => {
    const { own, rest } = extractOptions(args, OWN, SUBMIT_USAGE);
    const fileUrls: string[] = [];
    for (const file of own.file) fileUrls.push(...(await readSeedFile(file)));
    return { options: parseSubmitOptions(rest, fileUrls, own) };
  },
  run: async ({ io, options }) => {
    const crawlId = options.crawlId ?? newCrawlId();
    let config: CrawlConfig;
    try {
      config = parseCrawlConfig({
        ...options.crawl.config,
        crawlId,
        seeds: options.crawl.urls,
        createdAt: new Date().toISOString(),
      });
    } catch (error) {
      throw new UsageError(`invalid crawl: ${(error as Error).message}`);
    }
    const endpoint = options.crawl.endpoint;
    // Default target: the deployed stack, unless a local one was named.
    const stackName =
      options.stack ??
      (endpoint === undefined && options.crawl.stateDir === undefined ? STACK_NAME : undefined);
    const say = options.crawl.quiet ? () => {} : (line: string) => io.stderr.write(`${line}\n`);

    return writingTo(io.stdout, async () => {
      let stack: Awaited<ReturnType<typeof openStack>>;
      try {
        stack = await openStack({ endpoint, stack: stackName, 'state-dir': options.crawl.stateDir }, io);
      } catch (error) {
        if (!(error instanceof StackNotFoundError)) throw error;
        io.stderr.write(`${error.message}\n`);
        return 1;
      }
      try {
        const sitemapUrls = options.crawl.sitemap
          ? await discoverSitemapUrls(options.crawl.sitemap, config, say)
          : [];
        const submitted = await submitTo(stack, config, sitemapUrls, {
          io,
          crawlId,
          options: options.crawl,
          say,
        });
        if (typeof submitted === 'number') return submitted;
        say(describeSubmitted(crawlId, stack.description, submitted));
        const flags = describeTarget(endpoint, stackName, options.crawl.stateDir);
        say(`watch it:  crawler status ${crawlId}${flags}`);
        say(`read it:   crawler results ${crawlId}${flags}`);
        await write(
          io.stdout,
          options.json
            ? `${JSON.stringify({ crawlId, ...submitted, stack: stack.description })}\n`
            : `${crawlId}\n`,
        );
        return 0;
      } finally {
        await stack.close();
      }
    });
  },
});

/** Where `submit` reports: stderr, and `say` (stderr unless --quiet). */
interface SubmitReport {
  io: CliIo;
  crawlId: string;
  options: CrawlCommandOptions;
  say: (line: string) => void;
}

/**
 * Submits the crawl; a mistake found on the stack (too large a config, a seeds file or --since to
 * fix) is exit code 2, a crawl id already taken exit code 1, each with its line on stderr.
 */
async function submitTo(
  stack: LocatedStack,
  config: CrawlConfig,
  sitemapUrls: readonly string[],
  { io, crawlId, options, say }: SubmitReport,
): Promise<SubmitSummary | number> {
  try {
    const source = options.seedsFile;
    return await submitCrawl(stack, config, sitemapUrls, {
      ...(options.since === undefined ? {} : { since: options.since }),
      ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
      onWarning: (line: string) => io.stderr.write(`${line}\n`),
      onProgress: (p) => {
        if (p.total > 500) say(`crawl ${crawlId}: ${p.done}/${p.total} seeds sent`);
      },
      ...(source === undefined
        ? {}
        : {
            seedFile: {
              name: describeSeedSource(source),
              lines: () => seedSourceLines(source, stack.clients.s3),
            },
            onInvalidSeed: say,
          }),
    });
  } catch (error) {
    if (
      error instanceof ConfigTooLargeError ||
      error instanceof SeedSourceError ||
      error instanceof SinceError
    ) {
      io.stderr.write(`crawler submit: ${error.message}\n`);
      return 2;
    }
    if (error instanceof Error && error.name === 'ConditionalCheckFailedException') {
      io.stderr.write(`crawl ${crawlId} already exists in ${stack.description}; choose another --crawl-id\n`);
      return 1;
    }
    throw error;
  }
}

/** What was sent, on stderr. */
function describeSubmitted(crawlId: string, stack: string, submitted: SubmitSummary): string {
  return (
    `crawl ${crawlId} submitted to ${stack}: ${submitted.tasks} tasks sent` +
    (submitted.skipped ? `, ${submitted.skipped} seeds skipped` : '') +
    (submitted.invalid ? ` (${submitted.invalid} invalid, they end as invalid results)` : '') +
    (submitted.duplicates ? `, ${submitted.duplicates} duplicates dropped` : '') +
    (submitted.due === undefined ? '' : `; ${sinceNote(submitted)}`)
  );
}

function describeTarget(endpoint?: string, stack?: string, stateDir?: string): string {
  return [
    stack === undefined ? '' : ` --stack ${stack}`,
    endpoint === undefined ? '' : ` --endpoint ${endpoint}`,
    stateDir === undefined ? '' : ` --state-dir ${stateDir}`,
  ].join('');
}

export function parseSubmitOptions(
  rest: string[],
  fileUrls: string[],
  own: ExtractedValues<typeof OWN>,
): SubmitCommandOptions {
  let crawl: CrawlCommandOptions;
  try {
    crawl = parseCrawlOptions(rest, {
      usage: SUBMIT_USAGE,
      ownOptions: Object.keys(OWN),
      moreUrls: fileUrls,
    });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    throw new UsageError(
      error.message.replace(
        'crawl needs at least one URL',
        'submit needs at least one URL (as arguments, with --file or with --seeds-file)',
      ),
    );
  }
  if (crawl.out !== undefined)
    throw new UsageError('submit has no --out: read results with `crawler results ID`');
  if (crawl.markdownDir !== undefined)
    throw new UsageError(
      'submit has no --markdown-dir: once the crawl ends, `crawler export ID --out DIR --markdown-dir DIR` writes the files',
    );
  if (crawl.events !== undefined)
    throw new UsageError(
      "submit has no --events: the stack publishes them to EventBridge (its CrawlEventsQueue holds the crawls' lifecycle events)",
    );
  if (crawl.concurrency !== undefined) {
    throw new UsageError(
      "--concurrency is the stack's, not a crawl's: set the fetch event source's MaximumConcurrency (or `crawler local --concurrency N`)",
    );
  }
  if (own.stack !== undefined && own.stack.trim() === '')
    throw new UsageError('--stack expects a stack name');
  if (own.stack !== undefined && crawl.stateDir !== undefined) {
    throw new UsageError('give --stack or --state-dir, not both');
  }
  const crawlId = own['crawl-id'];
  if (crawlId !== undefined && !isCrawlId(crawlId)) {
    throw new UsageError(`--crawl-id expects ${CRAWL_ID_RULE}, got ${JSON.stringify(crawlId)}`);
  }
  return { crawl, files: own.file, stack: own.stack, crawlId, json: own.json ?? false };
}

/** Seed URLs of a file: one per line, trimmed; blank lines and lines starting with # are skipped. */
export async function readSeedFile(file: string): Promise<string[]> {
  let text: string;
  try {
    text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--file ${file}: ${(error as Error).message}`);
  }
  const urls = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const bad = urls.find((line) => line.startsWith('-'));
  if (bad !== undefined) throw new UsageError(`--file ${file}: ${JSON.stringify(bad)} is not a URL`);
  return urls;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

// --- Options a command adds to the crawl options ---------------------------------------------
