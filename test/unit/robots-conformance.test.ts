/**
 * Conformance cases transcribed from Google's robots.txt test suites:
 * - test/data/robotstxt-cases.json: google/robotstxt `robots_test.cc`;
 * - test/data/robotstxt-spec-cases.json: google/robotstxt-spec-test, the language-neutral compliance
 *   cases for BOMs and non-ASCII paths.
 * Every `rfc: true` case must give the upstream answer. Every `rfc: false` (Google-specific) case
 * runs too: it gives the upstream answer unless it is listed in its file's divergences, where our
 * RFC 9309 answer and the reason are written down and asserted, so no case is skipped silently.
 * Each case runs from text and from bytes (the upstream bytes where the text is not UTF-8).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { isAllowed, parseRobots } from '../../lambdas/core/robots/index.ts';

interface ConformanceCase {
  name: string;
  /** The robots.txt as text; where robots_base64 is set, the UTF-8 decoding of those bytes. */
  robots: string;
  /** The robots.txt bytes, only where they are not valid UTF-8 (a partial BOM). */
  robots_base64?: string;
  agent: string;
  url: string;
  allowed: boolean;
  rfc: boolean;
  group: string;
  note?: string;
}

interface Divergence {
  ours: boolean;
  reason: string;
}

function readCases(file: string): ConformanceCase[] {
  return JSON.parse(readFileSync(new URL(`../data/${file}`, import.meta.url), 'utf8')) as ConformanceCase[];
}

function robotsBytes(c: ConformanceCase): Uint8Array {
  return c.robots_base64 === undefined
    ? new TextEncoder().encode(c.robots)
    : new Uint8Array(Buffer.from(c.robots_base64, 'base64'));
}

// Both suites pass the URL unencoded where Google's matcher leaves encoding to its caller; RFC 9309
// 2.2.2 has the matcher encode both sides, so these cases get the other answer here.
const RAW_URL_IS_ENCODED: Divergence = {
  ours: true,
  reason:
    'The URL is normalised as RFC 9309 2.2.2 requires: the raw "ツ" in the URL becomes %E3%83%84, as the rule does, so "Allow: /foo/bar/ツ" matches.',
};
const RAW_URL_MATCHES_ENCODED_RULE: Divergence = {
  ours: true,
  reason:
    'The URL is normalised as RFC 9309 2.2.2 requires: the raw "ツ" in the URL becomes %E3%83%84 and matches "Allow: /foo/bar/%E3%83%84".',
};
const UNRESERVED_DECODED: Divergence = {
  ours: true,
  reason:
    'RFC 9309 2.2.2 (figure 4): percent-encoded unreserved characters are decoded, so "/foo/bar/%62%61%7A" is "/foo/bar/baz".',
};

interface Suite {
  title: string;
  cases: ConformanceCase[];
  counts: { total: number; rfc: number };
  /** Google-specific cases where this matcher answers differently, on purpose. */
  divergences: Readonly<Record<string, Divergence>>;
}

const SUITES: readonly Suite[] = [
  {
    title: 'google/robotstxt robots_test.cc',
    cases: readCases('robotstxt-cases.json'),
    counts: { total: 145, rfc: 127 },
    divergences: {
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
      'ID_Encoding#3': RAW_URL_IS_ENCODED,
      'ID_Encoding#5': RAW_URL_MATCHES_ENCODED_RULE,
      'ID_Encoding#6': UNRESERVED_DECODED,
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
    },
  },
  {
    title: 'google/robotstxt-spec-test compliance cases',
    cases: readCases('robotstxt-spec-cases.json'),
    counts: { total: 12, rfc: 6 },
    divergences: {
      'non-ascii-paths#3': RAW_URL_IS_ENCODED,
      'non-ascii-paths#5': RAW_URL_MATCHES_ENCODED_RULE,
      'non-ascii-paths#6': UNRESERVED_DECODED,
    },
  },
];

for (const { title, cases, counts, divergences } of SUITES) {
  describe(`robots.txt conformance (${title})`, () => {
    test('the data set is the one the README describes', () => {
      assert.equal(cases.length, counts.total);
      assert.equal(cases.filter((c) => c.rfc).length, counts.rfc);
      assert.equal(cases.filter((c) => !c.rfc).length, counts.total - counts.rfc);
      assert.equal(new Set(cases.map((c) => c.name)).size, cases.length, 'names are unique');
    });

    test('where bytes are given, the text is their UTF-8 decoding', () => {
      for (const c of cases.filter((x) => x.robots_base64 !== undefined)) {
        assert.equal(new TextDecoder('utf-8').decode(robotsBytes(c)), c.robots, c.name);
      }
    });

    test('every divergence names an existing Google-specific case and contradicts its upstream answer', () => {
      const byName = new Map(cases.map((c) => [c.name, c]));
      for (const [name, divergence] of Object.entries(divergences)) {
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
        const divergence = divergences[c.name];
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
      for (const c of cases) {
        const expected = divergences[c.name]?.ours ?? c.allowed;
        assert.equal(isAllowed(parseRobots(robotsBytes(c)), c.agent, c.url), expected, c.name);
      }
    });
  });
}
