/**
 * A crawl's credentials (lambdas/core/crawl/credentials.ts): the options and the cookie file parsed strictly
 * (hostile input gets one line and never reaches a request), each credential sent only within its
 * scope, and the request record's redaction.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CREDENTIAL_LIMITS } from '../../lambdas/core/base/index.ts';
import {
  basicAuthHeader,
  type CredentialBundle,
  CredentialBundleSchema,
  CredentialError,
  checkBundleSize,
  credentialHeaders,
  isProxyUrl,
  parseCookieFile,
  parseCookieOption,
  parseHeaderOption,
  parseProxyOption,
  REDACTED,
  redactHeaders,
  secretHeaderNames,
} from '../../lambdas/core/crawl/index.ts';
import { assertLinear } from '../fixtures/linear-time.ts';

const NOW = 1_800_000_000;

function refused(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (error) => {
    assert.ok(error instanceof CredentialError, String(error));
    assert.match(error.message, pattern);
    assert.doesNotMatch(error.message, /\n/, 'one line');
    return true;
  });
}

describe('credential options', () => {
  it('reads a header, a cookie and Basic credentials', () => {
    assert.deepEqual(parseHeaderOption('X-Api-Key:  abc def '), { name: 'X-Api-Key', value: 'abc def' });
    assert.deepEqual(parseHeaderOption('Authorization: Bearer a:b'), {
      name: 'Authorization',
      value: 'Bearer a:b',
    });
    assert.deepEqual(parseCookieOption('session=abc123'), { name: 'session', value: 'abc123' });
    assert.deepEqual(parseCookieOption('empty='), { name: 'empty', value: '' });
    assert.deepEqual(basicAuthHeader('ann:p:w ü'), {
      name: 'authorization',
      value: `Basic ${Buffer.from('ann:p:w ü').toString('base64')}`,
    });
  });

  it('refuses what would split a request or override the framing, in one line', () => {
    refused(() => parseHeaderOption('no colon'), /expected 'Name: value'/);
    refused(() => parseHeaderOption(': value'), /expected 'Name: value'/);
    refused(() => parseHeaderOption('Bad Name: v'), /expected 'Name: value'/);
    refused(() => parseHeaderOption('X-A: v\r\nX-Injected: 1'), /control character/);
    refused(() => parseHeaderOption('X-A: v\u0000'), /control character/);
    refused(() => parseHeaderOption('Host: evil.example'), /set by the crawler itself/);
    refused(() => parseHeaderOption('Transfer-Encoding: chunked'), /set by the crawler itself/);
    refused(() => parseHeaderOption('content-length: 5'), /set by the crawler itself/);
    refused(() => parseCookieOption('novalue'), /expected name=value/);
    refused(() => parseCookieOption('a=b; c=d'), /expected name=value/);
    refused(() => parseCookieOption('a=b\r\nX: y'), /expected name=value/);
    refused(() => parseCookieOption('=b'), /expected name=value/);
    refused(() => basicAuthHeader('no-colon'), /expected user:password/);
    refused(() => basicAuthHeader(':pw'), /expected user:password/);
    refused(() => basicAuthHeader('ann:pw\n'), /control characters/);
    // The message quotes at most 60 characters of what was given.
    assert.throws(
      () => parseHeaderOption('x'.repeat(100_000)),
      (error: Error) => error.message.length < 200,
    );
  });
});

describe('cookie files (Netscape format)', () => {
  const line = (...fields: string[]) => fields.join('\t');

  it('reads the format curl writes: comments, #HttpOnly_, a leading-dot domain, CRLF', () => {
    const text = [
      '# Netscape HTTP Cookie File',
      '',
      line('docs.example.com', 'FALSE', '/', 'FALSE', '0', 'session', 'abc'),
      line('#HttpOnly_.example.com', 'TRUE', '/app', 'TRUE', '1900000000', 'token', '"q"'),
      `${line('example.org', 'FALSE', '/', 'FALSE', '0', 'x', 'y')}\r`,
    ].join('\n');
    assert.deepEqual(parseCookieFile(text, 'cookies.txt'), [
      {
        domain: 'docs.example.com',
        subdomains: false,
        path: '/',
        secure: false,
        expires: 0,
        name: 'session',
        value: 'abc',
      },
      {
        domain: 'example.com',
        subdomains: true,
        path: '/app',
        secure: true,
        expires: 1900000000,
        name: 'token',
        value: '"q"',
      },
      {
        domain: 'example.org',
        subdomains: false,
        path: '/',
        secure: false,
        expires: 0,
        name: 'x',
        value: 'y',
      },
    ]);
  });

  it('names the line and what was expected for a damaged one', () => {
    refused(
      () => parseCookieFile('a\tb\tc', 'c.txt'),
      /^c\.txt line 1: 3 tab-separated fields; a Netscape cookie line has 7$/,
    );
    refused(
      () => parseCookieFile(`#\n${line('h', 'yes', '/', 'FALSE', '0', 'n', 'v')}`, 'c.txt'),
      /^c\.txt line 2: the subdomains field is "yes"; expected TRUE or FALSE$/,
    );
    for (const bad of [
      line('h', 'FALSE', 'nopath', 'FALSE', '0', 'n', 'v'),
      line('h', 'FALSE', '/', 'FALSE', 'soon', 'n', 'v'),
      line('h', 'FALSE', '/', 'FALSE', '0', 'bad name', 'v'),
      line('h', 'FALSE', '/', 'FALSE', '0', 'n', 'v;x'),
      line('h/../x', 'FALSE', '/', 'FALSE', '0', 'n', 'v'),
      line('', 'FALSE', '/', 'FALSE', '0', 'n', 'v'),
    ])
      refused(() => parseCookieFile(bad, 'c.txt'), /^c\.txt line 1: expected a host name/);
  });

  it('reads a large file in time linear in its lines', () => {
    const lines = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        line(`h${i}.example`, 'FALSE', '/', 'FALSE', '0', `n${i}`, 'v'),
      ).join('\n');
    assertLinear({
      what: 'lines of a cookie file',
      n: 5_000,
      time: (n) => {
        const text = lines(n);
        const started = performance.now();
        parseCookieFile(text, 'big.txt');
        return performance.now() - started;
      },
    });
  });
});

describe('where credentials go', () => {
  const bundle: CredentialBundle = {
    v: 1,
    headers: [
      { name: 'X-Api-Key', value: 'k', hosts: ['docs.example.com'] },
      { name: 'authorization', value: 'Basic abc', hosts: ['docs.example.com', '127.0.0.2:8080'] },
    ],
    cookies: [
      {
        domain: 'docs.example.com',
        subdomains: false,
        path: '/',
        secure: false,
        expires: 0,
        name: 's',
        value: '1',
      },
      {
        domain: 'example.com',
        subdomains: true,
        path: '/app',
        secure: false,
        expires: 0,
        name: 'a',
        value: '2',
      },
      {
        domain: 'docs.example.com',
        subdomains: false,
        path: '/',
        secure: true,
        expires: 0,
        name: 'sec',
        value: '3',
      },
      {
        domain: 'docs.example.com',
        subdomains: false,
        path: '/',
        secure: false,
        expires: NOW - 1,
        name: 'old',
        value: '4',
      },
    ],
  };
  const at = (url: string) => credentialHeaders(bundle, new URL(url), NOW);

  it('sends headers to their hosts only, the port included', () => {
    assert.deepEqual(at('http://docs.example.com/x'), {
      'x-api-key': 'k',
      authorization: 'Basic abc',
      cookie: 's=1',
    });
    assert.deepEqual(at('http://127.0.0.2:8080/'), { authorization: 'Basic abc' });
    assert.deepEqual(at('http://127.0.0.2:8081/'), {});
    assert.deepEqual(at('http://evil.docs.example.com/'), {});
    assert.deepEqual(at('http://docs.example.com.evil.net/'), {});
    assert.deepEqual(at('http://other.example/'), {});
  });

  it('matches cookies by domain, subdomain flag, path, secure and expiry (RFC 6265)', () => {
    assert.equal(at('https://docs.example.com/').cookie, 's=1; sec=3');
    assert.equal(at('http://example.com/app').cookie, 'a=2');
    assert.equal(at('http://www.example.com/app/page').cookie, 'a=2');
    assert.equal(
      at('http://www.example.com/application').cookie,
      undefined,
      'a path prefix is not a path match',
    );
    assert.equal(at('http://notexample.com/app').cookie, undefined);
    assert.equal(at('http://www.docs.example.com/').cookie, undefined, 'no subdomains without the flag');
  });

  it('sends nothing without a bundle', () => {
    assert.deepEqual(credentialHeaders(undefined, new URL('http://docs.example.com/'), NOW), {});
  });

  it('redacts exactly the headers that carried secrets', () => {
    const names = secretHeaderNames(bundle);
    assert.deepEqual([...names].sort(), ['authorization', 'cookie', 'x-api-key']);
    assert.deepEqual(
      redactHeaders(
        [
          ['host', 'docs.example.com'],
          ['X-API-KEY', 'k'],
          ['Cookie', 's=1'],
          ['user-agent', 'ua'],
        ],
        names,
      ),
      [
        ['host', 'docs.example.com'],
        ['X-API-KEY', REDACTED],
        ['Cookie', REDACTED],
        ['user-agent', 'ua'],
      ],
    );
    assert.deepEqual([...secretHeaderNames({ v: 1, headers: [], cookies: [] })], []);
  });

  it('keeps a bundle within one SSM parameter', () => {
    const big: CredentialBundle = {
      v: 1,
      headers: [{ name: 'X-Big', value: 'x'.repeat(CREDENTIAL_LIMITS.bundleBytes), hosts: ['h'] }],
      cookies: [],
    };
    refused(() => checkBundleSize(big), /at most 4096 are kept/);
    checkBundleSize(bundle);
    assert.ok(CredentialBundleSchema.safeParse(bundle).success);
    // A value read back with a line break (a hand-edited parameter) is refused by the schema.
    const edited = { ...bundle, headers: [{ name: 'X', value: 'a\r\nb', hosts: ['h'] }] };
    assert.equal(CredentialBundleSchema.safeParse(edited).success, false);
  });
});

describe('--proxy', () => {
  it('keeps the URL without its user, which becomes the Proxy-Authorization', () => {
    assert.deepEqual(parseProxyOption('http://127.0.0.1:3128'), { url: 'http://127.0.0.1:3128' });
    assert.deepEqual(parseProxyOption('http://proxy.example/'), { url: 'http://proxy.example' });
    assert.deepEqual(parseProxyOption('http://us%40er:p%3Ass@proxy.example:8080'), {
      url: 'http://proxy.example:8080',
      authorization: `Basic ${Buffer.from('us@er:p:ss').toString('base64')}`,
    });
    assert.ok(isProxyUrl('http://proxy.example:8080'));
    for (const stored of [
      'http://u:p@proxy.example',
      'https://proxy.example',
      'http://proxy.example/x',
      'socks5://p:1080',
    ])
      assert.equal(isProxyUrl(stored), false, stored);
  });

  it('refuses what it cannot use, in one line', () => {
    refused(
      () => parseProxyOption('proxy.example:3128'),
      /--proxy: expected http:\/\/\[user:password@\]host:port/,
    );
    refused(() => parseProxyOption('https://proxy.example'), /expected http:\/\//);
    refused(() => parseProxyOption('socks5://proxy.example:1080'), /expected http:\/\//);
    refused(() => parseProxyOption('http://proxy.example/path?q'), /no path, query or fragment/);
    refused(() => parseProxyOption('http://u%0d%0aX:p@proxy.example'), /control characters/);
    refused(() => parseProxyOption('http://u%3Ax:p@proxy.example'), /may not hold a colon/);
    refused(() => parseProxyOption(`http://${'x'.repeat(100_000)}`), /expected http/);
  });
});
