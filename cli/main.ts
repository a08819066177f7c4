/** The `crawler` command line: dispatch to one module per command. */
import { describeFailure } from './usage-failures.ts';
import { suggest } from './usage-hints.ts';

const USAGE = `usage: crawler <command> [options]
commands:
  crawl URL... [options]   crawl on this machine on embedded AWS emulators; writes results, WARC files, Markdown and a summary
  status ID                progress and counters of a crawl: state, counts by outcome, bytes, pages/s, times
  results ID [--outcome X] [--change C] [--format jsonl|csv]
                           the crawl's results index, one line per URL
  diff ID URL              a re-crawl's page against the crawl it followed: a unified diff of its Markdown
  get URL --crawl ID [--body|--headers|--warc|--markdown|--text|--meta] [--raw]
                           one stored response (its WARC record) or its content (Markdown, text, metadata)
  redrive [ID] [--queue tasks|results|renders|both|all]
                           after a fix, move dead-lettered messages (of crawl ID) back to their queue
  robots FILE AGENT URL... the crawler's robots.txt decision (allowed/disallowed) for each URL
  submit URL... [options]  start a crawl on a deployed stack (--stack, default ServerlessCrawler) or at --endpoint; prints its id
  cancel ID                stop a crawl: its queued tasks end as \`cancelled\` without being fetched
  list                     the crawls in the local state (or --endpoint, --stack): id, state, pages, started
  export ID --out DIR      write a finished or interrupted crawl's results.jsonl, warc/, pages.jsonl and summary.json to DIR
  llms-txt ID [--out DIR]  write llms.txt and llms-full.txt of a crawl from its pages' Markdown
  schedule add|list|remove|run
                           crawls on a cron: each run re-crawls the last; on AWS through EventBridge Scheduler
  local [--port 4566]      a long-running local AWS (SQS, S3, DynamoDB, the handlers) for the AWS CLI and SDKs
Reads find the AWS with --endpoint URL (LocalStack, \`crawler local\`), --stack NAME (deployed), or the
embedded state in .crawler/ (--state-dir DIR) that \`crawler crawl\` leaves.
run \`crawler <command> --help\` for a command's options.
A mistake in the command line exits with 2, a failure with 1, each with one line on stderr saying
what to do; --debug (anywhere before --) adds the stack trace.`;

type Command = (args: string[]) => Promise<number>;

/** Loaded on demand: `crawler robots` should not pay for the AWS SDK and CDK. */
export const COMMANDS: Record<string, () => Promise<Command>> = {
  crawl: async () => (await import('./crawl-command.ts')).crawlCommand,
  robots: async () => (await import('./robots-command.ts')).robotsCommand,
  status: async () => (await import('./status-command.ts')).statusCommand,
  results: async () => (await import('./results-command.ts')).resultsCommand,
  get: async () => (await import('./get-command.ts')).getCommand,
  diff: async () => (await import('./diff-command.ts')).diffCommand,
  submit: async () => (await import('./submit-command.ts')).submitCommand,
  cancel: async () => (await import('./cancel-command.ts')).cancelCommand,
  local: async () => (await import('./local-command.ts')).localCommand,
  redrive: async () => (await import('./redrive-command.ts')).redriveCommand,
  list: async () => (await import('./list-command.ts')).listCommand,
  export: async () => (await import('./export-command.ts')).exportCommand,
  'llms-txt': async () => (await import('./llms-txt-command.ts')).llmsTxtCommand,
  schedule: async () => (await import('./schedule-command.ts')).scheduleCommand,
};

export async function main(argv: string[]): Promise<number> {
  const { debug, rest } = takeDebugFlag(argv);
  const [name, ...args] = rest;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name === undefined ? 2 : 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    const near = suggest(name, Object.keys(COMMANDS));
    console.error(
      `crawler: unknown command ${JSON.stringify(name)}; ${near === undefined ? 'the commands are' : `did you mean ${near}? The commands are`} ${Object.keys(COMMANDS).join(', ')}`,
    );
    return 2;
  }
  try {
    const command = await load();
    return await command(args);
  } catch (error) {
    const failure = describeFailure(error, name);
    console.error(failure.line);
    if (debug) console.error(error instanceof Error ? (error.stack ?? error) : error);
    return failure.exitCode;
  }
}

/** `--debug` is global: wherever it stands before `--`, it is taken out of the command's arguments. */
function takeDebugFlag(argv: string[]): { debug: boolean; rest: string[] } {
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length;
  const before = argv.slice(0, end);
  return {
    debug: before.includes('--debug'),
    rest: [...before.filter((arg) => arg !== '--debug'), ...argv.slice(end)],
  };
}
