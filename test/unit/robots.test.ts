import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ALLOW_ALL,
  canonicalizePath,
  crawlDelaySeconds,
  DISALLOW_ALL,
  isAllowed,
  parseRobots,
  productToken,
  type RobotsPolicy,
  sitemaps,
} from '../../lambdas/core/robots/index.ts';

const UA = 'FooBot/2.1 (+https://example.com/bot)';

function allowed(robots: string | RobotsPolicy, agent: string, path: string): boolean {
  const policy = typeof robots === 'string' ? parseRobots(robots) : robots;
  return isAllowed(policy, agent, `https://www.example.com${path}`);
}

describe('RFC 9309 section 5 examples', () => {
  // Section 5.1, verbatim (including the trailing "EOF" line, which has no colon and is ignored).
  const simple = [
    'User-Agent: *',
    'Disallow: *.gif$',
    'Disallow: /example/',
    'Allow: /publications/',
    '',
    'User-Agent: foobot',
    'Disallow:/',
    'Allow:/example/page.html',
    'Allow:/example/allowed.gif',
    '',
    'User-Agent: barbot',
    'User-Agent: bazbot',
    'Disallow: /example/page.html',
    '',
    'User-Agent: quxbot',
    '',
    'EOF',
  ].join('\n');
  const policy = parseRobots(simple);

  test('*: crawlers without a group of their own', () => {
    assert.equal(allowed(policy, 'otherbot', '/publications/'), true);
    assert.equal(
      allowed(policy, 'otherbot', '/publications/logo.gif'),
      true,
      'Allow /publications/ is longer',
    );
    assert.equal(allowed(policy, 'otherbot', '/example/page.html'), false);
    assert.equal(allowed(policy, 'otherbot', '/images/cat.gif'), false, '* matches the leading slash too');
    assert.equal(
      allowed(policy, 'otherbot', '/images/cat.gif?size=2'),
      true,
      '$ anchors at the end of the query',
    );
    assert.equal(allowed(policy, 'otherbot', '/about'), true);
  });

  test('foobot: only two URL prefixes', () => {
    assert.equal(allowed(policy, 'foobot', '/example/page.html'), true);
    assert.equal(allowed(policy, 'foobot', '/example/allowed.gif'), true);
    assert.equal(allowed(policy, 'foobot', '/'), false);
    assert.equal(allowed(policy, 'foobot', '/publications/'), false, 'the * group does not apply to foobot');
    assert.equal(allowed(policy, 'FooBot/1.0 (+http://x)', '/example/other.html'), false);
  });

  test('barbot and bazbot share one group', () => {
    for (const bot of ['barbot', 'bazbot', 'BazBot/3']) {
      assert.equal(allowed(policy, bot, '/example/page.html'), false, bot);
      assert.equal(allowed(policy, bot, '/example/other.gif'), true, `${bot} is not governed by *`);
    }
  });

  test('quxbot: an empty group at the end allows everything', () => {
    assert.equal(allowed(policy, 'quxbot', '/example/page.html'), true);
    assert.equal(allowed(policy, 'quxbot', '/images/cat.gif'), true);
  });

  test('5.2 longest match: the longest rule is used', () => {
    const longest = 'User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n';
    assert.equal(allowed(longest, 'foobot', '/example/page/disallowed.gif'), false);
    assert.equal(allowed(longest, 'foobot', '/example/page/'), true);
    assert.equal(allowed(longest, 'foobot', '/example/page/other.gif'), true);
  });

  test('2.2.1: groups naming the same crawler are combined', () => {
    const robots =
      'user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n';
    for (const path of ['/foo', '/bar', '/baz'])
      assert.equal(allowed(robots, 'examplebot', path), false, path);
    assert.equal(allowed(robots, 'examplebot', '/qux'), true);
  });

  test('the * groups are combined when no group names the crawler; no group at all allows all', () => {
    const robots =
      'User-agent: *\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /b\n';
    assert.equal(allowed(robots, UA, '/a'), false);
    assert.equal(allowed(robots, UA, '/b'), false);
    assert.equal(allowed(robots, UA, '/c'), true);
    assert.equal(allowed('User-agent: other\nDisallow: /\n', UA, '/a'), true);
  });
});

describe('parsing tolerance', () => {
  test('BOM at the start, as text or bytes', () => {
    const text = '\uFEFFUser-agent: *\nDisallow: /private\n';
    assert.equal(allowed(text, UA, '/private'), false);
    const bytes = new Uint8Array([
      0xef,
      0xbb,
      0xbf,
      ...new TextEncoder().encode('User-agent: *\nDisallow: /private\n'),
    ]);
    assert.equal(isAllowed(parseRobots(bytes), UA, 'https://h/private'), false);
  });

  test('CR, LF and CRLF line ends, mixed', () => {
    const robots = 'User-agent: foobot\rDisallow: /a\r\nDisallow: /b\nDisallow: /c\r';
    for (const path of ['/a', '/b', '/c']) assert.equal(allowed(robots, UA, path), false, path);
    assert.equal(allowed(robots, UA, '/d'), true);
  });

  test('comments, whitespace around keys and values, case-insensitive keys', () => {
    const robots = '# header\n  USER-agent :\tFooBot   # me\n\tdisALLOW  :  /x # not /\nAllow:/x/y\n';
    assert.equal(allowed(robots, UA, '/x/z'), false);
    assert.equal(allowed(robots, UA, '/x/y'), true);
    assert.equal(allowed(robots, UA, '/'), true);
  });

  test('values are case-sensitive, agents are not', () => {
    const robots = 'User-agent: FOOBOT\nDisallow: /Private\n';
    assert.equal(allowed(robots, 'foobot', '/Private'), false);
    assert.equal(allowed(robots, 'foobot', '/private'), true);
  });

  test('misspelt keys, lines without a colon and unknown keys are ignored', () => {
    const robots = 'User-agent: *\nDisalow: /a\nDisallow /b\nuseragent: x\nNoindex: /c\nDisallow: /d\n';
    assert.equal(allowed(robots, UA, '/a'), true);
    assert.equal(allowed(robots, UA, '/b'), true);
    assert.equal(allowed(robots, UA, '/c'), true);
    assert.equal(allowed(robots, UA, '/d'), false, 'the group goes on after ignored lines');
  });

  test('rules before any user-agent line belong to no group', () => {
    const robots = 'Disallow: /\nCrawl-delay: 9\nUser-agent: *\nDisallow: /x\n';
    assert.equal(allowed(robots, UA, '/y'), true);
    assert.equal(allowed(robots, UA, '/x'), false);
    assert.equal(crawlDelaySeconds(parseRobots(robots), UA), undefined);
  });

  test('an empty Disallow disallows nothing', () => {
    assert.equal(allowed('User-agent: *\nDisallow:\n', UA, '/anything'), true);
    assert.equal(allowed('User-agent: *\nDisallow:   # nothing\n', UA, '/anything'), true);
  });

  test('a user-agent value is read as its product token; "*" followed by text is still global', () => {
    assert.equal(allowed('User-agent: FooBot/1.0\nDisallow: /\n', UA, '/x'), false);
    assert.equal(allowed('User-agent: * # everyone\nDisallow: /\n', UA, '/x'), false);
    assert.equal(
      allowed('User-agent: foobots\nDisallow: /\n', UA, '/x'),
      true,
      'tokens match whole, not by prefix',
    );
  });

  test('blank lines, sitemap and unknown lines do not split user-agent lines; rule lines do', () => {
    const shared =
      'User-agent: a\n\nSitemap: https://h/s.xml\nX-Unknown: 1\nUser-agent: foobot\nDisallow: /\n';
    assert.equal(allowed(shared, UA, '/x'), false);
    assert.equal(allowed(shared, 'a', '/x'), false);
    const split = 'User-agent: a\nDisallow: /a\nUser-agent: foobot\nDisallow: /f\n';
    assert.equal(allowed(split, UA, '/a'), true);
    assert.equal(allowed(split, UA, '/f'), false);
  });

  test('invalid UTF-8 bytes are replaced and the rest still parses', () => {
    const enc = new TextEncoder();
    const bytes = new Uint8Array([
      ...enc.encode('User-agent: *\nDisallow: /a'),
      0xff,
      0xfe,
      ...enc.encode('\nDisallow: /b\n'),
    ]);
    const policy = parseRobots(bytes);
    assert.equal(isAllowed(policy, UA, 'https://h/b'), false);
    assert.equal(isAllowed(policy, UA, 'https://h/a'), true, '/a\uFFFD\uFFFD is not /a');
    assert.equal(isAllowed(policy, UA, 'https://h/a%EF%BF%BD%EF%BF%BD'), false);
  });

  test('parseRobots never throws on garbage', () => {
    const garbage = new Uint8Array(4096).map((_, i) => (i * 7919) % 256);
    assert.doesNotThrow(() => parseRobots(garbage));
    assert.doesNotThrow(() => parseRobots(':::\n:\n#\n\u0000: \u0000\nuser-agent:\nallow:*$\n'));
  });
});

describe('UTF-8 byte order mark', () => {
  const enc = new TextEncoder();
  const BOM_BYTES = [0xef, 0xbb, 0xbf];
  const FILE = 'User-agent: foobot\nDisallow: /private\n';

  test('a BOM before the first line leaves that line a record: text, bytes, long text, cut bytes', () => {
    assert.equal(allowed(`\uFEFF${FILE}`, UA, '/private'), false, 'short text');
    assert.equal(
      isAllowed(parseRobots(new Uint8Array([...BOM_BYTES, ...enc.encode(FILE)])), UA, '/private'),
      false,
    );
    // Text long enough to be counted in UTF-8 bytes goes through the byte path.
    const long = `\uFEFF${FILE}${'#'.repeat(100)}\n`;
    const cut = parseRobots(long, { maxBytes: 60 });
    assert.equal(cut.truncated, true);
    assert.equal(isAllowed(cut, UA, '/private'), false, 'long text, tail cut');
    const cutBytes = parseRobots(new Uint8Array([...BOM_BYTES, ...enc.encode(`${FILE}Disallow: /late\n`)]), {
      maxBytes: 3 + FILE.length + 5,
    });
    assert.equal(isAllowed(cutBytes, UA, '/private'), false, 'bytes, last line cut');
    assert.equal(isAllowed(cutBytes, UA, '/late'), true);
    assert.deepEqual(cutBytes.groups[0]?.agents, ['foobot'], 'the BOM is not part of the agent line');
  });

  test('only a whole BOM at the very start is one (google/robotstxt-spec-test BOM-characters)', () => {
    const rest = [...enc.encode(FILE)];
    for (const prefix of [[0xef, 0xbb], [0xef], [0xef, 0x11, 0xbf], [...BOM_BYTES, ...BOM_BYTES]]) {
      // Invalid UTF-8 (or a second BOM) makes the first line garbage: no group names foobot.
      assert.equal(
        isAllowed(parseRobots(new Uint8Array([...prefix, ...rest])), UA, '/private'),
        true,
        `${prefix}`,
      );
    }
    assert.equal(allowed(`\uFEFF\uFEFF${FILE}`, UA, '/private'), true, 'a second BOM is text');
    assert.equal(allowed(`User-agent: foobot\n\uFEFFDisallow: /private\n`, UA, '/private'), true, 'mid-file');
  });
});

describe('max bytes', () => {
  const filler = (bytes: number) => `# ${'x'.repeat(bytes - 3)}\n`;

  test('a rule at 400 KiB is honoured, a rule after 600 KiB is ignored (default 512 KiB)', () => {
    const robots = `User-agent: *\n${filler(400 * 1024)}Disallow: /early\n${filler(200 * 1024)}Disallow: /late\n`;
    const policy = parseRobots(robots);
    assert.equal(isAllowed(policy, UA, 'https://h/early'), false);
    assert.equal(isAllowed(policy, UA, 'https://h/late'), true);
    assert.equal(policy.truncated, true);
    const fromBytes = parseRobots(new TextEncoder().encode(robots));
    assert.equal(isAllowed(fromBytes, UA, 'https://h/early'), false);
    assert.equal(isAllowed(fromBytes, UA, 'https://h/late'), true);
  });

  test('a file within the limit is not truncated', () => {
    const robots = `User-agent: *\n${filler(500 * 1024)}Disallow: /end\n`;
    const policy = parseRobots(robots);
    assert.equal(policy.truncated, false);
    assert.equal(isAllowed(policy, UA, 'https://h/end'), false);
  });

  test('the limit counts UTF-8 bytes, and the line cut by it is dropped, not shortened', () => {
    // "é" is two UTF-8 bytes, so the limit (in bytes) falls inside the disallow line, after "/priv".
    const robots = `User-agent: *\n#${'é'.repeat(40)}\nDisallow: /private-docs/secret\n`;
    const maxBytes = new TextEncoder().encode(robots.slice(0, robots.indexOf('/priv') + 5)).length;
    assert.ok(maxBytes > robots.length, 'counted in UTF-16 units, the limit would not cut the file at all');
    const policy = parseRobots(robots, { maxBytes });
    assert.equal(policy.truncated, true);
    assert.equal(isAllowed(policy, UA, 'https://h/private'), true, 'no "Disallow: /priv"');
    assert.deepEqual(policy.groups[0]?.rules, []);
    const whole = parseRobots(robots, { maxBytes: maxBytes + 100 });
    assert.equal(isAllowed(whole, UA, 'https://h/private-docs/secret'), false);
  });
});

describe('crawl-delay', () => {
  const delay = (robots: string, agent = UA) => crawlDelaySeconds(parseRobots(robots), agent);

  test('integer and fractional values', () => {
    assert.equal(delay('User-agent: *\nCrawl-delay: 10\n'), 10);
    assert.equal(delay('User-agent: *\nCrawl-delay: 2.5\n'), 2.5);
    assert.equal(delay('User-agent: *\nCrawl-delay: .5\n'), 0.5);
    assert.equal(delay('User-agent: *\ncrawl-DELAY :  0 \n'), 0);
  });

  test('invalid values are ignored', () => {
    for (const value of ['abc', '-1', '1e3', '10s', '', '0x10', 'Infinity', '1,5', '1.2.3']) {
      assert.equal(delay(`User-agent: *\nCrawl-delay: ${value}\n`), undefined, value);
    }
    assert.equal(delay('User-agent: *\nCrawl-delay: soon\nCrawl-delay: 3\n'), 3);
  });

  test('per group: the group that applies to the crawler, no fallback to *', () => {
    const robots =
      'User-agent: *\nCrawl-delay: 1\n\nUser-agent: foobot\nCrawl-delay: 7\n\nUser-agent: barbot\nDisallow: /x\n';
    assert.equal(delay(robots, UA), 7);
    assert.equal(delay(robots, 'other/1.0'), 1);
    assert.equal(delay(robots, 'barbot'), undefined, 'barbot has its own group, without a delay');
    assert.equal(delay('User-agent: other\nCrawl-delay: 5\n', UA), undefined);
  });

  test('several values in the applying groups: the largest wins', () => {
    const robots =
      'User-agent: foobot\nCrawl-delay: 2\nCrawl-delay: 4\n\nUser-agent: foobot\nCrawl-delay: 3\n';
    assert.equal(delay(robots), 4);
  });

  test('a crawl-delay line ends the list of user-agents, like a rule', () => {
    const robots = 'User-agent: *\nCrawl-delay: 10\nUser-agent: foobot\nDisallow: /private\n';
    assert.equal(delay(robots, UA), undefined);
    assert.equal(delay(robots, 'other'), 10);
    assert.equal(allowed(robots, 'other', '/private'), true);
  });
});

describe('sitemaps', () => {
  test('collected from any position, in order, without duplicates; they do not end groups', () => {
    const robots = [
      'Sitemap: https://h/first.xml',
      'User-agent: foobot',
      'sitemap:https://h/second.xml # comment',
      'User-agent: barbot',
      'Disallow: /x',
      'SITEMAP : https://h/first.xml',
      'Sitemap:',
      'User-agent: *',
      'Disallow: /',
      'Sitemap: https://h/third.xml',
    ].join('\n');
    const policy = parseRobots(robots);
    assert.deepEqual(sitemaps(policy), [
      'https://h/first.xml',
      'https://h/second.xml',
      'https://h/third.xml',
    ]);
    assert.equal(allowed(policy, UA, '/x'), false, 'foobot and barbot share the group');
    assert.equal(allowed(policy, UA, '/y'), true);
  });

  test('none when there are none; the returned array is a copy', () => {
    assert.deepEqual(sitemaps(ALLOW_ALL), []);
    const policy = parseRobots('Sitemap: https://h/s.xml\n');
    sitemaps(policy).push('https://evil/');
    assert.deepEqual(sitemaps(policy), ['https://h/s.xml']);
  });
});

describe('patterns: * and $', () => {
  const rules = (r: string) => `User-agent: *\nDisallow: /\n${r}\n`;

  test('* matches any run of characters, including none and slashes', () => {
    const robots = rules('Allow: /fish*.php');
    assert.equal(allowed(robots, UA, '/fish.php'), true);
    assert.equal(allowed(robots, UA, '/fishheads/catfish.php?x=1'), true);
    assert.equal(allowed(robots, UA, '/Fish.PHP'), false);
    assert.equal(allowed(rules('Allow: /a/**/b'), UA, '/a/x/y/b'), true, 'consecutive * act as one');
    assert.equal(allowed(rules('Allow: *'), UA, '/anything'), true);
  });

  test('$ anchors at the end of path + query, and only as the last character', () => {
    const robots = rules('Allow: /*.php$');
    assert.equal(allowed(robots, UA, '/a/b.php'), true);
    assert.equal(allowed(robots, UA, '/a/b.php?x=1'), false);
    assert.equal(allowed(robots, UA, '/a/b.php5'), false);
    assert.equal(allowed(rules('Allow: /$'), UA, '/'), true);
    assert.equal(allowed(rules('Allow: /$'), UA, '/page'), false);
    const literal = rules('Allow: /a$b');
    assert.equal(allowed(literal, UA, '/a$b/c'), true, 'a $ inside the pattern is a literal $');
    assert.equal(allowed(literal, UA, '/ab'), false);
  });

  test('an anchored pattern with wildcards needs the last piece at the very end', () => {
    const robots = rules('Allow: /a*b*c$');
    assert.equal(allowed(robots, UA, '/abc'), true);
    assert.equal(allowed(robots, UA, '/a-b-c-b-c'), true);
    assert.equal(allowed(robots, UA, '/a-c-b'), false);
    assert.equal(allowed(robots, UA, '/abcx'), false);
    assert.equal(allowed(rules('Allow: /ab*b$'), UA, '/ab'), false, 'pieces may not overlap');
  });

  test('percent-encoded * and $ in a pattern match them literally (RFC 9309 figure 6)', () => {
    assert.equal(
      allowed('User-agent: *\nDisallow: /path/file-with-a-%2A.html\n', UA, '/path/file-with-a-*.html'),
      false,
    );
    assert.equal(
      allowed('User-agent: *\nDisallow: /path/file-with-a-%2A.html\n', UA, '/path/file-with-a-x.html'),
      true,
    );
    assert.equal(allowed('User-agent: *\nDisallow: /path/foo-%24\n', UA, '/path/foo-$'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /path/foo-%24\n', UA, '/path/foo-'), true);
  });

  test('the longest pattern wins, counting * and $; allow wins a tie', () => {
    assert.equal(allowed('User-agent: *\nAllow: /page\nDisallow: /*.html\n', UA, '/page.html'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /folder\nAllow: /folder\n', UA, '/folder/x'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /abc$\nAllow: /abc\n', UA, '/abc'), false, '$ counts');
  });

  test('matching does not blow up on pathological patterns', () => {
    const robots = `User-agent: *\nDisallow: /${'*a'.repeat(2000)}b\n`;
    const policy = parseRobots(robots);
    const started = performance.now();
    assert.equal(isAllowed(policy, UA, `https://h/${'a'.repeat(50_000)}`), true);
    assert.ok(performance.now() - started < 1000);
  });
});

describe('percent-encoding normalisation (RFC 9309 2.2.2)', () => {
  test('figure 4 rows, both ways', () => {
    assert.equal(allowed('User-agent: *\nDisallow: /foo/bar/ツ\n', UA, '/foo/bar/%E3%83%84'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /foo/bar/%E3%83%84\n', UA, '/foo/bar/ツ'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /foo/bar/%e3%83%84\n', UA, '/foo/bar/%E3%83%84'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /foo/bar/%62%61%7A\n', UA, '/foo/bar/baz'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /foo/bar/baz\n', UA, '/foo/bar/%62%61%7a'), false);
    assert.equal(
      allowed(
        'User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar\n',
        UA,
        '/foo/bar?baz=https%3A%2F%2Ffoo.bar',
      ),
      false,
    );
    assert.equal(
      allowed(
        'User-agent: *\nDisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n',
        UA,
        '/foo/bar?baz=https://foo.bar',
      ),
      false,
    );
  });

  test('reserved delimiters stay distinct from their encodings', () => {
    assert.equal(allowed('User-agent: *\nDisallow: /a%2Fb\n', UA, '/a/b'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /a/b\n', UA, '/a%2Fb'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /q?x=1%26y=2\n', UA, '/q?x=1&y=2'), true);
  });

  test('characters a URL cannot hold raw equal their encoding', () => {
    assert.equal(allowed('User-agent: *\nDisallow: /a b\n', UA, '/a%20b'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /a{b}|c\n', UA, '/a{b}|c'), false);
    assert.equal(allowed("User-agent: *\nDisallow: /q?a='x'\n", UA, "/q?a='x'"), false);
  });

  test('non-ASCII characters (2, 3 and 4 UTF-8 bytes) equal their encoding, in the pattern or the URL', () => {
    const rows: Array<[pattern: string, path: string]> = [
      ['/café', '/caf%C3%A9'],
      ['/caf%C3%A9', '/café'],
      ['/ツ/', '/%E3%83%84/x'],
      ['/%E3%83%84/', '/ツ/x'],
      ['/😀', '/%F0%9F%98%80'],
      ['/%F0%9F%98%80', '/😀'],
      ['/s?q=ツ', '/s?q=%E3%83%84'],
      ['/s?q=%E3%83%84', '/s?q=ツ'],
    ];
    for (const [pattern, path] of rows) {
      assert.equal(
        allowed(`User-agent: *\nDisallow: ${pattern}\n`, UA, path),
        false,
        `${pattern} vs ${path}`,
      );
    }
    assert.equal(allowed('User-agent: *\nDisallow: /ツ\n', UA, '/%E3%83%85'), true, 'another character');
    assert.equal(allowed('User-agent: *\nDisallow: /cafe\n', UA, '/café'), true, 'é is not e');
  });

  test('hex digits compare case-insensitively, on either side', () => {
    assert.equal(allowed('User-agent: *\nDisallow: /caf%c3%a9\n', UA, '/caf%C3%A9'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /caf%C3%A9\n', UA, '/caf%c3%a9'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /café\n', UA, '/caf%c3%a9'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /a%2f\n', UA, '/a%2Fb'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /s?q=%e3%83%84$\n', UA, '/s?q=ツ'), false);
  });

  test('* and $ around encoded characters', () => {
    const robots = 'User-agent: *\nDisallow: /*ツ$\nDisallow: /ツ*.html$\n';
    assert.equal(allowed(robots, UA, '/a/%E3%83%84'), false);
    assert.equal(allowed(robots, UA, '/a/ツ'), false);
    assert.equal(allowed(robots, UA, '/a/%e3%83%84'), false);
    assert.equal(allowed(robots, UA, '/a/ツx'), true, '$ ends the match after the last octet');
    assert.equal(allowed(robots, UA, '/ツ/x.html'), false);
    assert.equal(allowed(robots, UA, '/%E3%83%84/x.html?q'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /*%e3%83%84$\n', UA, '/a/ツ'), false);
    assert.equal(allowed('User-agent: *\nDisallow: /ツ%24$\n', UA, '/ツ$'), false, '%24 then the anchor');
    assert.equal(allowed('User-agent: *\nDisallow: /ツ%24$\n', UA, '/ツ'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /%2a$\n', UA, '/*'), false, '%2a is a literal *');
    assert.equal(allowed('User-agent: *\nDisallow: /%2a$\n', UA, '/x'), true);
  });

  test('priority counts the octets of the encoded pattern, however it is spelt', () => {
    // Both patterns are /%E3%83%84: equally long, so allow wins the tie.
    assert.equal(allowed('User-agent: *\nDisallow: /%e3%83%84\nAllow: /ツ\n', UA, '/ツ'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /ツ\nAllow: /%E3%83%84\n', UA, '/ツ'), true);
    // One more octet: /%E3%83%84x outranks /%E3%83%84 whichever way either is written.
    assert.equal(allowed('User-agent: *\nAllow: /ツ\nDisallow: /%e3%83%84x\n', UA, '/ツx'), false);
    assert.equal(allowed('User-agent: *\nAllow: /%E3%83%84\nDisallow: /ツx\n', UA, '/ツx'), false);
  });

  test('URL objects, absolute strings and path references are encoded alike', () => {
    const policy = parseRobots('User-agent: *\nDisallow: /ツ\n');
    assert.equal(isAllowed(policy, UA, new URL('https://h/ツ')), false);
    assert.equal(isAllowed(policy, UA, 'https://h/ツ'), false);
    assert.equal(isAllowed(policy, UA, '/ツ'), false);
    assert.equal(isAllowed(policy, UA, '/%e3%83%84'), false);
  });

  test('canonical form', () => {
    assert.equal(canonicalizePath('/%7e%41/ツ/%2f?a=%2f%3a%26'), '/~A/%E3%83%84/%2F?a=/:%26');
    assert.equal(canonicalizePath('/100%/%zz'), '/100%/%zz');
    assert.equal(canonicalizePath('/*$'), '/%2A%24');
    assert.equal(canonicalizePath('/*$', { pattern: true }), '/*%24');
    // google/robotstxt robots_test.cc TestMaybeEscapePattern, as patterns.
    const escapes: Array<[pattern: string, escaped: string]> = [
      ['http://www.example.com', 'http://www.example.com'],
      ['/a/b/c', '/a/b/c'],
      ['á', '%C3%A1'],
      ['%aa', '%AA'],
    ];
    for (const [pattern, escaped] of escapes) {
      assert.equal(canonicalizePath(pattern, { pattern: true }), escaped, pattern);
    }
  });
});

describe('URLs', () => {
  const policy = parseRobots('User-agent: *\nDisallow: /private\nAllow: /private/ok$\n');

  test('URL objects and strings; the fragment is ignored; dot segments are resolved', () => {
    assert.equal(isAllowed(policy, UA, new URL('https://h/private/x')), false);
    assert.equal(isAllowed(policy, UA, 'https://h/private/ok#frag'), true);
    assert.equal(isAllowed(policy, UA, 'https://h/public/../private/x'), false);
  });

  test('a path reference is accepted; the empty string is /; an unparseable URL is not allowed', () => {
    assert.equal(isAllowed(policy, UA, '/private/x?y'), false);
    assert.equal(isAllowed(policy, UA, '/public'), true);
    assert.equal(isAllowed(DISALLOW_ALL, UA, ''), false);
    assert.equal(isAllowed(ALLOW_ALL, UA, ''), true);
    assert.equal(isAllowed(ALLOW_ALL, UA, 'http://[::1'), false);
  });

  test('/robots.txt is always allowed', () => {
    assert.equal(isAllowed(DISALLOW_ALL, UA, 'https://h/robots.txt'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /robots.txt\n', UA, '/robots.txt'), true);
    assert.equal(allowed('User-agent: *\nDisallow: /\n', UA, '/robots.txt.bak'), false);
  });
});

describe('product token', () => {
  test('leading [a-zA-Z_-] run, lower-cased', () => {
    assert.equal(productToken('MyCrawler/1.0 (+http://x)'), 'mycrawler');
    assert.equal(productToken('Foo_Bar-Baz'), 'foo_bar-baz');
    assert.equal(productToken('  FooBot'), 'foobot');
    assert.equal(productToken('Bot2'), 'bot');
    assert.equal(productToken('Mozilla/5.0 (compatible; FooBot/1.0)'), 'mozilla');
    assert.equal(productToken('/1.0'), '');
    assert.equal(productToken(''), '');
  });

  test('a crawler without a token is governed by the * group only', () => {
    const robots = 'User-agent: *\nDisallow: /star\n\nUser-agent: foobot\nDisallow: /foo\n';
    assert.equal(allowed(robots, '', '/star'), false);
    assert.equal(allowed(robots, '', '/foo'), true);
  });
});

describe('ALLOW_ALL and DISALLOW_ALL', () => {
  test('ALLOW_ALL allows everything, DISALLOW_ALL everything but /robots.txt', () => {
    for (const url of ['https://h/', 'https://h/a/b?c', 'https://h/robots.txt']) {
      assert.equal(isAllowed(ALLOW_ALL, UA, url), true, url);
    }
    assert.equal(isAllowed(DISALLOW_ALL, UA, 'https://h/'), false);
    assert.equal(isAllowed(DISALLOW_ALL, 'anything', 'https://h/a/b?c'), false);
    assert.equal(crawlDelaySeconds(ALLOW_ALL, UA), undefined);
    assert.equal(crawlDelaySeconds(DISALLOW_ALL, UA), undefined);
  });

  test('policies are immutable', () => {
    assert.ok(Object.isFrozen(ALLOW_ALL) && Object.isFrozen(DISALLOW_ALL));
    assert.ok(Object.isFrozen(DISALLOW_ALL.groups[0]?.rules));
    assert.throws(() => {
      (DISALLOW_ALL.groups as RobotsPolicy['groups'][number][]).pop();
    }, TypeError);
  });

  test('a policy survives a JSON round trip (e.g. a robots cache)', () => {
    const policy = parseRobots(
      'User-agent: foobot\nDisallow: /x\nCrawl-delay: 3\nSitemap: https://h/s.xml\n',
    );
    const copy = JSON.parse(JSON.stringify(policy)) as RobotsPolicy;
    assert.equal(isAllowed(copy, UA, 'https://h/x'), false);
    assert.equal(isAllowed(copy, UA, 'https://h/y'), true);
    assert.equal(crawlDelaySeconds(copy, UA), 3);
    assert.deepEqual(sitemaps(copy), ['https://h/s.xml']);
  });
});
