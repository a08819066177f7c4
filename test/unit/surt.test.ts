/**
 * Python `surt` library conformance (its own test cases, transcribed in test/data/surt-cases.json):
 * the results index's `urlkey` must be the key pywb and the Wayback CDX server compute, so every case
 * gives the upstream answer unless it is listed in DIVERGENCES, where our answer and the reason are
 * written down and asserted. No case is skipped.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  alphaReorderQuery,
  attemptIpFormats,
  canonicalUrl,
  defaultPort,
  hostToSurt,
  massageHost,
  stripPathSessionId,
  stripQuerySessionId,
  surt,
  unescapeRepeatedly,
} from '../../lambdas/core/urls/index.ts';

type Answer = string | number | null;

interface SurtCase {
  /** The upstream function the case calls (`surt`, a canonicalizer, or one of their helpers). */
  function: string;
  input: string;
  expected: Answer;
  /** The upstream test function. */
  source: string;
}

const casesUrl = new URL('../data/surt-cases.json', import.meta.url);
const cases = JSON.parse(readFileSync(casesUrl, 'utf8')) as SurtCase[];

/** Our function for each upstream one; `null` where upstream answers None. */
const FUNCTIONS: Readonly<Record<string, (input: string) => Answer>> = {
  surt,
  'handyurl.parse': (input) => canonicalUrl(input, 'none') ?? null,
  'GoogleURLCanonicalizer.canonicalize': (input) => canonicalUrl(input, 'google') ?? null,
  'IAURLCanonicalizer.canonicalize': (input) => canonicalUrl(input, 'ia') ?? null,
  'DefaultIAURLCanonicalizer.canonicalize': (input) => canonicalUrl(input, 'default') ?? null,
  'GoogleURLCanonicalizer.attemptIPFormats': (input) => attemptIpFormats(input) ?? null,
  'GoogleURLCanonicalizer.unescapeRepeatedly': unescapeRepeatedly,
  'IAURLCanonicalizer.alphaReorderQuery': alphaReorderQuery,
  'IAURLCanonicalizer.massageHost': massageHost,
  'IAURLCanonicalizer.getDefaultPort': defaultPort,
  'URLRegexTransformer.stripPathSessionID': stripPathSessionId,
  'URLRegexTransformer.stripQuerySessionID': stripQuerySessionId,
  'URLRegexTransformer.hostToSURT': hostToSurt,
};

/** Cases where we answer differently on purpose, by `caseName`. None so far. */
const DIVERGENCES: Readonly<Record<string, { ours: Answer; reason: string }>> = {};

function caseName(c: SurtCase): string {
  return `${c.source}: ${c.function}(${JSON.stringify(c.input)})`;
}

describe('surt conformance (internetarchive/surt test cases)', () => {
  test('the data set is the one test/data/README.md describes', () => {
    assert.equal(cases.length, 138);
    assert.equal(cases.filter((c) => c.function === 'surt').length, 17);
    assert.equal(new Set(cases.map(caseName)).size, cases.length, 'case names are unique');
  });

  test('every case names a function we map, and every divergence an existing case', () => {
    for (const c of cases) assert.ok(FUNCTIONS[c.function], `no function for ${c.function}`);
    const names = new Set(cases.map(caseName));
    for (const name of Object.keys(DIVERGENCES)) assert.ok(names.has(name), `${name} is in the data`);
  });

  for (const c of cases) {
    const name = caseName(c);
    const divergence = DIVERGENCES[name];
    test(divergence ? `${name} (diverges: ${divergence.reason})` : name, () => {
      const run = FUNCTIONS[c.function]!;
      assert.equal(run(c.input), divergence ? divergence.ours : c.expected, divergence?.reason);
    });
  }
});

// Behaviour the crawler's own URLs rely on, beyond the upstream cases (expected values worked out
// from the library's code, as pywb would compute them).
describe('surt on normalized crawler URLs', () => {
  test('the trailing slash of a path goes, the root stays', () => {
    assert.equal(surt('https://example.com/docs/'), 'com,example)/docs');
    assert.equal(surt('https://example.com/'), 'com,example)/');
    assert.equal(surt('https://example.com'), 'com,example)/');
  });

  test('percent-encoding is decoded then re-encoded once, lower-cased with the rest', () => {
    // A decoded `%26` splits the argument before sorting: upstream keeps this for compatibility.
    assert.equal(surt('https://example.com/%7Euser/a%2Fb'), 'com,example)/~user/a/b');
    assert.equal(surt('https://example.com/%E2%82%AC?q=%C3%A9'), 'com,example)/%e2%82%ac?q=%c3%a9');
    assert.equal(surt('https://example.com/a%20b?x=a+b%26c'), 'com,example)/a%20b?c&x=a+b');
  });

  test('session ids go, other arguments are sorted by name then value', () => {
    const id = '0123456789ABCDEF0123456789abcdef';
    assert.equal(surt(`https://example.com/a;x?b=2&JSESSIONID=${id}&a=1`), 'com,example)/a;x?a=1&b=2');
    assert.equal(surt('https://example.com/?a-b=1&a=2&a'), 'com,example)/?a&a=2&a-b=1');
  });

  test('IP hosts are reversed; ports kept unless default; IPv6 loses its brackets', () => {
    assert.equal(surt('http://127.0.0.1:4000/a/'), '1,0,0,127:4000)/a');
    assert.equal(surt('https://example.com:443/x'), 'com,example)/x');
    assert.equal(surt('http://example.com:443/x'), 'com,example:443)/x');
    assert.equal(surt('http://[::1]:8080/v6'), '::1:8080)/v6');
  });

  test('where the library raises, the input comes back unchanged', () => {
    assert.equal(surt('http://example.com:99999/'), 'http://example.com:99999/');
    assert.equal(surt('http://example.com:8o/'), 'http://example.com:8o/');
    assert.equal(surt('   '), '   ');
    assert.equal(canonicalUrl('http://example.com:99999/'), undefined);
  });
});
