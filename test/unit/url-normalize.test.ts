import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  DEFAULT_NORMALIZE_OPTIONS,
  type NormalizeResult,
  normalizeHref,
  normalizeUrl,
  stripUserinfo,
  urlKey,
  withoutUserinfo,
} from '../../lambdas/core/urls/index.ts';

function norm(input: string | URL, options?: Parameters<typeof normalizeUrl>[1]): string {
  const result = normalizeUrl(input, options);
  assert.ok(result.ok, `expected ${String(input)} to normalize, got ${JSON.stringify(result)}`);
  return result.url;
}

function failure(input: string | URL, options?: Parameters<typeof normalizeUrl>[1]) {
  const result: NormalizeResult = normalizeUrl(input, options);
  assert.equal(result.ok, false, `expected ${String(input)} to be rejected, got ${JSON.stringify(result)}`);
  if (result.ok) throw new Error('unreachable');
  return result;
}

describe('normalizeUrl profile', () => {
  test('accepts http and https only', () => {
    assert.equal(norm('http://example.com/'), 'http://example.com/');
    assert.equal(norm('https://example.com/'), 'https://example.com/');
    for (const input of [
      'ftp://example.com/',
      'mailto:me@example.com',
      'javascript:alert(1)',
      'data:text/html,hi',
      'tel:+15551234',
      'file:///etc/passwd',
    ]) {
      const f = failure(input);
      assert.equal(f.code, 'unsupported-scheme', input);
      assert.match(f.reason, /expected http: or https:/);
    }
    assert.match(failure('ftp://example.com/').reason, /"ftp:"/);
  });

  test('rejects what is not an absolute URL, saying what was expected', () => {
    for (const input of [
      '',
      'example.com/page',
      '/relative',
      'http://',
      'http://exa mple.com/',
      'http://[::1/',
    ]) {
      const f = failure(input);
      assert.equal(f.code, 'invalid-url', input);
      assert.match(f.reason, /expected an absolute http\(s\) URL/);
    }
  });

  test('lower-cases scheme and host, keeps path case', () => {
    assert.equal(norm('HTTP://WWW.Example.COM/Path/File.HTML'), 'http://www.example.com/Path/File.HTML');
  });

  test('converts internationalized hosts to punycode', () => {
    assert.equal(norm('http://Bücher.de/'), 'http://xn--bcher-kva.de/');
    assert.equal(norm('https://例え.jp/'), 'https://xn--r8jz45g.jp/');
  });

  test('canonicalizes IP hosts', () => {
    assert.equal(norm('http://0x7f.1/'), 'http://127.0.0.1/');
    assert.equal(norm('http://[0:0::1]:8080/'), 'http://[::1]:8080/');
  });

  test('removes the trailing dot of the host', () => {
    assert.equal(norm('http://example.com./a'), 'http://example.com/a');
    assert.equal(norm('http://example.com..:8080/'), 'http://example.com:8080/');
    assert.equal(failure('http://./').code, 'invalid-url');
  });

  test('removes default ports and keeps others', () => {
    assert.equal(norm('http://example.com:80/'), 'http://example.com/');
    assert.equal(norm('https://example.com:443/'), 'https://example.com/');
    assert.equal(norm('http://example.com:443/'), 'http://example.com:443/');
    assert.equal(norm('https://example.com:8443/'), 'https://example.com:8443/');
  });

  test('removes dot segments, including percent-encoded ones', () => {
    assert.equal(norm('http://example.com/a/./b/../c'), 'http://example.com/a/c');
    assert.equal(norm('http://example.com/a/%2e%2E/c/%2E/d'), 'http://example.com/c/d');
    assert.equal(norm('http://example.com/../../a'), 'http://example.com/a');
  });

  test('gives an empty path as /, and keeps trailing slashes as they are', () => {
    assert.equal(norm('http://example.com'), 'http://example.com/');
    assert.equal(norm('http://example.com?q=1'), 'http://example.com/?q=1');
    assert.equal(norm('http://example.com/a/'), 'http://example.com/a/');
    assert.equal(norm('http://example.com/a'), 'http://example.com/a');
  });

  test('drops the fragment', () => {
    assert.equal(norm('http://example.com/page#section-2'), 'http://example.com/page');
    assert.equal(norm('http://example.com/page?q=1#'), 'http://example.com/page?q=1');
  });

  test('normalizes percent-encoding: upper-case hex, unreserved decoded, reserved kept', () => {
    assert.equal(norm('http://example.com/%7euser/%41%62%2D%2e%5F'), 'http://example.com/~user/Ab-._');
    assert.equal(
      norm('http://example.com/a%2fb%3fc%26d%3De%23f'),
      'http://example.com/a%2Fb%3Fc%26d%3De%23f',
    );
    assert.equal(norm('http://example.com/caf%c3%a9'), 'http://example.com/caf%C3%A9');
    assert.equal(norm('http://example.com/?q=%7e%2f%41&x=%c3%a9'), 'http://example.com/?q=~%2FA&x=%C3%A9');
    // A lone % is not an escape: left as it is (not double-encoded).
    assert.equal(norm('http://example.com/100%/x?p=%zz'), 'http://example.com/100%/x?p=%zz');
    // Encoded and literal forms of the same characters meet.
    assert.equal(norm('http://example.com/café'), norm('http://example.com/caf%c3%a9'));
  });

  test('drops userinfo: credentials are never kept, and the URL is the one without them', () => {
    for (const input of [
      'http://user:secret@example.com/p?q=1',
      'http://user@example.com/p?q=1',
      'http://:secret@example.com/p?q=1',
      'http://u%7e:p%2f@example.com/p?q=1',
      'HTTP://a@b:secret@Example.com:80/p?q=1#f',
      'http:user:secret@example.com/p?q=1',
      'http://@example.com/p?q=1',
    ]) {
      const result = normalizeUrl(input);
      assert.ok(result.ok, input);
      assert.equal(result.url, 'http://example.com/p?q=1', input);
      assert.equal(result.key, urlKey('http://example.com/p?q=1'), input);
    }
    assert.equal(norm('https://user:secret@[::1]:8443/'), 'https://[::1]:8443/');
    // The input is not modified.
    const url = new URL('http://user:secret@example.com/');
    assert.equal(norm(url), 'http://example.com/');
    assert.equal(url.password, 'secret');
  });

  test('percent-encodes what browsers encode', () => {
    assert.equal(norm('http://example.com/a b/"q"<>'), 'http://example.com/a%20b/%22q%22%3C%3E');
  });

  test('removes tracking parameters, case-insensitively and by prefix wildcard', () => {
    assert.equal(
      norm('http://example.com/?utm_source=x&id=7&UTM_Medium=y&gclid=1&FBCLID=2&msclkid=3&utm_=4'),
      'http://example.com/?id=7',
    );
    for (const name of ['mc_cid', 'mc_eid', '_ga', 'yclid', 'igshid', 'dclid', '_gl']) {
      assert.equal(norm(`http://example.com/p?${name}=v&a=1`), 'http://example.com/p?a=1', name);
    }
    // Names are compared after percent-decoding.
    assert.equal(norm('http://example.com/?%75tm_source=x&a=1'), 'http://example.com/?a=1');
    // A valueless tracking parameter goes too; a parameter that merely contains the name stays.
    assert.equal(norm('http://example.com/?gclid&my_gclid=1'), 'http://example.com/?my_gclid=1');
  });

  test('keeps the order, duplicates and bytes of the remaining query parameters', () => {
    assert.equal(
      norm('http://example.com/s?z=1&a=2&z=3&q=a+b%20c'),
      'http://example.com/s?z=1&a=2&z=3&q=a+b%20c',
    );
  });

  test('drops an empty query, empty pairs and a query left empty after stripping', () => {
    assert.equal(norm('http://example.com/p?'), 'http://example.com/p');
    assert.equal(norm('http://example.com/p?&&'), 'http://example.com/p');
    assert.equal(norm('http://example.com/p?utm_source=x&utm_medium=y'), 'http://example.com/p');
    assert.equal(norm('http://example.com/p?b=2&&a=1&'), 'http://example.com/p?b=2&a=1');
  });

  test('takes a custom strip list', () => {
    const options = { ...DEFAULT_NORMALIZE_OPTIONS, stripParams: ['sessionid', 'ref_*'] };
    assert.equal(
      norm('http://example.com/?utm_source=x&SessionId=1&ref_a=1&ref=2', options),
      'http://example.com/?utm_source=x&ref=2',
    );
    assert.equal(
      norm('http://example.com/?utm_source=x', { stripParams: [] }),
      'http://example.com/?utm_source=x',
    );
  });

  test('does not strip www., upgrade http or sort parameters (these change the resource on some sites)', () => {
    assert.notEqual(norm('http://www.example.com/'), norm('http://example.com/'));
    assert.notEqual(norm('http://example.com/'), norm('https://example.com/'));
    assert.notEqual(norm('http://example.com/?a=1&b=2'), norm('http://example.com/?b=2&a=1'));
  });

  test('accepts a URL object without changing it', () => {
    const url = new URL('HTTP://Example.com:80/a?utm_source=x#f');
    assert.equal(norm(url), 'http://example.com/a');
    assert.equal(url.href, 'http://example.com/a?utm_source=x#f');
  });
});

describe('URL length cap', () => {
  const base = 'http://example.com/';

  test('accepts exactly maxUrlLength characters and rejects one more', () => {
    const fits = base + 'a'.repeat(2048 - base.length);
    assert.equal(norm(fits), fits);
    const f = failure(`${fits}b`);
    assert.equal(f.code, 'url-too-long');
    assert.match(f.reason, /2049 characters/);
    assert.match(f.reason, /at most 2048/);
  });

  test('measures after normalization', () => {
    // Long only because of a tracking parameter and encoded unreserved characters.
    const input = `${base}${'%61'.repeat(600)}?utm_source=${'x'.repeat(5000)}`;
    assert.equal(norm(input), base + 'a'.repeat(600));
  });

  test('takes a custom cap, and says which', () => {
    const f = failure('http://example.com/abcdef', { maxUrlLength: 20 });
    assert.equal(f.code, 'url-too-long');
    assert.match(f.reason, /25 characters.*at most 20/);
  });

  test('keeps reasons short for huge inputs', () => {
    const f = failure(`notaurl${'x'.repeat(100_000)}`);
    assert.ok(f.reason.length < 400, `reason is ${f.reason.length} characters`);
  });
});

describe('dedup key', () => {
  test('is the sha256 hex of the normalized URL', () => {
    const result = normalizeUrl('HTTP://Example.COM/a');
    assert.ok(result.ok);
    assert.equal(result.key, createHash('sha256').update('http://example.com/a').digest('hex'));
    assert.equal(result.key, urlKey(result.url));
    assert.match(result.key, /^[0-9a-f]{64}$/);
  });

  test('normalizeHref gives the same URL without a key', () => {
    const href = normalizeHref('HTTP://Example.COM/a#x');
    assert.deepEqual(href, { ok: true, url: 'http://example.com/a' });
  });

  test('duplicates by normalization collapse to one key', () => {
    const variants = [
      'HTTP://Example.COM:80/a/./b/../c?utm_source=x#f',
      'http://example.com/a/c',
      'http://example.com./a/c?',
      'http://EXAMPLE.com/a/b/../c#top',
      'http://example.com/%61/c?gclid=123&utm_campaign=y',
      '  http://example.com/a/c\n',
    ];
    const keys = new Set(variants.map((v) => normalizeUrl(v)).map((r) => (r.ok ? r.key : r.reason)));
    assert.equal(keys.size, 1, [...keys].join('\n'));
    assert.equal(norm(variants[0] ?? ''), 'http://example.com/a/c');
  });
});

describe('userinfo helpers (URLs used without normalization)', () => {
  test('withoutUserinfo returns the URL itself when it has none, else a copy without it', () => {
    const plain = new URL('http://example.com/a?b#c');
    assert.equal(withoutUserinfo(plain), plain);
    const secret = new URL('https://user:secret@Example.com:8443/a?b#c');
    const cut = withoutUserinfo(secret);
    assert.equal(cut.href, 'https://example.com:8443/a?b#c');
    assert.equal(secret.href, 'https://user:secret@example.com:8443/a?b#c');
  });

  test('stripUserinfo keeps an input without userinfo as written and cuts it from any other', () => {
    for (const input of ['HTTP://Example.com', 'not a url', 'mailto:me@example.com', ' http://a.com/x ']) {
      assert.equal(stripUserinfo(input), input);
    }
    assert.equal(stripUserinfo('HTTP://u:p@Example.com'), 'http://example.com/');
    assert.equal(stripUserinfo('ftp://u:p@example.com/f'), 'ftp://example.com/f');
    assert.equal(stripUserinfo('http:u:p@example.com/'), 'http://example.com/');
    // Inputs the parser refuses lose the `scheme://…@` part as text (up to the last @ of the authority).
    assert.equal(stripUserinfo('http://u:p@exa mple.com/x'), 'http://exa mple.com/x');
    assert.equal(stripUserinfo('http://u:p@q@[::1/x'), 'http://[::1/x');
    assert.equal(stripUserinfo('http://[::1/x@y'), 'http://[::1/x@y');
  });
});

describe('idempotence: normalize(normalize(x)) == normalize(x)', () => {
  /** Returns whether `input` normalized at all (rejections are trivially idempotent). */
  function assertIdempotent(input: string): boolean {
    const once = normalizeUrl(input);
    if (!once.ok) return false;
    const twice = normalizeUrl(once.url);
    assert.deepEqual(twice, once, `not idempotent for ${JSON.stringify(input)}`);
    return true;
  }

  test('on the profile examples', () => {
    for (const input of [
      'HTTP://Example.COM:80/a/./b/../c?utm_source=x#f',
      'http://example.com/%7euser/a%2fb%c3%a9?q=%41%2f&&b=2&',
      'http://example.com./?&utm_x=1',
      'http://Bücher.de/a b?c=d e#f',
      'http://u%7e:p%2f@example.com/',
      'http://example.com/100%/x?p=%zz',
      'http://example.com/a%2e%2E/b/%2E%2e/c',
      'http://[0:0::1]:80/',
    ]) {
      assertIdempotent(input);
    }
  });

  test('on every URL of the resolution conformance cases', () => {
    const cases = JSON.parse(
      readFileSync(new URL('../data/url-resolve-cases.json', import.meta.url), 'utf8'),
    ) as Array<{ input: string; expected: string | null }>;
    let checked = 0;
    for (const c of cases) {
      for (const input of [c.input, c.expected]) {
        if (input === null) continue;
        if (assertIdempotent(input)) checked++;
      }
    }
    assert.ok(checked > 400, `only ${checked} conformance URLs normalized`);
  });

  test('on generated URLs mixing case, escapes, dots and parameters', () => {
    // Deterministic generator (xorshift32), so a failure reproduces.
    let state = 0x9e3779b9;
    const next = (n: number): number => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return (state >>> 0) % n;
    };
    const pick = <T>(items: readonly T[]): T => items[next(items.length)] as T;
    const hosts = [
      'Example.COM',
      'example.com.',
      'xn--bcher-kva.de',
      'bücher.DE',
      '10.0.0.1',
      '[::1]',
      'a.b.c',
    ];
    const segments = [
      'a',
      '.',
      '..',
      '%2e',
      '%2E%2e',
      '%7E',
      '%7e',
      '%2f',
      '%41b',
      'ü',
      'a b',
      '%',
      '%zz',
      '',
    ];
    const params = [
      'a=1',
      'utm_source=x',
      'UTM_Term=y',
      '',
      'b=%41',
      'c=%2f',
      'd',
      'e=f+g',
      'gclid=2',
      '%75tm_x=1',
    ];
    for (let i = 0; i < 2000; i++) {
      const path = Array.from({ length: next(5) }, () => pick(segments)).join('/');
      const query = Array.from({ length: next(4) }, () => pick(params)).join('&');
      const input = `${pick(['http', 'HTTPS', 'Http'])}://${pick(hosts)}${pick(['', ':80', ':443', ':8080'])}/${path}${next(2) ? `?${query}` : ''}${next(2) ? '#frag' : ''}`;
      assertIdempotent(input);
    }
  });
});
