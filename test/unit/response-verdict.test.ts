import assert from 'node:assert/strict';
import { test } from 'node:test';
import { responseVerdict } from '../../lambdas/core/fetch/index.ts';

const page = 'https://example.com/dir/page';

test('2xx is fetched', () => {
  assert.deepEqual(responseVerdict(200, [], page), { kind: 'fetched' });
  assert.deepEqual(responseVerdict(204, [], page), { kind: 'fetched' });
});

test('a redirect resolves its Location against the request URL', () => {
  const verdict = responseVerdict(301, [['Location', '../other?x=1']], page);
  assert.equal(verdict.kind, 'redirect');
  if (verdict.kind === 'redirect') assert.equal(verdict.location.href, 'https://example.com/other?x=1');
});

test('a redirect without Location is a recorded failure', () => {
  assert.deepEqual(responseVerdict(302, [], page), {
    kind: 'failed',
    code: 'redirect-without-location',
    reason: 'HTTP 302 without a Location header',
  });
});

test('429 and 5xx are retryable and carry Retry-After', () => {
  const verdict = responseVerdict(429, [['retry-after', '7']], page);
  assert.deepEqual(verdict, { kind: 'retry', code: 'http-429', retryAfterMs: 7000 });
  assert.deepEqual(responseVerdict(503, [], page), {
    kind: 'retry',
    code: 'http-503',
    retryAfterMs: undefined,
  });
});

test('a status beyond 5xx is not retried', () => {
  assert.deepEqual(responseVerdict(999, [], page), {
    kind: 'failed',
    code: 'http-999',
    reason: 'the server answered HTTP 999',
  });
});

test('other 4xx are permanent failures with the status as code', () => {
  assert.deepEqual(responseVerdict(404, [], page), {
    kind: 'failed',
    code: 'http-404',
    reason: 'the server answered HTTP 404',
  });
});

test('a redirect Location never carries userinfo: not its own, not one inherited from the request URL', () => {
  for (const [location, requestUrl, expected] of [
    ['http://user:secret@other.example/x?y=1', page, 'http://other.example/x?y=1'],
    ['//user:secret@other.example/x', page, 'https://other.example/x'],
    ['http://:secret@other.example/', page, 'http://other.example/'],
    ['/next', 'https://user:secret@example.com/dir/page', 'https://example.com/next'],
  ] as const) {
    const verdict = responseVerdict(302, [['Location', location]], requestUrl);
    assert.equal(verdict.kind, 'redirect', location);
    if (verdict.kind === 'redirect') {
      assert.equal(verdict.location.href, expected, location);
      assert.equal(verdict.location.username, '');
      assert.equal(verdict.location.password, '');
    }
  }
});

test('an invalid Location is quoted in the reason without its userinfo', () => {
  const verdict = responseVerdict(301, [['Location', 'http://user:secret@exa mple.com/x']], page);
  assert.equal(verdict.kind, 'failed');
  if (verdict.kind === 'failed') {
    assert.equal(verdict.code, 'bad-redirect-location');
    assert.equal(verdict.reason, 'HTTP 301 Location "http://exa mple.com/x" is not a valid URL');
  }
});
