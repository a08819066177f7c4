/**
 * Options of `crawler crawl` (and later `submit`): parsed strictly, so an unknown or malformed
 * option fails fast with a message naming it and what it accepts.
 */
import { parseArgs } from 'node:util';
import { type CrawlConfigInput, DEFAULT_USER_AGENT } from '../lambdas/core/crawl-config.ts';
import { UsageError } from './usage-error.ts';

export interface CrawlCommandOptions {
  urls: string[];
  out: string | undefined;
  endpoint: string | undefined;
  quiet: boolean;
  config: Omit<CrawlConfigInput, 'crawlId' | 'seeds'>;
}

export const CRAWL_USAGE = `usage: crawler crawl URL... [options]
  --out DIR            where to write results.jsonl, warc/ and summary.json (default: crawl-out/<crawl id>)
  --allow-private      allow fetching private, loopback and link-local addresses (tests, local demos)
  --user-agent S       User-Agent header (default: ${DEFAULT_USER_AGENT})
  --endpoint URL       use a running AWS endpoint (LocalStack, \`crawler local\`) instead of embedded emulators
  --quiet              no progress on stderr`;

export function parseCrawlOptions(args: string[]): CrawlCommandOptions {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${CRAWL_USAGE}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length === 0) throw new UsageError(`crawl needs at least one URL\n${CRAWL_USAGE}`);
  if (values.endpoint !== undefined && !URL.canParse(values.endpoint)) {
    throw new UsageError(
      `--endpoint expects an http(s) URL such as http://127.0.0.1:4566, got ${JSON.stringify(values.endpoint)}`,
    );
  }
  if (values['user-agent'] !== undefined && values['user-agent'].trim() === '') {
    throw new UsageError('--user-agent expects a non-empty string');
  }
  return {
    urls: positionals,
    out: values.out,
    endpoint: values.endpoint,
    quiet: values.quiet ?? false,
    config: {
      allowPrivate: values['allow-private'] ?? false,
      ...(values['user-agent'] === undefined ? {} : { userAgent: values['user-agent'] }),
    },
  };
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      out: { type: 'string' },
      'allow-private': { type: 'boolean' },
      'user-agent': { type: 'string' },
      endpoint: { type: 'string' },
      quiet: { type: 'boolean' },
    },
  });
}
