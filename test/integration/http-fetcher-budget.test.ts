/**
 * The fetcher's body byte budget against real servers on 127.0.0.1: the bytes held by concurrent
 * responses stay within the budget plus one body, every response still completes, a waiting response
 * is cut at its total deadline, and every path gives its bytes back.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type FetchLimits, type FetchRequest, HttpFetcher } from '../../lambdas/adapters/http-fetcher.ts';
import { RetryableError } from '../../lambdas/core/base/index.ts';
import { BodyBudget } from '../../lambdas/core/fetch/index.ts';
import { type CountingServer, startHttpServer, startRawServer } from '../fixtures/http-test-server.ts';

const MiB = 1024 * 1024;
const CAP = 5 * MiB;
const LIMITS: FetchLimits = {
  connectTimeoutMs: 2000,
  headersTimeoutMs: 10_000,
  totalTimeoutMs: 60_000,
  maxBodyBytes: CAP,
};

function request(url: string, limits: Partial<FetchLimits> = {}): FetchRequest {
  return {
    url: new URL(url),
    userAgent: 'budget-test/1.0',
    allowPrivate: true,
    limits: { ...LIMITS, ...limits },
  };
}

/** Bytes 0..n-1 of a fixed pseudo-random stream (incompressible, so nothing is shared by accident). */
function content(n: number): Buffer {
  const bytes = Buffer.alloc(n);
  let state = 12345;
  for (let i = 0; i < n; i += 4) {
    state = (state * 1103515245 + 12345) >>> 0;
    bytes.writeUInt32LE(state, i);
  }
  return bytes;
}

const BIG = content(6 * MiB);
const sha1 = (bytes: Uint8Array) => createHash('sha1').update(bytes).digest('hex');
const AT_CAP_SHA1 = sha1(BIG.subarray(0, CAP));

describe('HttpFetcher: body budget', () => {
  let server: CountingServer;
  before(async () => {
    server = await startHttpServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const size = Number(url.searchParams.get('size') ?? CAP);
      if (url.pathname === '/chunked') {
        // No Content-Length: nothing to size the reservation by but the cap.
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(BIG.subarray(0, size));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
      res.end(BIG.subarray(0, size));
    });
  });
  after(() => server.close());

  it('completes 64 concurrent responses at the cap, the bytes held never past budget + one body', async () => {
    const max = 16 * MiB;
    const fetcher = new HttpFetcher({ connectionsPerOrigin: 64, maxBufferedBodyBytes: max });
    const budget = fetcher.bodyBudget!;
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 64 }, async (_, i) => {
          // Half exactly at the cap with a Content-Length, half over it and chunked (cut at the cap).
          const path = i % 2 === 0 ? `/fixed?size=${CAP}&i=${i}` : `/chunked?size=${6 * MiB}&i=${i}`;
          const response = await fetcher.fetch(request(server.url(path)));
          return {
            bytes: response.body.byteLength,
            sha1: sha1(response.body),
            truncated: response.truncated,
          };
        }),
      );
      for (const [i, outcome] of outcomes.entries()) {
        assert.equal(outcome.bytes, CAP, `response ${i}`);
        assert.equal(outcome.sha1, AT_CAP_SHA1, `response ${i}: body bytes`);
        assert.equal(outcome.truncated, i % 2 === 0 ? undefined : 'length', `response ${i}`);
      }
      assert.ok(budget.waits > 0, 'no response ever waited: the test does not exercise the budget');
      assert.ok(budget.peakBytes <= max + CAP, `peak ${budget.peakBytes} > ${max} + ${CAP}`);
      assert.equal(budget.usedBytes, 0);
      assert.equal(budget.waiting, 0);
    } finally {
      await fetcher.close();
    }
  });

  it('keeps bodies fetched inside a hold charged until it is released, and still makes progress', async () => {
    const max = 4 * MiB;
    const budget = new BodyBudget(max);
    const fetcher = new HttpFetcher({ connectionsPerOrigin: 16, bodyBudget: budget });
    let heldAtOnce = 0;
    try {
      const sizes = await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          const hold = budget.hold();
          try {
            const response = await hold.run(() =>
              fetcher.fetch(request(server.url(`/fixed?size=${MiB}&i=${i}`))),
            );
            assert.equal(hold.bytes, MiB, 'the body is charged to the hold');
            heldAtOnce = Math.max(heldAtOnce, budget.usedBytes);
            // E.g. link extraction and the WARC write, before the body is dropped.
            for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
            return response.body.byteLength;
          } finally {
            hold.release();
          }
        }),
      );
      assert.deepEqual(sizes, Array(24).fill(MiB));
      assert.ok(heldAtOnce >= 2 * MiB, `held at once: ${heldAtOnce}`);
      assert.ok(budget.peakBytes <= max + CAP, `peak ${budget.peakBytes}`);
      assert.equal(budget.usedBytes, 0);
    } finally {
      await fetcher.close();
    }
  });

  it('cuts a response waiting for the budget at its total deadline, not at the body timeout', async () => {
    const budget = new BodyBudget(256 * 1024);
    const fetcher = new HttpFetcher({ connectionsPerOrigin: 4, bodyBudget: budget });
    const hold = budget.hold();
    try {
      // Overdraws, and its body stays held (a caller that has not released it yet).
      const first = await hold.run(() => fetcher.fetch(request(server.url(`/fixed?size=${MiB}&a`))));
      assert.equal(first.body.byteLength, MiB);
      const started = performance.now();
      const waiting = await fetcher.fetch(
        request(server.url(`/fixed?size=${MiB}&b`), {
          totalTimeoutMs: 600,
          headersTimeoutMs: 150,
          bodyTimeoutMs: 150,
        }),
      );
      const elapsed = performance.now() - started;
      assert.equal(waiting.status, 200);
      assert.equal(waiting.truncated, 'time');
      assert.equal(waiting.body.byteLength, 0, 'nothing was read while it waited');
      assert.ok(elapsed >= 550, `cut after ${elapsed.toFixed(0)} ms: the body timer ran while paused`);
      assert.equal(budget.waiting, 0);
      assert.equal(budget.usedBytes, MiB, 'only the held body is charged');
      hold.release();
      assert.equal(budget.usedBytes, 0);
      // The budget is free again: the next response goes through.
      const next = await fetcher.fetch(request(server.url(`/fixed?size=${MiB}&c`)));
      assert.equal(next.body.byteLength, MiB);
      assert.equal(budget.usedBytes, 0);
    } finally {
      hold.release();
      await fetcher.close();
    }
  });

  it('gives the bytes back when a response fails mid-body or is cut, also one that was waiting', async () => {
    let resetSoon!: () => void;
    const resetSoonDone = new Promise<void>((resolve) => {
      resetSoon = resolve;
    });
    const raw = await startRawServer((socket, head) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2097152\r\n\r\n');
      if (head.startsWith('GET /reset-soon')) {
        socket.write(BIG.subarray(0, 1000), () =>
          setTimeout(() => {
            socket.destroy();
            resetSoon();
          }, 200),
        );
        return;
      }
      socket.write(BIG.subarray(0, 600 * 1024), () => setTimeout(() => socket.destroy(), 50));
    });
    const budget = new BodyBudget(256 * 1024);
    const fetcher = new HttpFetcher({ connectionsPerOrigin: 4, bodyBudget: budget });
    const hold = budget.hold();
    try {
      await assert.rejects(fetcher.fetch(request(raw.url('/reset-later'))), (error) => {
        assert.ok(error instanceof RetryableError);
        assert.equal(error.code, 'connection-reset');
        return true;
      });
      assert.equal(budget.usedBytes, 0, 'a body cut by a reset');
      // Now a held body over the budget, and a response that waits behind it and is reset meanwhile:
      // paused, it does not read the socket, so it learns of the reset once it may read on.
      await hold.run(() => fetcher.fetch(request(server.url(`/fixed?size=${MiB}`))));
      const waiting = fetcher.fetch(request(raw.url('/reset-soon')));
      while (budget.waiting === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      // The server has reset it, and the loop has turned since: a response that read on would have failed by now.
      await resetSoonDone;
      for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
      assert.equal(budget.waiting, 1);
      hold.release();
      await assert.rejects(waiting, (error) => {
        assert.ok(error instanceof RetryableError);
        assert.equal(error.code, 'connection-reset');
        return true;
      });
      assert.equal(budget.waiting, 0);
      assert.equal(budget.usedBytes, 0);
      // The same, cut by its deadline while still waiting.
      const hold2 = budget.hold();
      await hold2.run(() => fetcher.fetch(request(server.url(`/fixed?size=${MiB}`))));
      const cut = await fetcher.fetch(request(raw.url('/reset-soon'), { totalTimeoutMs: 400 }));
      assert.equal(cut.truncated, 'time');
      assert.equal(budget.waiting, 0);
      assert.equal(budget.usedBytes, MiB);
      hold2.release();
      assert.equal(budget.usedBytes, 0);
    } finally {
      hold.release();
      await fetcher.close();
      await raw.close();
    }
  });

  it('gives back what a capped body did not keep, and the whole body once it is returned', async () => {
    const budget = new BodyBudget(64 * MiB);
    const fetcher = new HttpFetcher({ bodyBudget: budget });
    const hold = budget.hold();
    try {
      const response = await hold.run(() =>
        fetcher.fetch(request(server.url(`/chunked?size=${3 * MiB}`), { maxBodyBytes: MiB + 1 })),
      );
      assert.equal(response.truncated, 'length');
      assert.equal(hold.bytes, MiB + 1, 'the hold has the kept bytes, no reservation left over');
      assert.equal(budget.usedBytes, MiB + 1);
      hold.release();
      const free = await fetcher.fetch(request(server.url(`/fixed?size=1000`)));
      assert.equal(free.body.byteLength, 1000);
      assert.equal(budget.usedBytes, 0, 'outside a hold the bytes are back when the fetch returns');
    } finally {
      hold.release();
      await fetcher.close();
    }
  });

  it('can be turned off', async () => {
    const fetcher = new HttpFetcher({ maxBufferedBodyBytes: Number.POSITIVE_INFINITY });
    try {
      assert.equal(fetcher.bodyBudget, undefined);
      const response = await fetcher.fetch(request(server.url(`/fixed?size=${MiB}`)));
      assert.equal(response.body.byteLength, MiB);
    } finally {
      await fetcher.close();
    }
  });
});
