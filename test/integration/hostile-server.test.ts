/**
 * The HTTP fetcher against hostile servers on 127.0.0.1, for what test/integration/http-fetcher.test.ts
 * does not already cover: honest-but-endless bodies, a one-byte-a-second trickle, endless status lines
 * and header blocks, interim-response floods, malformed header lines, conflicting framing headers,
 * more kinds of broken chunked encoding, and decompression bombs served over HTTP. Every case must end
 * within its deadline, with a typed error (retry or record) or a response marked truncated, and the
 * server must see the transfer stopped.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type FetchLimits, type FetchRequest, HttpFetcher } from '../../lambdas/adapters/http-fetcher.ts';
import { headerValue, PermanentError, RetryableError } from '../../lambdas/core/base/index.ts';
import { decodeContent } from '../../lambdas/core/crawl/index.ts';
import {
  type BombCoding,
  bomb,
  encoded,
  endless,
  endlessBody,
  type HostileServer,
  interimFlood,
  raw,
  startHostileServer,
  trickleBody,
} from '../fixtures/hostile-server.ts';

const MiB = 1024 * 1024;
const LIMITS: FetchLimits = {
  connectTimeoutMs: 1000,
  headersTimeoutMs: 1000,
  totalTimeoutMs: 1500,
  maxBodyBytes: 100_000,
};

function request(url: string, limits: Partial<FetchLimits> = {}): FetchRequest {
  return {
    url: new URL(url),
    userAgent: 'hostile-test/1.0',
    allowPrivate: true,
    limits: { ...LIMITS, ...limits },
  };
}

function expectError(
  kind: typeof PermanentError | typeof RetryableError,
  code: string,
  message?: RegExp,
): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof kind, `expected ${kind.name} ${code}, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    if (message) assert.match(error.message, message);
    return true;
  };
}

let server: HostileServer;
const fetcher = new HttpFetcher();
before(async () => {
  server = await startHostileServer();
});
after(async () => {
  await fetcher.close();
  await server.close();
});

describe('hostile bodies', () => {
  for (const framing of ['content-length', 'close'] as const) {
    it(`an endless body (${framing === 'close' ? 'read until close' : 'honest 50 GB Content-Length'}) is cut at the cap and the transfer stopped`, async () => {
      const path = `/endless-${framing}`;
      server.route(path, endlessBody(framing));
      const response = await fetcher.fetch(request(server.url(path)));
      assert.equal(response.status, 200);
      assert.equal(response.truncated, 'length');
      assert.equal(response.body.length, LIMITS.maxBodyBytes);
      assert.ok(response.elapsedMs < 1000, `took ${response.elapsedMs} ms`);
      // Once the server has seen the connection close, nothing more is written: then count.
      await server.closed(path);
      const written = server.stats(path).bytesWritten;
      assert.ok(written < 20 * MiB, `the server wrote ${written} bytes: the download was not stopped`);
    });
  }

  it('a server trickling one byte a second is ended by the total deadline, with what came', async () => {
    server.route('/one-byte-a-second', trickleBody(1000));
    const response = await fetcher.fetch(request(server.url('/one-byte-a-second'), { totalTimeoutMs: 3500 }));
    assert.equal(response.status, 200);
    assert.equal(response.truncated, 'time');
    assert.match(Buffer.from(response.body).toString(), /^x{2,4}$/);
    assert.ok(response.elapsedMs >= 3400 && response.elapsedMs < 4500, `took ${response.elapsedMs} ms`);
  });
});

describe('hostile response heads', () => {
  it('an endless status line ends at the headers timeout as a retryable timeout', async () => {
    server.route(
      '/endless-status',
      endless('HTTP/1.1 200 ', () => 'O'.repeat(16 * 1024)),
    );
    const started = performance.now();
    await assert.rejects(
      fetcher.fetch(request(server.url('/endless-status'), { totalTimeoutMs: 3000 })),
      expectError(RetryableError, 'timeout', /127\.0\.0\.1: no response headers/),
    );
    assert.ok(performance.now() - started < 3200);
  });

  it('an endless header block is refused at the 64 KiB header cap as a bad response', async () => {
    server.route(
      '/endless-headers',
      endless('HTTP/1.1 200 OK\r\n', (i) => `X-${i}: ${'v'.repeat(40)}\r\n`),
    );
    await assert.rejects(
      fetcher.fetch(request(server.url('/endless-headers'))),
      expectError(PermanentError, 'bad-response', /Headers Overflow/),
    );
    await server.closed('/endless-headers');
    assert.ok(server.stats('/endless-headers').bytesWritten < 16 * MiB);
  });

  it('thousands of small headers past 64 KiB, and a 70 KiB Location, are bad responses', async () => {
    const many = Array.from({ length: 6000 }, (_, i) => `X-${i}: abcdefgh\r\n`).join('');
    server.route(
      '/many-headers',
      raw(`HTTP/1.1 200 OK\r\n${many}Content-Length: 2\r\n\r\nok`, { end: false }),
    );
    server.route(
      '/huge-location',
      raw(`HTTP/1.1 302 Found\r\nLocation: /${'a'.repeat(70 * 1024)}\r\nContent-Length: 0\r\n\r\n`, {
        end: false,
      }),
    );
    for (const path of ['/many-headers', '/huge-location']) {
      await assert.rejects(
        fetcher.fetch(request(server.url(path))),
        expectError(PermanentError, 'bad-response', /Headers Overflow/),
        path,
      );
    }
  });

  it('a flood of 103 interim responses with no final one ends at the total deadline', async () => {
    server.route('/interim-flood', interimFlood(100));
    const started = performance.now();
    await assert.rejects(
      fetcher.fetch(request(server.url('/interim-flood'), { headersTimeoutMs: 5000, totalTimeoutMs: 1200 })),
      expectError(RetryableError, 'timeout', /no response headers within the 1200 ms deadline/),
    );
    assert.ok(performance.now() - started < 1700);
    assert.ok(server.stats('/interim-flood').bytesWritten > 0);
  });

  const malformed: Record<string, string> = {
    'a header line without a colon':
      'HTTP/1.1 200 OK\r\nContent-Type text/html\r\nContent-Length: 2\r\n\r\nok',
    'a space inside a header name': 'HTTP/1.1 200 OK\r\nX A: b\r\nContent-Length: 2\r\n\r\nok',
    'a space before the colon': 'HTTP/1.1 200 OK\r\nX-A : b\r\nContent-Length: 2\r\n\r\nok',
    'a NUL in a header value': 'HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 2\r\n\r\nok',
    'a bare CR in a header value': 'HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok',
    'an obsolete folded header line': 'HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok',
    'bare LF line endings': 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok',
    'an unknown HTTP version': 'HTTP/9.9 200 OK\r\nContent-Length: 2\r\n\r\nok',
    'a status code that is not a number': 'HTTP/1.1 abc Weird\r\nContent-Length: 2\r\n\r\nok',
    'a four-digit status code': 'HTTP/1.1 1000 Weird\r\nContent-Length: 2\r\n\r\nok',
    'a negative Content-Length': 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok',
  };
  for (const [what, bytes] of Object.entries(malformed)) {
    it(`${what} is a permanent bad-response, one request only`, async () => {
      const path = `/malformed-${what.replace(/\W+/g, '-')}`;
      server.route(path, raw(bytes, { end: false }));
      await assert.rejects(
        fetcher.fetch(request(server.url(path))),
        expectError(PermanentError, 'bad-response', /127\.0\.0\.1: malformed HTTP response/),
      );
      assert.equal(server.stats(path).hits, 1);
    });
  }

  // undici hides llhttp's reason for these behind UND_ERR_RES_CONTENT_LENGTH_MISMATCH; they used to be
  // retried as `connection-reset` (4 attempts, then `failed` with a misleading code).
  const framing: Record<string, string> = {
    'two different Content-Lengths': 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nokabc',
    'a repeated Content-Length': 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok',
    'a Content-Length list': 'HTTP/1.1 200 OK\r\nContent-Length: 2, 5\r\n\r\nokabc',
    'a Content-Length with junk': 'HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nok',
    'Content-Length with Transfer-Encoding (a smuggling shape)':
      'HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n',
  };
  for (const [what, bytes] of Object.entries(framing)) {
    it(`${what} is a permanent bad-response, not a retried connection reset`, async () => {
      const path = `/framing-${what.replace(/\W+/g, '-')}`;
      server.route(path, raw(bytes, { end: false }));
      await assert.rejects(
        fetcher.fetch(request(server.url(path))),
        expectError(PermanentError, 'bad-response', /framing headers refused/),
      );
    });
  }

  it('a connection closed in the middle of the headers stays a retryable connection-reset', async () => {
    server.route(
      '/cut-in-headers',
      raw('HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Cut: hal', { end: true }),
    );
    await assert.rejects(
      fetcher.fetch(request(server.url('/cut-in-headers'))),
      expectError(RetryableError, 'connection-reset', /connection closed before a response/),
    );
  });
});

describe('hostile chunked encoding', () => {
  const chunked = (rest: string): string => `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${rest}`;
  const cases: Record<string, string> = {
    'a chunk size that overflows 64 bits': chunked('ffffffffffffffffffff\r\nok\r\n0\r\n\r\n'),
    'a negative chunk size': chunked('-2\r\nok\r\n0\r\n\r\n'),
    'chunk data longer than its size': chunked('2\r\nokXX3\r\nabc\r\n0\r\n\r\n'),
    'control bytes in a chunk extension': chunked('2;\x01\x02\r\nok\r\n0\r\n\r\n'),
    'a trailer section over 64 KiB': chunked(
      `2\r\nok\r\n0\r\n${Array.from({ length: 3000 }, (_, i) => `T-${i}: ${'v'.repeat(20)}\r\n`).join('')}\r\n`,
    ),
  };
  for (const [what, bytes] of Object.entries(cases)) {
    it(`${what} is a permanent bad-response`, async () => {
      const path = `/chunked-${what.replace(/\W+/g, '-')}`;
      server.route(path, raw(bytes, { end: false }));
      await assert.rejects(
        fetcher.fetch(request(server.url(path))),
        expectError(PermanentError, 'bad-response', /127\.0\.0\.1: malformed HTTP response/),
      );
    });
  }
});

describe('decompression bombs served over HTTP', () => {
  const cases: Array<{ coding: BombCoding | 'gzip, br'; decoded: number }> = [
    { coding: 'gzip', decoded: 64 * MiB },
    { coding: 'deflate', decoded: 64 * MiB },
    { coding: 'br', decoded: 256 * MiB },
    { coding: 'gzip', decoded: 1024 * MiB },
  ];
  for (const { coding, decoded } of cases) {
    it(`a ${coding} bomb of ${decoded / MiB} MiB arrives as a few KB, stored encoded, and decodes to the cap at most`, async () => {
      const body = await bomb(coding as BombCoding, decoded);
      const path = `/bomb-${coding}-${decoded}`;
      server.route(path, encoded(body, coding));
      const response = await fetcher.fetch(request(server.url(path), { maxBodyBytes: 5 * MiB }));
      assert.equal(response.truncated, undefined);
      assert.deepEqual(
        Buffer.from(response.body),
        body,
        'the body is kept as received, content-encoding intact',
      );
      const result = decodeContent(
        response.body,
        headerValue(response.headers, 'content-encoding'),
        20 * MiB,
      );
      assert.ok(!result.ok, `${coding}: decoded ${result.ok ? result.bytes.length : 0} bytes`);
      assert.equal(result.code, body.length * 100 < 20 * MiB ? 'decompression-bomb' : 'decoded-too-large');
    });
  }

  it('a bomb nested as "gzip, br" is stopped the same way', async () => {
    const { brotliCompressSync } = await import('node:zlib');
    const body = brotliCompressSync(await bomb('gzip', 64 * MiB));
    server.route('/bomb-nested', encoded(body, 'gzip, br'));
    const response = await fetcher.fetch(request(server.url('/bomb-nested'), { maxBodyBytes: 5 * MiB }));
    const result = decodeContent(response.body, headerValue(response.headers, 'content-encoding'), 20 * MiB);
    assert.equal(result.ok ? 'ok' : result.code, 'decompression-bomb');
  });
});
