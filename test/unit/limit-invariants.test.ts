/**
 * Invariants that the comments in lambdas/core/base/limits.ts state between one limit and another,
 * or between a limit and what AWS takes (issue 28, point 4). Each is held on what the code builds, not
 * on the constants alone, where the code builds it: change one side and this fails.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_HEADER_BYTES } from '../../lambdas/adapters/http-fetcher.ts';
import { AWS_LIMITS, FETCH_LIMITS, FRONTIER_LIMITS } from '../../lambdas/core/base/index.ts';
import {
  type CarriedLink,
  type CrawlResult,
  ResultSchema,
  resultMessageBodies,
} from '../../lambdas/core/results/index.ts';

const KB = 1000;

/** A URL of `maxUrlLength` characters (normalized URLs are ASCII, nothing for JSON to escape). */
function longUrl(tag: string): string {
  const head = `https://example.com/${tag}/`;
  return head + 'a'.repeat(FETCH_LIMITS.maxUrlLength - head.length);
}

/** Carried links whose JSON fills carriedBytes, as link-admission.ts counts them (a comma each). */
function carriedUpToTheCap(): CarriedLink[] {
  const links: CarriedLink[] = [];
  let bytes = 0;
  for (let i = 0; ; i++) {
    const link: CarriedLink = {
      url: longUrl(`skipped-${i}`),
      key: 'k'.repeat(64),
      depth: 99,
      code: 'out-of-scope',
      reason: 'outside the crawl’s scope: '.padEnd(200, '.'),
    };
    const size = Buffer.byteLength(JSON.stringify(link)) + 1;
    if (bytes + size > FRONTIER_LIMITS.carriedBytes) return links;
    bytes += size;
    links.push(link);
  }
}

describe('the limits hold what their comments say', () => {
  it("a page's result at its largest fits in one results message, packed: the carried links leave the rest room", () => {
    // The strings a server controls come out of the response head, at most MAX_HEADER_BYTES in all;
    // quotes, each escaped in JSON, make them twice as long.
    const headerStrings = '"'.repeat(MAX_HEADER_BYTES / 2);
    const result: CrawlResult = ResultSchema.parse({
      v: 1,
      crawlId: 'c'.repeat(64),
      key: 'k'.repeat(64),
      url: longUrl('page'),
      finalUrl: longUrl('final'),
      location: longUrl('location'),
      canonical: longUrl('canonical'),
      status: 200,
      outcome: 'fetched',
      code: 'some-code',
      reason: 'r'.repeat(2 * KB),
      contentType: 'text/html; charset=utf-8',
      bytes: FETCH_LIMITS.maxBodyBytes,
      sha1: 'A'.repeat(32),
      fetchedAt: new Date(0).toISOString(),
      ms: 20_000,
      depth: 99,
      attempt: 3,
      outlinks: 100_000,
      etag: headerStrings,
      lastModified: headerStrings,
      warc: { key: `warc/${'w'.repeat(200)}.warc.gz`, offset: 1e12, length: 5e6 },
      skipped: carriedUpToTheCap(),
    });
    const bodies = resultMessageBodies([result]);
    assert.equal(bodies.length, 1);
    const body = bodies[0] ?? '';
    assert.ok(body.startsWith('{"v":1,"kind":"results"'), 'packed, not sent as a bare record');
    const size = Buffer.byteLength(body);
    assert.ok(size <= AWS_LIMITS.sqsMaxMessageBytes, `${size} bytes > ${AWS_LIMITS.sqsMaxMessageBytes}`);
    // "A quarter leaves the page's own record and its neighbours room."
    assert.ok(FRONTIER_LIMITS.carriedBytes * 4 <= AWS_LIMITS.sqsMaxMessageBytes);
  });

  it("a host item's in-flight set at its largest stays under ~27 KB and far from DynamoDB's 400 KB item", () => {
    // 64-character keys in a string set; DynamoDB sizes a set as the sum of its strings' lengths.
    const setBytes = FRONTIER_LIMITS.inflightKeys * 64;
    assert.ok(setBytes <= 27 * KB, `${setBytes}`);
    assert.ok(setBytes < (400 * KB) / 10);
  });

  it("a visit's page of its host's URL items is at most one Query's 1 MB, and its first page is smaller", () => {
    // A done URL item is 400-650 bytes (limits.ts).
    assert.ok(FRONTIER_LIMITS.hostUrlPage * 650 <= 1_048_576, `${FRONTIER_LIMITS.hostUrlPage * 650}`);
    assert.ok(FRONTIER_LIMITS.hostUrlFirstPage < FRONTIER_LIMITS.hostUrlPage);
    // Pages double from the first: a power of two apart ends on the largest exactly.
    let page = FRONTIER_LIMITS.hostUrlFirstPage;
    while (page < FRONTIER_LIMITS.hostUrlPage) page *= 2;
    assert.ok(page >= FRONTIER_LIMITS.hostUrlPage);
  });
});
