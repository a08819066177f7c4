// dynalite parses every expression of every request with a generated PEG parser: on the bench site
// (5,043 pages, one core) that was 4.6 s of the crawl's 39 s of CPU, more than DynamoDB's own work.
// The frontier sends a handful of expressions, each with new values every time, so a parse is kept
// per (expression, attribute names, the values' types) and given back with the request's own values.
// What the parse checks and says is unchanged: an expression whose checks read values and not only
// their types (BETWEEN's bounds, attribute_type's type name) is always parsed, and so is one that
// fails (its error is dynalite's own, from a parse of the request itself).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

type AttributeValue = Record<string, unknown>;

/** The `context` dynalite's validations pass to its parsers (validations/index.js). */
interface ParseContext {
  attrNames?: Record<string, string>;
  attrVals?: Record<string, AttributeValue>;
  unusedAttrNames?: Record<string, boolean>;
  unusedAttrVals?: Record<string, boolean>;
  [other: string]: unknown;
}

type Parse = (input: string, options: { context: ParseContext }) => unknown;

interface ParserModule {
  parse: Parse;
}

interface Parsed {
  /** The parse of the first request, its values being the stand-ins. */
  result: unknown;
  /** Each stand-in value (by identity) and the placeholder it stands for. */
  standIns: Map<object, string>;
  usedNames: string[];
  usedValues: string[];
}

/** Distinct (expression, names, types) kept per parser; past it the cache starts again. */
const MAX_ENTRIES = 1_000;
/** Checks that read a value itself, not only its type: never cached. */
const VALUE_DEPENDENT = /between|attribute_type/i;
const CACHED = Symbol.for('serverless-crawler.dynalite-expression-cache');

/**
 * Wraps dynalite's condition, update and projection parsers (the module objects its validations
 * hold) once per process. Call before the first request.
 */
export function cacheDynaliteExpressions(): void {
  const require = createRequire(import.meta.url);
  const db = join(dirname(require.resolve('dynalite')), 'db');
  for (const file of ['conditionParser.js', 'updateParser.js', 'projectionParser.js']) {
    const parser = require(join(db, file)) as ParserModule & { [CACHED]?: true };
    if (parser[CACHED]) continue;
    parser.parse = cachedParse(parser.parse);
    parser[CACHED] = true;
  }
}

export function cachedParse(parse: Parse): Parse {
  const cache = new Map<string, Parsed>();
  return (input, options) => {
    const context = options.context;
    if (VALUE_DEPENDENT.test(input)) return parse(input, options);
    const names = context.attrNames ?? {};
    const values = context.attrVals ?? {};
    const key = JSON.stringify([input, names, typesOf(values)]);
    let parsed = cache.get(key);
    if (!parsed) {
      parsed = parseWithStandIns(parse, input, context, names, values);
      if (!parsed) return parse(input, options);
      if (cache.size >= MAX_ENTRIES) cache.clear();
      cache.set(key, parsed);
    }
    for (const name of parsed.usedNames) delete context.unusedAttrNames?.[name];
    for (const name of parsed.usedValues) delete context.unusedAttrVals?.[name];
    return withValues(parsed.result, parsed.standIns, values);
  };
}

/** A parse whose values are copies, found again by identity; undefined if it fails or errs. */
function parseWithStandIns(
  parse: Parse,
  input: string,
  context: ParseContext,
  names: Record<string, string>,
  values: Record<string, AttributeValue>,
): Parsed | undefined {
  const standIns = new Map<object, string>();
  const standInValues: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(values)) {
    const standIn = { ...value };
    standIns.set(standIn, name);
    standInValues[name] = standIn;
  }
  // Every placeholder unused to start with: what the parse removes is what this expression uses,
  // whatever the request's other expressions use.
  const unusedNames = Object.fromEntries(Object.keys(names).map((name) => [name, true]));
  const unusedValues = Object.fromEntries(Object.keys(values).map((name) => [name, true]));
  let result: unknown;
  try {
    result = parse(input, {
      context: {
        ...context,
        attrVals: standInValues,
        unusedAttrNames: unusedNames,
        unusedAttrVals: unusedValues,
      },
    });
  } catch {
    return undefined;
  }
  if (typeof result === 'string') return undefined;
  return {
    result,
    standIns,
    usedNames: Object.keys(names).filter((name) => !(name in unusedNames)),
    usedValues: Object.keys(values).filter((name) => !(name in unusedValues)),
  };
}

function typesOf(values: Record<string, AttributeValue>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, Object.keys(value).join()]));
}

/** A deep copy of `node` (callers may change what they are given) with each stand-in replaced. */
function withValues(
  node: unknown,
  standIns: Map<object, string>,
  values: Record<string, AttributeValue>,
): unknown {
  if (node === null || typeof node !== 'object') return node;
  const name = standIns.get(node);
  if (name !== undefined) return values[name];
  if (Array.isArray(node)) return node.map((item) => withValues(item, standIns, values));
  if (Object.getPrototypeOf(node) !== Object.prototype && Object.getPrototypeOf(node) !== null) return node;
  const copy: Record<string, unknown> = Object.create(Object.getPrototypeOf(node));
  for (const [key, value] of Object.entries(node)) copy[key] = withValues(value, standIns, values);
  return copy;
}
