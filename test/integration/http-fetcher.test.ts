/**
 * The HTTP fetcher against real servers on 127.0.0.1. Addresses outside 127.0.0.0/8 only ever
 * appear as answers of a stub resolver, and the guard must refuse them before any connect.
 */
import assert from 'node:assert/strict';
import diagnosticsChannel from 'node:diagnostics_channel';
import { isIP, type LookupFunction } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  ACCEPT,
  ACCEPT_ENCODING,
  type FetchLimits,
  type FetchRequest,
  guardLookup,
  HttpFetcher,
  socketBlockList,
} from '../../lambdas/adapters/http-fetcher.ts';
import { FatalError, PermanentError, RetryableError } from '../../lambdas/core/base/index.ts';
import { BLOCKED_SUBNETS, blockedAddressReason } from '../../lambdas/core/urls/index.ts';
import { startConnectProxy } from '../fixtures/connect-proxy.ts';
import {
  type CountingServer,
  closedPort,
  startHttpServer,
  startRawServer,
} from '../fixtures/http-test-server.ts';

const USER_AGENT = 'serverless-crawler-test/1.0 (+https://example.invalid/bot)';
const LIMITS: FetchLimits = {
  connectTimeoutMs: 1000,
  headersTimeoutMs: 1000,
  totalTimeoutMs: 1500,
  maxBodyBytes: 1024 * 1024,
};

function request(url: string, overrides: Partial<FetchRequest> = {}): FetchRequest {
  return { url: new URL(url), userAgent: USER_AGENT, allowPrivate: true, limits: LIMITS, ...overrides };
}

/** A resolver that claims whatever `answer` says, and records what it was asked. */
function stubResolver(answer: (hostname: string, call: number) => string[] | Error) {
  const calls: string[] = [];
  const lookup: LookupFunction = (hostname, options, callback) => {
    calls.push(hostname);
    const result = answer(hostname, calls.length);
    queueMicrotask(() => {
      if (result instanceof Error) {
        callback(result, options.all ? [] : '');
        return;
      }
      const addresses = result.map((address) => ({ address, family: isIP(address) }));
      const first = addresses[0];
      if (options.all || first === undefined) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
  return { lookup, calls };
}

function expectCrawlError(
  kind: typeof PermanentError | typeof RetryableError | typeof FatalError,
  code: string,
  message?: RegExp,
): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof kind, `expected ${kind.name}, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    if (message) assert.match(error.message, message);
    return true;
  };
}

function httpHead(lines: string[]): string {
  return `${lines.join('\r\n')}\r\n\r\n`;
}

describe('HttpFetcher: responses', () => {
  const fetcher = new HttpFetcher();
  after(() => fetcher.close());

  it('returns the status, the headers as received and the exact body bytes', async () => {
    const body = Buffer.from([0x3c, 0x70, 0x3e, 0x00, 0xff, 0xfe, 0x0d, 0x0a, 0xe2, 0x82, 0xac]);
    const server = await startRawServer((socket) => {
      socket.write(
        httpHead([
          'HTTP/1.1 200 OK',
          'Content-Type: text/html; charset=utf-8',
          'X-Mixed-CASE: a  b',
          'Set-Cookie: a=1',
          'set-cookie: b=2',
          `Content-Length: ${body.length}`,
        ]),
      );
      socket.write(body);
    });
    try {
      const response = await fetcher.fetch(request(server.url('/page?q=1#frag')));
      assert.equal(response.status, 200);
      assert.equal(response.statusText, 'OK');
      assert.equal(response.httpVersion, '1.1');
      assert.deepEqual(response.headers, [
        ['Content-Type', 'text/html; charset=utf-8'],
        ['X-Mixed-CASE', 'a  b'],
        ['Set-Cookie', 'a=1'],
        ['set-cookie', 'b=2'],
        ['Content-Length', String(body.length)],
      ]);
      assert.deepEqual(Buffer.from(response.body), body);
      assert.equal(response.truncated, undefined);
      assert.equal(response.url, server.url('/page?q=1#frag'));
      assert.equal(response.remoteAddress, '127.0.0.1');
      assert.ok(response.startedAt instanceof Date);
      assert.ok(response.elapsedMs >= 0 && response.elapsedMs < LIMITS.totalTimeoutMs);
    } finally {
      await server.close();
    }
  });

  it('records the request line and headers exactly as they went on the wire', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 204 No Content']));
    });
    try {
      const response = await fetcher.fetch(
        request(server.url('/a/b%20c?x=1&y=%C3%A9#ignored'), { headers: { 'If-None-Match': '"v1"' } }),
      );
      assert.equal(response.status, 204);
      assert.equal(response.requestLine, 'GET /a/b%20c?x=1&y=%C3%A9 HTTP/1.1');
      const recorded = `${response.requestLine}\r\n${response.requestHeaders
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n`;
      assert.equal(recorded, server.requests[0]);
      const sent = new Map(response.requestHeaders.map(([name, value]) => [name.toLowerCase(), value]));
      assert.equal(sent.get('host'), `127.0.0.1:${server.port}`);
      assert.equal(sent.get('user-agent'), USER_AGENT);
      assert.equal(sent.get('accept'), ACCEPT);
      assert.equal(sent.get('accept-encoding'), ACCEPT_ENCODING);
      assert.equal(sent.get('if-none-match'), '"v1"');
    } finally {
      await server.close();
    }
  });

  it('says when the request really left: a busy event loop delays the send, and sentAt shows it', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 204 No Content']));
    });
    try {
      const called = Date.now();
      const pending = fetcher.fetch(request(server.url('/late')));
      // The event loop is busy right after the call (a loaded invocation): nothing can be written yet.
      while (Date.now() - called < 300) {}
      const response = await pending;
      const answered = Date.now();
      assert.ok(response.sentAt !== undefined, 'sentAt is reported');
      assert.ok(
        response.sentAt >= called + 300,
        `sent at +${response.sentAt - called} ms, after the busy loop`,
      );
      assert.ok(response.sentAt <= answered);
    } finally {
      await server.close();
    }
  });

  it('never sends nor returns the userinfo of the URL', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 204 No Content']));
    });
    try {
      const withSecret = server.url('/private?x=1').replace('http://', 'http://user:s3cret@');
      assert.equal(new URL(withSecret).password, 's3cret');
      const response = await fetcher.fetch(request(withSecret));
      assert.equal(response.status, 204);
      const head = server.requests[0] ?? '';
      assert.match(head, /^GET \/private\?x=1 HTTP\/1\.1\r\n/);
      assert.doesNotMatch(head, /^authorization:/im);
      assert.doesNotMatch(head, /user:|s3cret|dXNlcjpzM2NyZXQ/); // nor its Basic form
      assert.equal(response.requestLine, 'GET /private?x=1 HTTP/1.1');
      assert.ok(!response.requestHeaders.some(([name]) => name.toLowerCase() === 'authorization'));
      assert.equal(response.url, server.url('/private?x=1'));
    } finally {
      await server.close();
    }
  });

  it('sends the configured User-Agent', async () => {
    const seen: Array<string | undefined> = [];
    const server = await startHttpServer((req, res) => {
      seen.push(req.headers['user-agent']);
      res.end('ok');
    });
    try {
      await fetcher.fetch(request(server.url('/'), { userAgent: 'OtherBot/2.0' }));
      await fetcher.fetch(request(server.url('/')));
      assert.deepEqual(seen, ['OtherBot/2.0', USER_AGENT]);
    } finally {
      await server.close();
    }
  });

  it('skips interim 1xx responses and returns the final one', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 103 Early Hints', 'Link: </style.css>; rel=preload']));
      socket.write(httpHead(['HTTP/1.1 200 OK', 'Content-Length: 4']));
      socket.write('done');
    });
    try {
      const response = await fetcher.fetch(request(server.url('/')));
      assert.equal(response.status, 200);
      assert.deepEqual(response.headers, [['Content-Length', '4']]);
      assert.equal(Buffer.from(response.body).toString(), 'done');
    } finally {
      await server.close();
    }
  });

  it('reads a body delimited by the server closing the connection', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 200 OK', 'Connection: close']));
      socket.end('until the end');
    });
    try {
      const response = await fetcher.fetch(request(server.url('/')));
      assert.equal(Buffer.from(response.body).toString(), 'until the end');
      assert.equal(response.truncated, undefined);
    } finally {
      await server.close();
    }
  });

  it('refuses to let callers set headers the fetcher owns', async () => {
    await assert.rejects(
      fetcher.fetch(request('http://127.0.0.1:9/', { headers: { Host: 'elsewhere.example' } })),
      expectCrawlError(FatalError, 'invalid-header', /Host/),
    );
  });

  it('keeps a gzip body encoded, byte for byte', async () => {
    const html = `<html><body>${'hello crawler '.repeat(200)}</body></html>`;
    const gzipped = gzipSync(html);
    const server = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Encoding': 'gzip' });
      res.end(gzipped);
    });
    try {
      const response = await fetcher.fetch(request(server.url('/')));
      assert.deepEqual(Buffer.from(response.body), gzipped);
      assert.equal(gunzipSync(response.body).toString('utf8'), html);
      assert.deepEqual(
        response.headers.find(([name]) => name.toLowerCase() === 'content-encoding'),
        ['Content-Encoding', 'gzip'],
      );
    } finally {
      await server.close();
    }
  });

  it('returns 404 and 503 as responses, with their bodies', async () => {
    const server = await startHttpServer((req, res) => {
      const status = req.url === '/missing' ? 404 : 503;
      res.writeHead(status, { 'Retry-After': '120' });
      res.end(`status ${status}`);
    });
    try {
      const missing = await fetcher.fetch(request(server.url('/missing')));
      assert.equal(missing.status, 404);
      assert.equal(missing.statusText, 'Not Found');
      assert.equal(Buffer.from(missing.body).toString(), 'status 404');
      const unavailable = await fetcher.fetch(request(server.url('/busy')));
      assert.equal(unavailable.status, 503);
      assert.equal(unavailable.statusText, 'Service Unavailable');
      assert.equal(Buffer.from(unavailable.body).toString(), 'status 503');
    } finally {
      await server.close();
    }
  });

  it('returns a redirect without following it', async () => {
    const server = await startHttpServer((req, res) => {
      if (req.url === '/start') {
        res.writeHead(301, { Location: '/target' });
        res.end('moved');
      } else {
        res.end('target');
      }
    });
    try {
      const response = await fetcher.fetch(request(server.url('/start')));
      assert.equal(response.status, 301);
      assert.deepEqual(
        response.headers.find(([name]) => name.toLowerCase() === 'location'),
        ['Location', '/target'],
      );
      assert.equal(server.requests.length, 1);
      assert.match(server.requests[0] ?? '', /^GET \/start /);
    } finally {
      await server.close();
    }
  });

  it('reuses the keep-alive connection, and applies the guard per request', async () => {
    const server = await startHttpServer((_req, res) => res.end('ok'));
    try {
      await fetcher.fetch(request(server.url('/one')));
      await fetcher.fetch(request(server.url('/two')));
      assert.equal(server.connections, 1);
      await assert.rejects(
        fetcher.fetch(request(server.url('/three'), { allowPrivate: false })),
        expectCrawlError(PermanentError, 'address-blocked'),
      );
      assert.equal(server.requests.length, 2);
      assert.equal(server.connections, 1);
    } finally {
      await server.close();
    }
  });

  it('refuses schemes other than http and https', async () => {
    for (const url of ['ftp://127.0.0.1/file', 'file:///etc/passwd', 'data:text/html,hi']) {
      await assert.rejects(
        fetcher.fetch(request(url)),
        expectCrawlError(PermanentError, 'unsupported-scheme', /only http and https/),
      );
    }
  });
});

describe('HttpFetcher: address guard', () => {
  let server: CountingServer;
  before(async () => {
    server = await startHttpServer((_req, res) => res.end('local'));
  });
  after(() => server.close());

  it('blocks loopback without allowPrivate, with no connection made, and allows it with', async () => {
    const fetcher = new HttpFetcher();
    try {
      await assert.rejects(
        fetcher.fetch(request(server.url('/'), { allowPrivate: false })),
        (error: unknown) => {
          assert.ok(error instanceof PermanentError);
          assert.equal(error.outcome, 'blocked');
          assert.equal(error.code, 'address-blocked');
          assert.match(error.message, /^address not allowed: 127\.0\.0\.1 /);
          assert.match(error.message, /loopback \(127\.0\.0\.0\/8\)/);
          assert.match(error.message, /--allow-private/);
          return true;
        },
      );
      // `localhost` goes through the real resolver (/etc/hosts), then the guard.
      await assert.rejects(
        fetcher.fetch(request(`http://localhost:${server.port}/`, { allowPrivate: false })),
        expectCrawlError(
          PermanentError,
          'address-blocked',
          /localhost resolves to (127\.0\.0\.1|::1) \(loopback/,
        ),
      );
      assert.equal(server.connections, 0);

      const allowed = await fetcher.fetch(request(server.url('/'), { allowPrivate: true }));
      assert.equal(allowed.status, 200);
      assert.equal(Buffer.from(allowed.body).toString(), 'local');
      assert.equal(server.connections, 1);
    } finally {
      await fetcher.close();
    }
  });

  it('blocks every IP-literal spelling of loopback before connecting', async () => {
    const before = server.connections;
    const fetcher = new HttpFetcher();
    try {
      for (const url of [
        `http://2130706433:${server.port}/`,
        `http://0x7f.0.0.1:${server.port}/`,
        `http://0x7f.1:${server.port}/`,
        `http://0177.0.0.1:${server.port}/`,
        `http://127.1:${server.port}/`,
        `http://[::ffff:127.0.0.1]:${server.port}/`,
        `http://[::ffff:7f00:1]:${server.port}/`,
        `http://[::1]:${server.port}/`,
        `https://127.0.0.1:${server.port}/`,
      ]) {
        await assert.rejects(
          fetcher.fetch(request(url, { allowPrivate: false })),
          expectCrawlError(PermanentError, 'address-blocked', /loopback/),
          url,
        );
      }
      assert.equal(server.connections, before);
    } finally {
      await fetcher.close();
    }
  });

  it('checks what the resolver answers: metadata, private, ULA and all-blocked answers are refused', async () => {
    const answers: Record<string, string[]> = {
      'metadata.test': ['169.254.169.254'],
      'private.test': ['10.0.0.1'],
      'cgnat.test': ['100.64.0.1'],
      'imds6.test': ['fd00:ec2::254'],
      'mapped.test': ['::ffff:169.254.169.254'],
      'all-blocked.test': ['10.0.0.1', '192.168.1.1', '127.0.0.1'],
    };
    const expected: Record<string, RegExp> = {
      'metadata.test':
        /metadata\.test resolves to 169\.254\.169\.254 \(link-local \(169\.254\.0\.0\/16\), cloud metadata/,
      'private.test': /private\.test resolves to 10\.0\.0\.1 \(private \(10\.0\.0\.0\/8\)\)/,
      'cgnat.test': /100\.64\.0\.0\/10/,
      'imds6.test': /imds6\.test resolves to fd00:ec2::254 \(unique local \(fc00::\/7\), AWS metadata/,
      'mapped.test': /IPv4-mapped/,
      'all-blocked.test': /all-blocked\.test resolves to 10\.0\.0\.1/,
    };
    const stub = stubResolver((hostname) => answers[hostname] ?? new Error('unexpected name'));
    const fetcher = new HttpFetcher({ lookup: stub.lookup });
    try {
      for (const [name, pattern] of Object.entries(expected)) {
        await assert.rejects(
          fetcher.fetch(request(`http://${name}:${server.port}/`, { allowPrivate: false })),
          expectCrawlError(PermanentError, 'address-blocked', pattern),
          name,
        );
      }
      // The check ran on the resolver's answers (inside connect), once per name.
      assert.deepEqual(stub.calls, Object.keys(expected));
    } finally {
      await fetcher.close();
    }
  });

  it('refuses metadata service names by name, without a lookup, under both policies', async () => {
    // Were the names looked up, they would reach the test server.
    const stub = stubResolver(() => ['127.0.0.1']);
    const before = server.connections;
    for (const [fetcher, allowPrivate, hint] of [
      [new HttpFetcher({ lookup: stub.lookup }), false, /crawl with --allow-private to permit/],
      [new HttpFetcher({ lookup: stub.lookup, refuseHostLocal: true }), true, /on Lambda/],
    ] as const) {
      try {
        for (const name of [
          'metadata.google.internal',
          'METADATA.goog.',
          'metadata',
          'instance-data.ec2.internal',
        ]) {
          await assert.rejects(
            fetcher.fetch(request(`http://${name}:${server.port}/computeMetadata/v1/`, { allowPrivate })),
            expectCrawlError(PermanentError, 'address-blocked', /\(cloud metadata service name\)/),
            name,
          );
          await assert.rejects(
            fetcher.fetch(request(`http://${name}:${server.port}/`, { allowPrivate })),
            expectCrawlError(PermanentError, 'address-blocked', hint),
            name,
          );
        }
      } finally {
        await fetcher.close();
      }
    }
    assert.deepEqual(stub.calls, [], 'no name was looked up');
    assert.equal(server.connections, before, 'no connection made');
  });

  it("inside Lambda (refuseHostLocal) --allow-private still never reaches this machine's own addresses", async () => {
    const stub = stubResolver(() => ['127.0.0.1']);
    const fetcher = new HttpFetcher({ lookup: stub.lookup, refuseHostLocal: true });
    const before = server.connections;
    try {
      for (const url of [
        server.url('/'),
        `http://[::1]:${server.port}/`,
        `http://169.254.169.254/latest/meta-data/`,
        `http://0.0.0.0:${server.port}/`,
      ]) {
        await assert.rejects(
          fetcher.fetch(request(url, { allowPrivate: true })),
          expectCrawlError(PermanentError, 'address-blocked', /on Lambda this machine's own addresses/),
          url,
        );
      }
      // A name is judged by what it resolves to, inside connect.
      await assert.rejects(
        fetcher.fetch(request(`http://internal.test:${server.port}/`, { allowPrivate: true })),
        expectCrawlError(
          PermanentError,
          'address-blocked',
          /internal\.test resolves to 127\.0\.0\.1 \(loopback/,
        ),
      );
      assert.deepEqual(stub.calls, ['internal.test']);
      assert.equal(server.connections, before, 'no connection made');
    } finally {
      await fetcher.close();
    }
    // The same request outside Lambda is a local crawl, and is allowed.
    const local = new HttpFetcher();
    try {
      assert.equal((await local.fetch(request(server.url('/'), { allowPrivate: true }))).status, 200);
    } finally {
      await local.close();
    }
  });

  it('checks the address actually dialled, so DNS rebinding is caught', async () => {
    // First answer public (what a check-then-fetch crawler would have approved), later answers
    // loopback: the name points at the local counting server, so a guard failure lands there.
    const stub = stubResolver((_hostname, call) => (call === 1 ? ['93.184.216.34'] : ['127.0.0.1']));
    const fetcher = new HttpFetcher({ lookup: stub.lookup });
    const before = server.connections;
    try {
      const precheck = await new Promise<unknown>((resolve) =>
        stub.lookup('rebind.test', { all: true }, (_error, addresses) => resolve(addresses)),
      );
      assert.deepEqual(precheck, [{ address: '93.184.216.34', family: 4 }]);
      await assert.rejects(
        fetcher.fetch(request(`http://rebind.test:${server.port}/`, { allowPrivate: false })),
        expectCrawlError(
          PermanentError,
          'address-blocked',
          /rebind\.test resolves to 127\.0\.0\.1 \(loopback/,
        ),
      );
      assert.equal(stub.calls.length, 2);
      assert.equal(server.connections, before);

      // The same name with the guard off really lands on the local server.
      const allowed = await fetcher.fetch(
        request(`http://rebind.test:${server.port}/`, { allowPrivate: true }),
      );
      assert.equal(Buffer.from(allowed.body).toString(), 'local');
      assert.equal(allowed.remoteAddress, '127.0.0.1');
      assert.equal(server.connections, before + 1);
      assert.match(
        server.requests.at(-1) ?? '',
        new RegExp(`\\r\\nhost: rebind\\.test:${server.port}\\r\\n`, 'i'),
      );
    } finally {
      await fetcher.close();
    }
  });

  it('drops blocked addresses from a mixed answer and dials only the public ones (no connection made)', async () => {
    const stub = stubResolver(() => ['127.0.0.1', '93.184.216.34', '10.0.0.1', '2606:4700::1111']);
    const guarded = guardLookup(stub.lookup);
    const all = await new Promise<unknown>((resolve, reject) =>
      guarded('mixed.test', { all: true }, (error, addresses) =>
        error ? reject(error) : resolve(addresses),
      ),
    );
    assert.deepEqual(all, [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
    const one = await new Promise<unknown>((resolve, reject) =>
      guarded('mixed.test', {}, (error, address, family) =>
        error ? reject(error) : resolve([address, family]),
      ),
    );
    assert.deepEqual(one, ['93.184.216.34', 4]);
  });

  it('backs the lookup check with a socket BlockList that blocks only what the guard blocks', () => {
    const list = socketBlockList();
    for (const subnet of BLOCKED_SUBNETS) {
      assert.ok(list.check(subnet.network, subnet.family), `${subnet.network}/${subnet.prefix}`);
      assert.notEqual(blockedAddressReason(subnet.network), undefined, subnet.network);
    }
    for (const ip of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700::1111', '2a00:1450:4001:80b::200e']) {
      assert.equal(list.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4'), false, ip);
    }
    assert.ok(list.check('::ffff:127.0.0.1', 'ipv6'));
  });
});

describe('HttpFetcher: limits', () => {
  const fetcher = new HttpFetcher();
  after(() => fetcher.close());
  const capped: FetchLimits = { ...LIMITS, maxBodyBytes: 100_000 };
  const pattern = (length: number): Buffer => Buffer.from(Array.from({ length }, (_, i) => i % 251));

  it('cuts a chunked body at maxBodyBytes and drops the connection', async () => {
    const chunk = pattern(16 * 1024);
    let written = 0;
    const server = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      const pump = (): void => {
        while (!res.destroyed && written < 50_000_000) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    });
    try {
      const response = await fetcher.fetch(request(server.url('/big'), { limits: capped }));
      assert.equal(response.truncated, 'length');
      assert.equal(response.body.length, 100_000);
      assert.deepEqual(Buffer.from(response.body), Buffer.concat(Array(7).fill(chunk)).subarray(0, 100_000));
      assert.ok(response.elapsedMs < 1000, `took ${response.elapsedMs} ms`);
      assert.ok(written < 10_000_000, `server wrote ${written} bytes: the stream was not stopped`);
    } finally {
      await server.close();
    }
  });

  it('cuts at maxBodyBytes even when Content-Length claims far more than is sent', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 200 OK', 'Content-Length: 50000000000']));
      socket.write(pattern(150_000)); // then nothing: waiting for the declared length would hang
    });
    try {
      const response = await fetcher.fetch(request(server.url('/'), { limits: capped }));
      assert.equal(response.truncated, 'length');
      assert.deepEqual(Buffer.from(response.body), pattern(100_000));
      assert.ok(response.elapsedMs < 1000, `took ${response.elapsedMs} ms`);
    } finally {
      await server.close();
    }
  });

  it('keeps only the declared length when Content-Length claims less than is sent', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 200 OK', 'Content-Length: 10']));
      socket.write(pattern(200_000));
    });
    try {
      const response = await fetcher.fetch(request(server.url('/'), { limits: capped }));
      assert.equal(response.truncated, undefined);
      assert.deepEqual(Buffer.from(response.body), pattern(10));
    } finally {
      await server.close();
    }
  });

  it('a body of exactly maxBodyBytes is complete, not truncated', async () => {
    const server = await startHttpServer((_req, res) => res.end(pattern(100_000)));
    try {
      const response = await fetcher.fetch(request(server.url('/'), { limits: capped }));
      assert.equal(response.truncated, undefined);
      assert.equal(response.body.length, 100_000);
    } finally {
      await server.close();
    }
  });

  it('ends a trickling body at the total deadline with what was read', async () => {
    const timers = new Set<NodeJS.Timeout>();
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 200 OK', 'Transfer-Encoding: chunked']));
      const timer = setInterval(() => socket.write('1\r\nx\r\n'), 100);
      timers.add(timer);
      socket.on('close', () => clearInterval(timer));
    });
    try {
      const limits: FetchLimits = { ...LIMITS, totalTimeoutMs: 600 };
      const response = await fetcher.fetch(request(server.url('/slow'), { limits }));
      assert.equal(response.truncated, 'time');
      assert.equal(response.status, 200);
      assert.ok(response.body.length >= 1 && response.body.length <= 7, `read ${response.body.length} bytes`);
      assert.match(Buffer.from(response.body).toString(), /^x+$/);
      assert.ok(response.elapsedMs >= 550 && response.elapsedMs < 1200, `took ${response.elapsedMs} ms`);
    } finally {
      for (const timer of timers) clearInterval(timer);
      await server.close();
    }
  });

  it('ends trickling response headers at the total deadline with a timeout error', async () => {
    const timers = new Set<NodeJS.Timeout>();
    const server = await startRawServer((socket) => {
      const head = `HTTP/1.1 200 OK\r\nX-Slow: ${'y'.repeat(1000)}\r\n\r\n`;
      let at = 0;
      const timer = setInterval(() => socket.write(head[at++] ?? ''), 50);
      timers.add(timer);
      socket.on('close', () => clearInterval(timer));
    });
    try {
      const limits: FetchLimits = { ...LIMITS, headersTimeoutMs: 1000, totalTimeoutMs: 500 };
      const started = performance.now();
      await assert.rejects(
        fetcher.fetch(request(server.url('/'), { limits })),
        expectCrawlError(
          RetryableError,
          'timeout',
          /127\.0\.0\.1: no response headers within the 500 ms deadline/,
        ),
      );
      assert.ok(performance.now() - started < 1100);
    } finally {
      for (const timer of timers) clearInterval(timer);
      await server.close();
    }
  });

  it('ends a stalled body at the body timeout with what was read', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 200 OK', 'Content-Length: 5000']));
      socket.write('partial');
    });
    try {
      // undici's inactivity timers tick at about 0.5 s: a 300 ms timeout fires within ~1.5 s.
      const limits: FetchLimits = { ...LIMITS, bodyTimeoutMs: 300, totalTimeoutMs: 4000 };
      const response = await fetcher.fetch(request(server.url('/'), { limits }));
      assert.equal(response.truncated, 'time');
      assert.equal(Buffer.from(response.body).toString(), 'partial');
      assert.ok(response.elapsedMs >= 250 && response.elapsedMs < 2500, `took ${response.elapsedMs} ms`);
    } finally {
      await server.close();
    }
  });

  it('times out on a server that accepts and never answers', async () => {
    const server = await startRawServer(() => {});
    try {
      // undici's inactivity timers tick at about 0.5 s: a 300 ms timeout fires within ~1.5 s.
      const limits: FetchLimits = { ...LIMITS, headersTimeoutMs: 300, totalTimeoutMs: 4000 };
      const started = performance.now();
      await assert.rejects(
        fetcher.fetch(request(server.url('/'), { limits })),
        expectCrawlError(RetryableError, 'timeout', /127\.0\.0\.1: no response headers within 300 ms/),
      );
      const elapsed = performance.now() - started;
      assert.ok(elapsed >= 250 && elapsed < 2500, `took ${elapsed} ms`);
      assert.equal(server.connections, 1);
    } finally {
      await server.close();
    }
  });
});

describe('HttpFetcher: network and protocol errors', () => {
  const fetcher = new HttpFetcher();
  after(() => fetcher.close());

  it('reports a connection reset mid-body as retryable', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 200 OK', 'Content-Length: 100000']));
      socket.write(Buffer.alloc(1000, 0x61), () => setTimeout(() => socket.resetAndDestroy(), 20));
    });
    try {
      await assert.rejects(
        fetcher.fetch(request(server.url('/'))),
        expectCrawlError(RetryableError, 'connection-reset', /127\.0\.0\.1: connection lost mid-body/),
      );
    } finally {
      await server.close();
    }
  });

  for (const connection of ['keep-alive', 'close']) {
    it(`reports a chunked body cut short by the server closing (Connection: ${connection}) as retryable`, async () => {
      const server = await startRawServer((socket) => {
        socket.write(
          httpHead(['HTTP/1.1 200 OK', 'Transfer-Encoding: chunked', `Connection: ${connection}`]),
        );
        socket.end('5\r\nhello\r\n5\r\nwor');
      });
      try {
        await assert.rejects(
          fetcher.fetch(request(server.url('/'))),
          expectCrawlError(RetryableError, 'connection-reset', /127\.0\.0\.1: connection lost mid-body/),
        );
      } finally {
        await server.close();
      }
    });
  }

  it('reports a connection closed before any response as retryable', async () => {
    const server = await startRawServer((socket) => socket.destroy());
    try {
      await assert.rejects(
        fetcher.fetch(request(server.url('/'))),
        expectCrawlError(RetryableError, 'connection-reset', /127\.0\.0\.1/),
      );
    } finally {
      await server.close();
    }
  });

  it('reports invalid chunked encoding as a bad response', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 200 OK', 'Transfer-Encoding: chunked']));
      socket.write('zz\r\nhello\r\n0\r\n\r\n');
    });
    try {
      await assert.rejects(
        fetcher.fetch(request(server.url('/'))),
        expectCrawlError(PermanentError, 'bad-response', /127\.0\.0\.1: malformed HTTP response/),
      );
    } finally {
      await server.close();
    }
  });

  it('reports a garbage status line as a bad response', async () => {
    const server = await startRawServer((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n'));
    try {
      await assert.rejects(
        fetcher.fetch(request(server.url('/'))),
        expectCrawlError(PermanentError, 'bad-response', /127\.0\.0\.1/),
      );
    } finally {
      await server.close();
    }
  });

  it('reports oversized response headers as a bad response', async () => {
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 200 OK', `X-Huge: ${'h'.repeat(70 * 1024)}`, 'Content-Length: 0']));
    });
    try {
      await assert.rejects(
        fetcher.fetch(request(server.url('/'))),
        expectCrawlError(PermanentError, 'bad-response', /127\.0\.0\.1/),
      );
    } finally {
      await server.close();
    }
  });

  it('reports https to a server that does not speak TLS as a permanent tls-failed', async () => {
    const server = await startRawServer(
      () => {},
      (socket) => socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n')),
    );
    try {
      await assert.rejects(
        fetcher.fetch(request(`https://127.0.0.1:${server.port}/`)),
        expectCrawlError(PermanentError, 'tls-failed', /127\.0\.0\.1: TLS failed/),
      );
    } finally {
      await server.close();
    }
  });

  it('reports a refused connection as retryable connect-failed', async () => {
    const port = await closedPort();
    await assert.rejects(
      fetcher.fetch(request(`http://127.0.0.1:${port}/`)),
      expectCrawlError(RetryableError, 'connect-failed', /127\.0\.0\.1: connect failed.*ECONNREFUSED/),
    );
  });

  it('reports a name that does not resolve as retryable dns-failed', async () => {
    const stub = stubResolver((hostname) =>
      Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
        code: 'ENOTFOUND',
        syscall: 'getaddrinfo',
      }),
    );
    const withStub = new HttpFetcher({ lookup: stub.lookup });
    try {
      for (const allowPrivate of [false, true]) {
        await assert.rejects(
          withStub.fetch(request('http://no-such-host.test/', { allowPrivate })),
          expectCrawlError(RetryableError, 'dns-failed', /no-such-host\.test: DNS lookup failed/),
        );
      }
    } finally {
      await withStub.close();
    }
  });
});

/** A response's request record as the header block it says went on the wire. */
function recordedBlock(response: { requestLine: string; requestHeaders: Array<[string, string]> }): string {
  const headers = response.requestHeaders.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `${response.requestLine}\r\n${headers}\r\n`;
}

describe('HttpFetcher: what went on the wire, per request', () => {
  const sendHeaders = diagnosticsChannel.channel('undici:client:sendHeaders');

  it('gives each of many concurrent requests its own header block: two fetchers, one origin and path, direct and through a proxy', async () => {
    const server = await startRawServer((socket) => {
      // Answered late, so that the requests overlap and several connections are open at once.
      setTimeout(() => socket.write(httpHead(['HTTP/1.1 200 OK', 'Content-Length: 0'])), 20);
    });
    const proxy = await startConnectProxy();
    const one = new HttpFetcher({ connectionsPerOrigin: 4 });
    const two = new HttpFetcher({ connectionsPerOrigin: 4 });
    try {
      const responses = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          (i % 2 === 0 ? one : two).fetch(
            request(server.url('/same?q=1'), {
              headers: { 'x-probe': String(i) },
              ...(i % 3 === 0 ? { proxy: { url: proxy.url } } : {}),
            }),
          ),
        ),
      );
      assert.equal(server.requests.length, 24);
      assert.ok(proxy.connects.length > 0, 'some requests went through the proxy');
      responses.forEach((response, i) => {
        const recorded = recordedBlock(response);
        assert.ok(server.requests.includes(recorded), `request ${i}: its record is a block the server got`);
        assert.ok(recorded.includes(`\r\nx-probe: ${i}\r\n`), `request ${i}: the block is its own`);
        assert.equal(response.requestLine, 'GET /same?q=1 HTTP/1.1');
        // Through the proxy the socket written to is the tunnel, whose far end is the proxy.
        assert.equal(response.remoteAddress, '127.0.0.1');
        assert.ok(response.sentAt !== undefined, `request ${i}: sentAt`);
      });
    } finally {
      await Promise.all([one.close(), two.close()]);
      await proxy.close();
      await server.close();
    }
  });

  it("listens to undici's channel only while a request is sent: nothing on import, nothing left by a fetcher never closed", async () => {
    assert.equal(sendHeaders.hasSubscribers, false, 'importing the fetcher subscribed to nothing');
    const server = await startRawServer((socket) => {
      socket.write(httpHead(['HTTP/1.1 204 No Content']));
    });
    const open = new HttpFetcher();
    try {
      const responses = await Promise.all([
        open.fetch(request(server.url('/a'))),
        open.fetch(request(server.url('/b'))),
      ]);
      assert.deepEqual(
        responses.map((response) => response.requestLine),
        ['GET /a HTTP/1.1', 'GET /b HTTP/1.1'],
      );
      assert.equal(sendHeaders.hasSubscribers, false, 'no listener outlives its request');
    } finally {
      await open.close();
      await server.close();
    }
  });
});

describe('HttpFetcher through a proxy, inside Lambda', () => {
  it('never dials a proxy on this machine, even one named by the crawl: the socket refuses it', async () => {
    const proxy = await startConnectProxy();
    const fetcher = new HttpFetcher({ refuseHostLocal: true });
    try {
      await assert.rejects(
        fetcher.fetch(
          request('http://93.184.215.14/page', { allowPrivate: true, proxy: { url: proxy.url } }),
        ),
        (error) => {
          assert.ok(error instanceof PermanentError, String(error));
          assert.equal(error.code, 'address-blocked');
          return true;
        },
      );
      assert.equal(proxy.connects.length, 0, 'the proxy on 127.0.0.1 was never reached');
    } finally {
      await fetcher.close();
      await proxy.close();
    }
  });
});
