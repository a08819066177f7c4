/**
 * The shape of a CLI command: its usage text, how its arguments are parsed, and what it does with
 * them. `--help` prints the usage; the arguments are parsed strictly (a mistake is one UsageError
 * line, usage-hints.ts) before `run` sees them; the io is injectable (tests pass streams and a stack
 * locator). A command declares `options` (node's parseArgs, the common case) or its own `parse`
 * (the crawl options shared by crawl, submit and local).
 */
import type { ParseArgsOptionsConfig } from 'node:util';
import { type CliIo, cliIo, write } from './cli-io.ts';
import { parseCommandArgs } from './usage-hints.ts';

export type Parsed<T extends ParseArgsOptionsConfig> = ReturnType<typeof parseCommandArgs<T>>;

interface OptionsSpec<T extends ParseArgsOptionsConfig> {
  usage: string;
  options: T;
  run(context: { io: CliIo } & Parsed<T>): Promise<number>;
}

interface ParserSpec<P extends object> {
  usage: string;
  parse(args: string[]): P | Promise<P>;
  run(context: { io: CliIo } & P): Promise<number>;
}

export type Command = (args: string[], overrides?: Partial<CliIo>) => Promise<number>;

export function defineCommand<const T extends ParseArgsOptionsConfig>(spec: OptionsSpec<T>): Command;
export function defineCommand<P extends object>(spec: ParserSpec<P>): Command;
export function defineCommand(spec: OptionsSpec<ParseArgsOptionsConfig> | ParserSpec<object>): Command {
  return async (args, overrides = {}) => {
    const io = cliIo(overrides);
    if (args.includes('--help') || args.includes('-h')) {
      await write(io.stdout, `${spec.usage}\n`);
      return 0;
    }
    if ('options' in spec) return spec.run({ io, ...parseCommandArgs(args, spec.options, spec.usage) });
    return spec.run({ io, ...(await spec.parse(args)) });
  };
}
