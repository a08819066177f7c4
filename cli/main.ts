/** The `crawler` command line: dispatch to one module per command. */
import { crawlCommand } from './crawl-command.ts';
import { UsageError } from './usage-error.ts';

const USAGE = `usage: crawler <command> [options]
commands:
  crawl URL... [options]   crawl on this machine on embedded AWS emulators; writes results, WARC files and a summary
run \`crawler <command> --help\` for a command's options.`;

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  crawl: crawlCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`unknown command ${JSON.stringify(name)}\n${USAGE}`);
    return 2;
  }
  try {
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
