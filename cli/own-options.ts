/**
 * A command's own options taken out of its arguments before the shared crawl options parse the rest
 * (`crawler submit` and `crawler local` add theirs to `crawler crawl`'s).
 */
import { flagWithValue, missingValue } from './usage-hints.ts';

/** `strings`: repeatable, collected in order. */
export type OptionKind = 'string' | 'strings' | 'boolean';
export type ExtractedValues<S extends Record<string, OptionKind>> = {
  [K in keyof S]: S[K] extends 'strings'
    ? string[]
    : S[K] extends 'string'
      ? string | undefined
      : boolean | undefined;
};

/**
 * Takes the options named in `spec` (`--name value`, `--name=value`, booleans as `--name`) out of
 * `args`; everything else, in order, is `rest`. A `string` option given twice keeps the last value;
 * `strings` collect. Stops at `--`.
 */
export function extractOptions<S extends Record<string, OptionKind>>(
  args: readonly string[],
  spec: S,
  usage = '',
): { own: ExtractedValues<S>; rest: string[] } {
  const own: Record<string, string | string[] | boolean | undefined> = {};
  for (const [name, kind] of Object.entries(spec)) if (kind === 'strings') own[name] = [];
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      rest.push(...args.slice(i));
      break;
    }
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    const name = match?.[1];
    const kind = name === undefined ? undefined : spec[name];
    if (match === null || name === undefined || kind === undefined) {
      rest.push(arg);
      continue;
    }
    if (kind === 'boolean') {
      if (match[2] !== undefined) throw flagWithValue(name, usage);
      own[name] = true;
      continue;
    }
    let value = match[2];
    if (value === undefined) {
      value = args[i + 1];
      if (value === undefined) throw missingValue(name, usage);
      if (value.startsWith('--') && value.length > 2) throw missingValue(name, usage, value);
      i++;
    }
    const previous = own[name];
    if (Array.isArray(previous)) previous.push(value);
    else own[name] = value;
  }
  return { own: own as ExtractedValues<S>, rest };
}
