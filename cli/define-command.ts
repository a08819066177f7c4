/**
 * The shape of a CLI command: its usage text, its options, and what it does with them. `--help`
 * prints the usage; the options are parsed strictly (a mistake is one UsageError line, usage-hints.ts)
 * before `run` sees them; the io is injectable (tests pass streams and a stack locator).
 */
import type { ParseArgsOptionsConfig } from 'node:util';
import { type CliIo, cliIo, write } from './results-reader.ts';
import { parseCommandArgs } from './usage-hints.ts';

export type Parsed<T extends ParseArgsOptionsConfig> = ReturnType<typeof parseCommandArgs<T>>;

export interface CommandSpec<T extends ParseArgsOptionsConfig> {
  usage: string;
  options: T;
  run(context: { io: CliIo } & Parsed<T>): Promise<number>;
}

export type Command = (args: string[], overrides?: Partial<CliIo>) => Promise<number>;

export function defineCommand<const T extends ParseArgsOptionsConfig>(spec: CommandSpec<T>): Command {
  return async (args, overrides = {}) => {
    const io = cliIo(overrides);
    if (args.includes('--help') || args.includes('-h')) {
      await write(io.stdout, `${spec.usage}\n`);
      return 0;
    }
    const parsed = parseCommandArgs(args, spec.options, spec.usage);
    return spec.run({ io, ...parsed });
  };
}
