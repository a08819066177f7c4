/** The `crawler` command line: dispatch to one module per command. */
import { UsageError } from './usage-error.ts';

const USAGE = `usage: crawler <command> [options]
commands:
  crawl URL... [options]   crawl on this machine on embedded AWS emulators; writes results, WARC files and a summary
  status ID                progress and counters of a crawl: state, counts by outcome, bytes, pages/s, times
  results ID [--outcome X] [--format jsonl|csv]
                           the crawl's results index, one line per URL
  get URL --crawl ID [--body|--headers|--warc] [--raw]
                           one stored response, by ranged read of its WARC record
  redrive [ID] [--queue tasks|results]
                           after a fix, move dead-lettered messages (of crawl ID) back to their queue
  robots FILE AGENT URL... the crawler's robots.txt decision (allowed/disallowed) for each URL
  submit URL... [options]  start a crawl on a deployed stack (--stack, default ServerlessCrawler) or at --endpoint; prints its id
  cancel ID                stop a crawl: its queued tasks end as \`cancelled\` without being fetched
  list                     the crawls in the local state (or --endpoint, --stack): id, state, pages, started
  export ID --out DIR      write a finished or interrupted crawl's results.jsonl, warc/ and summary.json to DIR
  local [--port 4566]      a long-running local AWS (SQS, S3, DynamoDB, the handlers) for the AWS CLI and SDKs
Reads find the AWS with --endpoint URL (LocalStack, \`crawler local\`), --stack NAME (deployed), or the
embedded state in .crawler/ (--state-dir DIR) that \`crawler crawl\` leaves.
run \`crawler <command> --help\` for a command's options.`;

type Command = (args: string[]) => Promise<number>;

/** Loaded on demand: `crawler robots` should not pay for the AWS SDK and CDK. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  crawl: async () => (await import('./crawl-command.ts')).crawlCommand,
  robots: async () => (await import('./robots-command.ts')).robotsCommand,
  status: async () => (await import('./status-command.ts')).statusCommand,
  results: async () => (await import('./results-command.ts')).resultsCommand,
  get: async () => (await import('./get-command.ts')).getCommand,
  submit: async () => (await import('./submit-command.ts')).submitCommand,
  cancel: async () => (await import('./cancel-command.ts')).cancelCommand,
  local: async () => (await import('./local-command.ts')).localCommand,
  redrive: async () => (await import('./redrive-command.ts')).redriveCommand,
  list: async () => (await import('./list-command.ts')).listCommand,
  export: async () => (await import('./export-command.ts')).exportCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name === undefined ? 2 : 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    console.error(`unknown command ${JSON.stringify(name)}\n${USAGE}`);
    return 2;
  }
  try {
    const command = await load();
    return await command(args);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`crawler ${name}: ${error.message}`);
      return 2;
    }
    console.error(
      `crawler ${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return 1;
  }
}
