/**
 * The one way every command reads its options: a strict pass over the arguments that turns each
 * mistake into one line naming the option and what it accepts (taken from the command's own usage
 * text), with a "did you mean" for near-misses, before node:util parseArgs sees them (its own
 * messages, such as "argument is ambiguous", say nothing a person can act on).
 */
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { UsageError } from './usage-error.ts';

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps cost 1. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      }
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate `word` most likely meant: the nearest within a third of its length (at least 1),
 * or the only candidate it is a prefix of (3+ characters); undefined when nothing is close.
 */
export function suggest(word: string, candidates: Iterable<string>): string | undefined {
  const list = [...new Set(candidates)].filter((c) => c !== word);
  const limit = Math.max(1, Math.floor(word.length / 3));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of list) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  if (best) return best.candidate;
  const extending = word.length >= 3 ? list.filter((c) => c.startsWith(word)) : [];
  return extending.length === 1 ? extending[0] : undefined;
}

/**
 * What an option accepts, from the usage text's line for it (`  --max-pages N   fetch at most N
 * pages`): "--max-pages N: fetch at most N pages"; undefined when the usage has no such line.
 */
export function describeOption(usage: string, name: string): string | undefined {
  for (const spelling of [name, `no-${name}`]) {
    const escaped = spelling.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const line = new RegExp(`^\\s*--${escaped}(?: (\\S+))?\\s{2,}(\\S.*)$`, 'm').exec(usage);
    if (line) return `--${spelling}${line[1] ? ` ${line[1]}` : ''}: ${line[2]!.trim()}`;
  }
  return undefined;
}

/** " (--max-pages N: fetch at most N pages)", or nothing when the usage does not describe it. */
function accepted(usage: string, name: string): string {
  const description = describeOption(usage, name);
  return description === undefined ? '' : ` (${description})`;
}

/** `crawler crawl`, from a usage text that starts `usage: crawler crawl ...`. */
function commandOf(usage: string): string {
  return /usage: (crawler \S+)/.exec(usage)?.[1] ?? 'crawler <command>';
}

export function unknownOption(given: string, known: Iterable<string>, usage: string): UsageError {
  const bare = given.replace(/^-+/, '').split('=')[0] ?? '';
  const near = suggest(bare, known);
  return new UsageError(
    near === undefined
      ? `unknown option ${given}; \`${commandOf(usage)} --help\` lists the options`
      : `unknown option ${given}; did you mean --${near}?${accepted(usage, near)}`,
  );
}

export function missingValue(name: string, usage: string, got?: string): UsageError {
  const instead =
    got === undefined ? '' : `, got the option ${got} (write --${name}=${got} if that is the value)`;
  return new UsageError(`--${name} expects a value${accepted(usage, name)}${instead}`);
}

export function flagWithValue(name: string, usage: string): UsageError {
  return new UsageError(`--${name} takes no value${accepted(usage, name)}`);
}

export interface CheckOptions {
  /** `--no-NAME` sets boolean NAME to false. */
  allowNegative?: boolean;
  /** Options another layer took out before these (e.g. submit's own): suggested for near-misses too. */
  otherOptions?: readonly string[];
}

/**
 * Checks `args` against `options` and returns them with every string option's value attached
 * (`--max-pages=-5`), so a value that starts with a dash (a negative number) reaches the option's
 * own validation instead of parseArgs' "ambiguous" error. Throws a one-line UsageError for an
 * unknown option, a missing value, or a value given to a flag. Positionals and `--` pass through.
 */
export function checkOptions(
  args: readonly string[],
  options: ParseArgsOptionsConfig,
  usage: string,
  check: CheckOptions = {},
): string[] {
  const known = [...Object.keys(options), ...(check.otherOptions ?? [])];
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      out.push(...args.slice(i));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      out.push(arg);
      continue;
    }
    if (!arg.startsWith('--')) throw unknownOption(arg, known, usage); // no command has short options
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    const inline = eq === -1 ? undefined : arg.slice(eq + 1);
    const option = options[name];
    const negated = check.allowNegative && name.startsWith('no-') ? options[name.slice(3)] : undefined;
    if (option === undefined && negated?.type === 'boolean') {
      if (inline !== undefined) throw flagWithValue(name, usage);
      out.push(arg);
      continue;
    }
    if (option === undefined) throw unknownOption(`--${name}`, known, usage);
    if (option.type === 'boolean') {
      if (inline !== undefined) throw flagWithValue(name, usage);
      out.push(arg);
      continue;
    }
    if (inline !== undefined) {
      out.push(arg);
      continue;
    }
    const next = args[i + 1];
    if (next === undefined) throw missingValue(name, usage);
    // A negative number is a value (its option says why it is wrong); anything else dashed is an option.
    if (next.startsWith('-') && next !== '-' && !/^-[\d.]/.test(next)) throw missingValue(name, usage, next);
    out.push(`--${name}=${next}`);
    i++;
  }
  return out;
}

/** Strict parseArgs of a command's options and positionals: see `parseOptions`. */
export function parseCommandArgs<T extends ParseArgsOptionsConfig>(
  args: string[],
  options: T,
  usage: string,
) {
  return parseOptions(args, options, usage);
}

/**
 * Strict parseArgs with positionals, after `checkOptions`: every malformed or unknown option is a
 * one-line UsageError. Whatever parseArgs still rejects keeps only its first sentence.
 */
export function parseOptions<T extends ParseArgsOptionsConfig>(
  args: readonly string[],
  options: T,
  usage: string,
  check: CheckOptions = {},
) {
  const checked = checkOptions(args, options, usage, check);
  try {
    return parseArgs({
      args: checked,
      options,
      allowPositionals: true,
      strict: true,
      allowNegative: check.allowNegative ?? false,
    });
  } catch (error) {
    throw new UsageError(((error as Error).message.split(/\.\s|\n/)[0] ?? '').trim());
  }
}
