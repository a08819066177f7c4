/**
 * `crawler crawl` without --allow-private, seeded with loopback, unspecified and metadata addresses in
 * the spellings a URL may give them (issue 22, point 2): a refusal ends every URL of the origin at
 * once, `blocked` with the guard's reason, and robots.txt of a refused origin is never retried nor
 * waited on (an origin's second URL once waited minutes on a robots.txt claim that never settled).
 *
 * Nothing is dialled: the loopback spellings point at a listener of this test on 127.0.0.1 (and ::1
 * where there is one), which must see no connection. 169.254.169.254 is safe to name only because
 * the guard refuses it before connecting; its results say so (the guard's own reason).
 *
 * Time is judged against the same CLI crawling one refused seed in the same run (start-up and
 * shut-down included), not against a wall-clock limit: many refused seeds take about as long as one.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type CliRun, type CrawlOutput, readCrawlOutput, runCli, tempDir } from '../fixtures/run-cli.ts';

/** The CLI is killed after this long: far above the refused crawl's own time, so a hang shows as slow. */
const CLI_TIMEOUT_MS = 400_000;

interface Listener {
  port: number;
  connections: number;
  close(): Promise<void>;
}

async function listen(): Promise<Listener> {
  const servers: Server[] = [];
  const listener = { port: 0, connections: 0, close: async () => {} };
  const open = (host: string, port: number) =>
    new Promise<Server>((resolve, reject) => {
      const server = createServer((socket) => {
        listener.connections += 1;
        socket.destroy();
      });
      server.once('error', reject);
      server.listen(port, host, () => resolve(server));
    });
  const v4 = await open('127.0.0.1', 0);
  servers.push(v4);
  const address = v4.address();
  listener.port = typeof address === 'object' && address ? address.port : 0;
  // ::1 as well where the machine has IPv6 loopback: a dial of [::1] would show here too.
  await open('::1', listener.port).then(
    (server) => servers.push(server),
    () => {},
  );
  listener.close = async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  };
  return listener;
}

/** Runs `crawler crawl` (whatever its exit code) and reads what it wrote. */
async function crawl(seeds: string[]): Promise<CliRun & CrawlOutput> {
  const out = await tempDir('crawler-e2e-refused-');
  try {
    const run = await runCli(['crawl', ...seeds, '--out', out.path, '--quiet'], {
      timeoutMs: CLI_TIMEOUT_MS,
    });
    assert.equal(run.timedOut, false, `the crawl did not end within ${CLI_TIMEOUT_MS} ms:\n${run.stderr}`);
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
    return { ...run, ...(await readCrawlOutput(out.path)) };
  } finally {
    await out.remove();
  }
}

describe('crawler crawl: seeds on refused addresses, without --allow-private', () => {
  let listener: Listener;
  let one: CliRun & CrawlOutput;
  let many: CliRun & CrawlOutput;
  let seeds: string[];

  before(
    async () => {
      listener = await listen();
      const port = listener.port;
      seeds = [
        // The metadata endpoint, two URLs of one origin (the second once waited on robots.txt).
        'http://169.254.169.254/',
        'http://169.254.169.254/computeMetadata/v1/',
        'http://169.254.169.254/latest/meta-data/',
        'http://[::ffff:169.254.169.254]/',
        'http://[fd00:ec2::254]/latest/',
        // Loopback, in the spellings WHATWG URL reads as 127.0.0.1, each pointing at the listener.
        `http://127.0.0.1:${port}/`,
        `http://127.1:${port}/a`,
        `http://2130706433:${port}/b`,
        `http://0x7f.1:${port}/c`,
        `http://[::ffff:127.0.0.1]:${port}/`,
        `http://[::1]:${port}/`,
        `http://[::1]:${port}/d`,
        // A name that resolves to loopback: refused on the robots.txt request, then for every URL.
        `http://localhost:${port}/`,
        `http://localhost:${port}/e`,
        `http://localhost:${port}/f`,
        // Unspecified.
        `http://0.0.0.0:${port}/`,
        `http://0:${port}/g`,
        `http://[::]:${port}/`,
      ];
      one = await crawl([seeds[0]!]);
      many = await crawl(seeds);
    },
    { timeout: 2 * CLI_TIMEOUT_MS + 60_000 },
  );
  after(async () => {
    await listener?.close();
  });

  it("ends every URL blocked with the address guard's reason, once each", () => {
    const byUrl = new Map(many.results.map((line) => [line.url, line]));
    assert.equal(byUrl.size, many.results.length, 'a URL has two result lines');
    assert.equal(many.results.length, seeds.length, JSON.stringify(many.results.map((r) => r.url)));
    for (const line of many.results) {
      assert.equal(line.outcome, 'blocked', `${line.url}: ${line.outcome} ${line.code} ${line.reason}`);
      assert.equal(line.code, 'address-blocked', line.url);
      assert.match(
        String(line.reason),
        /address not allowed: .+; crawl with --allow-private to permit/,
        line.url,
      );
      assert.equal(line.status, undefined, `${line.url} got a response`);
    }
    assert.equal(many.summary.byOutcome.blocked, seeds.length);
    for (const url of ['http://169.254.169.254/', 'http://169.254.169.254/computeMetadata/v1/'])
      assert.match(
        String(byUrl.get(url)?.reason),
        /is 169\.254\.169\.254 \(link-local .*cloud metadata endpoint\)/,
      );
  });

  it('dials nothing', () => {
    assert.equal(listener.connections, 0, 'a refused address was connected to');
  });

  it('takes about as long as a crawl of one refused seed: nothing waits on robots.txt', (t) => {
    t.diagnostic(`${seeds.length} refused seeds: ${Math.round(many.ms)} ms; one: ${Math.round(one.ms)} ms`);
    assert.ok(
      many.ms < 3 * one.ms,
      `${seeds.length} refused seeds took ${Math.round(many.ms)} ms, one took ${Math.round(one.ms)} ms`,
    );
  });
});
