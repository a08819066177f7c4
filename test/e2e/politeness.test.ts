// Politeness end to end: `crawler crawl` with several concurrent fetch slots against two small sites on
// two loopback hosts. Each site timestamps every request it receives; the gaps it observes are the
// truth, whatever the crawler believes about its slots.
//
// - host A (127.0.0.1): `--delay 400`; one page answers 503 with `Retry-After: 2` once.
// - host B (127.0.0.2): robots.txt `Crawl-delay: 1`, so its pages are paced at 1 s, not 400 ms.
//
// robots.txt goes through the same per-host slots (docs/frontier.md), so every request counts for the
// `--delay` gap. Crawl-delay is only known once robots.txt is read, so it is checked between page
// requests (robots.txt → first page keeps the `--delay` gap).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type GeneratedSite, type RequestRecord, startGeneratedSite } from '../fixtures/generated-site.ts';
import { type CrawlRun, runCrawl, tempDir } from '../fixtures/run-cli.ts';

const DELAY_MS = 400;
const CRAWL_DELAY_S = 1;
const RETRY_AFTER_S = 2;
/** Requests are timed on arrival at the site, not when the crawler decided to send them. */
const TOLERANCE_MS = 50;
const SLOTS = 3;

interface Gap {
  from: string;
  to: string;
  ms: number;
}

function gaps(requests: readonly RequestRecord[]): Gap[] {
  const out: Gap[] = [];
  for (let i = 1; i < requests.length; i++) {
    const a = requests[i - 1]!;
    const b = requests[i]!;
    out.push({ from: a.target, to: b.target, ms: b.at - a.at });
  }
  return out;
}

function tooClose(list: readonly Gap[], minMs: number): string[] {
  return list
    .filter((g) => g.ms < minMs - TOLERANCE_MS)
    .map((g) => `${g.from} → ${g.to}: ${g.ms.toFixed(1)} ms`);
}

const SMALL = {
  pages: 8,
  nav: false,
  notFound: 0,
  errors: 0,
  redirects: false,
  trap: false,
  privatePages: 0,
  nofollow: false,
  externalLinks: false,
} as const;

describe('crawler crawl: politeness per host across concurrent fetch slots', () => {
  let hostA: GeneratedSite;
  let hostB: GeneratedSite;
  let run: CrawlRun;
  let removeOut = async () => {};

  before(
    async () => {
      hostA = await startGeneratedSite({
        ...SMALL,
        unavailable: [{ path: '/p/3', times: 1, retryAfterSeconds: RETRY_AFTER_S }],
      });
      hostB = await startGeneratedSite({ ...SMALL, host: '127.0.0.2', crawlDelay: CRAWL_DELAY_S });
      const out = await tempDir();
      removeOut = out.remove;
      run = await runCrawl(
        [`${hostA.origin}/`, `${hostB.origin}/`],
        ['--allow-private', '--delay', String(DELAY_MS), '--concurrency', String(SLOTS), '--quiet'],
        { outDir: out.path, timeoutMs: 150_000 },
      );
    },
    { timeout: 180_000 },
  );
  after(async () => {
    await hostA?.close();
    await hostB?.close();
    await removeOut();
  });

  it('crawls both hosts completely, each page once (the 503 page twice)', () => {
    for (const site of [hostA, hostB]) {
      const plan = site.expected;
      assert.deepEqual(
        [...site.hits].sort(),
        [...plan.expectedHits].sort(),
        `${site.origin}: requests per path differ from the plan`,
      );
      for (const [url, want] of plan.outcomes) {
        const result = run.results.find((r) => r.url === url);
        assert.equal(result?.outcome, want.outcome, url);
      }
    }
    assert.equal(hostA.hits.get('/p/3'), 2);
    assert.equal(run.results.length, hostA.expected.outcomes.size + hostB.expected.outcomes.size);
  });

  it(`keeps at least --delay (${DELAY_MS} ms) between any two requests to one host`, () => {
    for (const site of [hostA, hostB]) {
      assert.ok(site.requests.length >= 9, `${site.origin} saw ${site.requests.length} requests`);
      assert.deepEqual(
        tooClose(gaps(site.requests), DELAY_MS),
        [],
        `${site.origin}: requests closer than --delay`,
      );
    }
  });

  it(`paces a host by its robots.txt Crawl-delay (${CRAWL_DELAY_S} s)`, () => {
    const pages = hostB.requests.filter((r) => r.target !== '/robots.txt');
    assert.equal(pages.length, 8);
    assert.deepEqual(
      tooClose(gaps(pages), CRAWL_DELAY_S * 1000),
      [],
      `${hostB.origin}: page requests closer than Crawl-delay`,
    );
  });

  it(`honours Retry-After: no request to the host for ${RETRY_AFTER_S} s after the 503`, () => {
    const index = hostA.requests.findIndex((r) => r.status === 503);
    assert.ok(index >= 0, 'the site never answered 503');
    const unavailable = hostA.requests[index]!;
    const next = hostA.requests[index + 1];
    assert.ok(next, 'no request to the host after the 503');
    const waited = next.at - unavailable.at;
    assert.ok(
      waited >= RETRY_AFTER_S * 1000 - TOLERANCE_MS,
      `next request (${next.target}) came ${waited.toFixed(1)} ms after the 503`,
    );
    const retried = hostA.requests.slice(index + 1).find((r) => r.target === unavailable.target);
    assert.equal(retried?.status, 200, 'the 503 page was retried and served');
    const result = run.results.find((r) => r.url === `${hostA.origin}/p/3`);
    assert.equal(result?.outcome, 'fetched');
  });

  it('works the two hosts side by side, not one after the other', () => {
    const bStart = hostB.requests[0]!.at;
    const bEnd = hostB.requests.at(-1)!.at;
    const aDuring = hostA.requests.filter((r) => r.at > bStart && r.at < bEnd);
    assert.ok(aDuring.length > 0, 'no request to host A while host B was being crawled');
  });
});
