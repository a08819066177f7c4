// The cached parse must say exactly what dynalite's own parse says, for the request it is given: the
// same tree with that request's values, the same errors, the same placeholders marked used.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { cachedParse } from '../../local/dynalite-expression-cache.ts';

type Parse = Parameters<typeof cachedParse>[0];
const require = createRequire(import.meta.url);
const db = join(dirname(require.resolve('dynalite')), 'db');
// The originals, loaded apart from the module objects the server wraps.
const load = (file: string): Parse => {
  const path = join(db, file);
  const cached = require.cache[path];
  delete require.cache[path];
  const parser = require(path) as { parse: Parse };
  if (cached) require.cache[path] = cached;
  else delete require.cache[path];
  return parser.parse;
};
const condition = load('conditionParser.js');
const update = load('updateParser.js');

// dynalite's own list is not exported; both parses get the same one.
const RESERVED = new Set(['STATUS', 'NAME', 'SIZE']);
const reserved = (name: string) => RESERVED.has(name.toUpperCase());

interface Request {
  expression: string;
  names?: Record<string, string>;
  values?: Record<string, Record<string, unknown>>;
}

function context(request: Request) {
  return {
    attrNames: request.names,
    attrVals: request.values,
    unusedAttrNames: Object.fromEntries(Object.keys(request.names ?? {}).map((n) => [n, true])),
    unusedAttrVals: Object.fromEntries(Object.keys(request.values ?? {}).map((n) => [n, true])),
    isReserved: reserved,
    compare: (op: string, a: { N?: string }, b: { N?: string }) => op === 'GT' && Number(a.N) > Number(b.N),
  };
}

/** What a parse says: its result or its error, and which placeholders it left unused. */
function outcome(parse: Parse, request: Request) {
  const ctx = context(request);
  let said: unknown;
  try {
    said = parse(request.expression, { context: ctx });
  } catch (error) {
    said = { threw: (error as Error).message };
  }
  return {
    said: JSON.parse(JSON.stringify(said)),
    unusedNames: ctx.unusedAttrNames,
    unusedValues: ctx.unusedAttrVals,
  };
}

function assertSame(parse: Parse, cached: Parse, request: Request) {
  assert.deepEqual(outcome(cached, request), outcome(parse, request), request.expression);
}

const ADMIT = {
  expression:
    'attribute_not_exists(pk) OR ((st = :new OR st = :held) AND parent = :me AND attribute_not_exists(att))',
  values: { ':new': { S: 'new' }, ':held': { S: 'held' }, ':me': { S: 'http://a.test/1' } },
};

describe('dynalite expression cache', () => {
  it('gives each request its own values on a cached expression', () => {
    const cached = cachedParse(condition);
    for (const me of ['http://a.test/1', 'http://a.test/2', 'http://b.test/x']) {
      const request = { ...ADMIT, values: { ...ADMIT.values, ':me': { S: me } } };
      assertSame(condition, cached, request);
      const tree = JSON.stringify(cached(request.expression, { context: context(request) }));
      assert.ok(tree.includes(me), `the tree carries ${me}`);
    }
  });

  it('hands out a copy each time, so a caller that changes its tree changes nothing cached', () => {
    const cached = cachedParse(condition);
    const first = cached(ADMIT.expression, { context: context(ADMIT) }) as Record<string, unknown>;
    first.expression = 'changed';
    assertSame(condition, cached, ADMIT);
  });

  it('says what dynalite says about a value of another type than the cached parse had', () => {
    const cached = cachedParse(update);
    const expression = 'SET kids = list_append(kids, :more) ADD queued :n';
    assertSame(update, cached, { expression, values: { ':more': { L: [{ S: 'x' }] }, ':n': { N: '1' } } });
    assertSame(update, cached, { expression, values: { ':more': { S: 'not a list' }, ':n': { N: '1' } } });
    assertSame(update, cached, { expression, values: { ':more': { L: [] }, ':n': { S: 'one' } } });
  });

  it('says what dynalite says about undefined, unused and reserved names', () => {
    const cached = cachedParse(condition);
    const base: Request = { expression: '#s = :v', names: { '#s': 'st' }, values: { ':v': { S: 'done' } } };
    const requests: Request[] = [
      base,
      { ...base, names: {} },
      { ...base, names: { '#s': 'st', '#extra': 'x' } },
      { ...base, values: { ':v': { S: 'done' }, ':extra': { S: 'x' } } },
      { expression: 'status = :v', values: { ':v': { S: 'done' } } },
      { expression: 'st = = :v', values: { ':v': { S: 'done' } } },
      { expression: 'nosuchfunction(st)' },
      base,
    ];
    for (const request of requests) {
      assertSame(condition, cached, request);
      assertSame(condition, cached, request);
    }
  });

  it('parses afresh what reads values and not only their types', () => {
    const cached = cachedParse(condition);
    const expression = 'n BETWEEN :lo AND :hi';
    assertSame(condition, cached, { expression, values: { ':lo': { N: '1' }, ':hi': { N: '5' } } });
    assertSame(condition, cached, { expression, values: { ':lo': { N: '9' }, ':hi': { N: '5' } } });
    const typed = 'attribute_type(x, :t)';
    assertSame(condition, cached, { expression: typed, values: { ':t': { S: 'S' } } });
    assertSame(condition, cached, { expression: typed, values: { ':t': { S: 'nonsense' } } });
  });

  it('marks used only what each expression uses, whatever came before it in the request', () => {
    const cached = cachedParse(condition);
    const values = { ':a': { S: 'a' }, ':b': { S: 'b' } };
    assertSame(condition, cached, { expression: 'x = :a', values });
    assertSame(condition, cached, { expression: 'x = :b', values });
    assertSame(condition, cached, { expression: 'x = :a', values });
  });

  it('gives a long expression (200 terms) the values of each request', () => {
    const cached = cachedParse(condition);
    const values = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`:v${i}`, { S: String(i) }]));
    const expression = Array.from({ length: 200 }, (_, i) => `x = :v${i}`).join(' OR ');
    assertSame(condition, cached, { expression, values });
    assertSame(condition, cached, { expression, values: { ...values, ':v0': { S: 'other' } } });
  });
});
