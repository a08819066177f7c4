/**
 * EventBridge event patterns, as the local event bus applies a template's rules
 * (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html): a pattern is an
 * object whose leaves are arrays of what a field may be. A literal matches equal values; an object in
 * the array is a content filter: `prefix`, `suffix`, `equals-ignore-case`, `anything-but` (a value,
 * a list, or `{prefix}`), `exists`, `numeric` (`[">", 0, "<=", 5]`). An event field that is an array
 * matches when any element does. Every key of the pattern must match (AND), any value of a leaf (OR).
 *
 * A pattern is compiled once, when the rules are loaded, and a filter this does not know is refused
 * there with one line naming it: the rule would otherwise never (or always) match, silently.
 * Matching costs one pass over the pattern, each leaf against its field's values.
 */

export class EventPatternError extends Error {
  override name = 'EventPatternError';
}

type Literal = string | number | boolean | null;
type Test = (value: unknown) => boolean;
type Compiled = { kind: 'leaf'; tests: Test[] } | { kind: 'object'; fields: Array<[string, Compiled]> };

/** Deeper patterns are refused: EventBridge's own limit on nesting is far below this. */
const MAX_DEPTH = 32;

export interface EventPattern {
  matches(event: unknown): boolean;
}

/** Compiles a pattern (an object, or its JSON text); throws EventPatternError naming what is wrong. */
export function compileEventPattern(pattern: unknown): EventPattern {
  let parsed = pattern;
  if (typeof pattern === 'string') {
    try {
      parsed = JSON.parse(pattern);
    } catch {
      throw new EventPatternError('an event pattern must be a JSON object; this one is not JSON');
    }
  }
  if (!isObject(parsed)) throw new EventPatternError('an event pattern must be a JSON object');
  const compiled = compileObject(parsed, '', 0);
  return { matches: (event) => matchObject(compiled, event) };
}

function compileObject(pattern: Record<string, unknown>, path: string, depth: number): Compiled {
  if (depth > MAX_DEPTH)
    throw new EventPatternError(`event pattern nested deeper than ${MAX_DEPTH} at ${path}`);
  const fields: Array<[string, Compiled]> = [];
  for (const [key, value] of Object.entries(pattern)) {
    const at = path === '' ? key : `${path}.${key}`;
    if (Array.isArray(value))
      fields.push([key, { kind: 'leaf', tests: value.map((item) => compileTest(item, at)) }]);
    else if (isObject(value)) fields.push([key, compileObject(value, at, depth + 1)]);
    else
      throw new EventPatternError(
        `event pattern field ${at}: expected an array of values or an object, got ${JSON.stringify(value)}`,
      );
  }
  return { kind: 'object', fields };
}

function compileTest(item: unknown, at: string): Test {
  if (item === null || typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean') {
    const literal = item as Literal;
    return (value) => value === literal;
  }
  if (!isObject(item))
    throw new EventPatternError(
      `event pattern field ${at}: ${JSON.stringify(item)} is not a value or a filter`,
    );
  const entries = Object.entries(item);
  const [name, argument] = entries[0] ?? [];
  if (entries.length !== 1 || name === undefined)
    throw new EventPatternError(
      `event pattern field ${at}: a filter has exactly one key, got ${JSON.stringify(item)}`,
    );
  switch (name) {
    case 'prefix':
      return stringTest(at, name, argument, (value, text) => value.startsWith(text));
    case 'suffix':
      return stringTest(at, name, argument, (value, text) => value.endsWith(text));
    case 'equals-ignore-case':
      return stringTest(at, name, argument, (value, text) => value.toLowerCase() === text.toLowerCase());
    case 'exists':
      if (typeof argument !== 'boolean')
        throw new EventPatternError(`event pattern field ${at}: exists takes true or false`);
      // Applied to the field as a whole (matchLeaf), not to its values.
      return Object.assign(() => argument, { exists: argument });
    case 'anything-but': {
      if (isObject(argument) && typeof argument.prefix === 'string') {
        const prefix = argument.prefix;
        return (value) => typeof value === 'string' && !value.startsWith(prefix);
      }
      const excluded = Array.isArray(argument) ? argument : [argument];
      if (!excluded.every((v) => v === null || ['string', 'number', 'boolean'].includes(typeof v)))
        throw new EventPatternError(
          `event pattern field ${at}: anything-but takes a value, a list of values or {"prefix": …}`,
        );
      return (value) => value !== undefined && !excluded.includes(value as Literal);
    }
    case 'numeric':
      return numericTest(at, argument);
    default:
      throw new EventPatternError(
        `event pattern field ${at}: filter "${name}" is not supported locally (prefix, suffix, equals-ignore-case, anything-but, exists, numeric are)`,
      );
  }
}

function stringTest(
  at: string,
  name: string,
  argument: unknown,
  test: (value: string, text: string) => boolean,
): Test {
  if (typeof argument !== 'string')
    throw new EventPatternError(`event pattern field ${at}: ${name} takes a string`);
  return (value) => typeof value === 'string' && test(value, argument);
}

const COMPARISONS: Record<string, (a: number, b: number) => boolean> = {
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '=': (a, b) => a === b,
  '>=': (a, b) => a >= b,
  '>': (a, b) => a > b,
};

function numericTest(at: string, argument: unknown): Test {
  if (!Array.isArray(argument) || argument.length === 0 || argument.length % 2 !== 0)
    throw new EventPatternError(`event pattern field ${at}: numeric takes pairs of an operator and a number`);
  const checks: Array<(value: number) => boolean> = [];
  for (let i = 0; i < argument.length; i += 2) {
    const compare = COMPARISONS[String(argument[i])];
    const bound = argument[i + 1];
    if (compare === undefined || typeof bound !== 'number')
      throw new EventPatternError(
        `event pattern field ${at}: numeric takes <, <=, =, >=, > each followed by a number`,
      );
    checks.push((value) => compare(value, bound));
  }
  return (value) => typeof value === 'number' && checks.every((check) => check(value));
}

function matchObject(pattern: Compiled, event: unknown): boolean {
  if (pattern.kind === 'leaf') return false;
  const object = isObject(event) ? event : {};
  for (const [key, sub] of pattern.fields) {
    const value = Object.hasOwn(object, key) ? object[key] : undefined;
    if (sub.kind === 'leaf' ? !matchLeaf(sub.tests, value) : !matchObject(sub, value)) return false;
  }
  return true;
}

function matchLeaf(tests: readonly Test[], value: unknown): boolean {
  const values = Array.isArray(value) ? value : [value];
  for (const test of tests) {
    const exists = (test as Test & { exists?: boolean }).exists;
    if (exists !== undefined) {
      if ((value !== undefined) === exists) return true;
      continue;
    }
    if (value === undefined) continue;
    if (values.some((item) => test(item))) return true;
  }
  return false;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
