/** The `crawler` command line: dispatch to one module per command. */
import { UsageError } from './usage-error.ts';

const USAGE = `usage: crawler <command> [options]
commands:
  crawl URL... [options]   crawl on this machine on embedded AWS emulators; writes results, WARC files and a summary
  robots FILE AGENT URL... the crawler's robots.txt decision (allowed/disallowed) for each URL
run \`crawler <command> --help\` for a command's options.`;

type Command = (args: string[]) => Promise<number>;

/** Loaded on demand: `crawler robots` should not pay for the AWS SDK and CDK. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  crawl: async () => (await import('./crawl-command.ts')).crawlCommand,
  robots: async () => (await import('./robots-command.ts')).robotsCommand,
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
