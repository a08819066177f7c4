/**
 * google/robotstxt conformance cases (transcribed in test/data/robotstxt-cases.json).
 * Every `rfc: true` case must give the upstream answer. Every `rfc: false` (Google-specific) case
 * runs too: it gives the upstream answer unless it is listed in DIVERGENCES, where our RFC 9309
 * answer and the reason are written down and asserted, so no case is skipped silently.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { isAllowed, parseRobots } from '../../lambdas/core/robots.ts';

interface ConformanceCase {
  name: string;
  robots: string;
  agent: string;
  url: string;
  allowed: boolean;
  rfc: boolean;
  group: string;
  note?: string;
}

const casesUrl = new URL('../data/robotstxt-cases.json', import.meta.url);
const cases = JSON.parse(readFileSync(casesUrl, 'utf8')) as ConformanceCase[];

/** Google-specific cases where this matcher answers differently, on purpose. */
const DIVERGENCES: Readonly<Record<string, { ours: boolean; reason: string }>> = {
  'ID_LineSyntax_Line#3': {
    ours: true,
    reason:
      'A line without a colon ("user-agent FooBot") is not a record under RFC 9309; it is ignored, so no group exists.',
  },
  'GoogleOnly_AcceptUserAgentUpToFirstSpace#2': {
    ours: true,
    reason:
      'isAllowed takes the full User-Agent header and reads its product token ("Foo Bar" -> "foo"), which names the "Foo Bar" group (allow /x/).',
  },
  'ID_Encoding#3': {
    ours: true,
    reason:
      'The URL is normalised as RFC 9309 2.2.2 requires: the raw "ツ" in the URL becomes %E3%83%84, as the rule does, so "Allow: /foo/bar/ツ" matches.',
  },
  'ID_Encoding#5': {
    ours: true,
    reason:
      'The URL is normalised as RFC 9309 2.2.2 requires: the raw "ツ" in the URL becomes %E3%83%84 and matches "Allow: /foo/bar/%E3%83%84".',
  },
  'ID_Encoding#6': {
    ours: true,
    reason:
      'RFC 9309 2.2.2 (figure 4): percent-encoded unreserved characters are decoded, so "/foo/bar/%62%61%7A" is "/foo/bar/baz".',
  },
  'GoogleOnly_IndexHTMLisDirectory#1': {
    ours: false,
    reason:
      'Google reads "Allow: .../index.html" as also allowing ".../"; RFC 9309 has no such rule, so "Disallow: /" wins.',
  },
  'GoogleOnly_LineTooLong#2': {
    ours: true,
    reason:
      'Google cuts lines after 16664 bytes; RFC 9309 does not, so the full disallow pattern (ending in /qux) does not match .../fux.',
  },
  'GoogleOnly_LineTooLong#5': {
    ours: false,
    reason:
      'Google cuts lines after 16664 bytes; RFC 9309 does not, so the full allow pattern (ending in /qux) does not match .../fux and "Disallow: /" applies.',
  },
};

describe('robots.txt conformance (google/robotstxt cases)', () => {
  test('the data set is the one the README describes', () => {
    assert.equal(cases.length, 145);
    assert.equal(cases.filter((c) => c.rfc).length, 127);
    assert.equal(cases.filter((c) => !c.rfc).length, 18);
  });

  test('every divergence names an existing Google-specific case and contradicts its upstream answer', () => {
    const byName = new Map(cases.map((c) => [c.name, c]));
    for (const [name, divergence] of Object.entries(DIVERGENCES)) {
      const c = byName.get(name);
      assert.ok(c, `${name} is in the data`);
      assert.equal(c.rfc, false, `${name} is Google-specific, not an RFC case`);
      assert.notEqual(divergence.ours, c.allowed, `${name}: a divergence must differ from upstream`);
    }
  });

  describe('RFC 9309 cases (rfc: true) give the upstream answer', () => {
    for (const c of cases.filter((x) => x.rfc)) {
      test(c.name, () => {
        assert.equal(isAllowed(parseRobots(c.robots), c.agent, c.url), c.allowed, c.note);
      });
    }
  });

  describe('Google-specific cases (rfc: false): upstream answer, or our documented one', () => {
    for (const c of cases.filter((x) => !x.rfc)) {
      const divergence = DIVERGENCES[c.name];
      const title = divergence ? `${c.name} (diverges: ${divergence.reason})` : c.name;
      test(title, () => {
        const expected = divergence ? divergence.ours : c.allowed;
        assert.equal(
          isAllowed(parseRobots(c.robots), c.agent, c.url),
          expected,
          divergence?.reason ?? c.note,
        );
      });
    }
  });

  test('the same answers when the robots.txt arrives as bytes', () => {
    const encoder = new TextEncoder();
    for (const c of cases) {
      const expected = DIVERGENCES[c.name]?.ours ?? c.allowed;
      assert.equal(isAllowed(parseRobots(encoder.encode(c.robots)), c.agent, c.url), expected, c.name);
    }
  });
});
