/**
 * The scale simulation (bench/scale.ts) at 1,000 hosts and 50,000 pages: the real fetch and aggregate
 * batches on the metered fakes, with the stack's event-source settings, on a virtual clock. It must end
 * exact and complete: every planned URL one result line, every page requested once and robots.txt once
 * per host, no gap below a host's delay, nothing in any DLQ, summary.json written once. The cost
 * targets are the bench's to print (`npm run bench -- --only scale`), not asserted here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runScale, scaleTable } from '../../bench/scale.ts';

const HOSTS = 1_000;
const URLS = 50_000;

describe('scale simulation: 1,000 hosts, 50,000 pages', () => {
  // The real core costs ~3 ms of CPU a page: several minutes of wall time on a loaded machine.
  it('ends exact and complete', { timeout: 30 * 60_000 }, async (t) => {
    const report = await runScale({ seed: 1, hosts: HOSTS, urls: URLS });
    t.diagnostic(scaleTable(report));
    assert.deepEqual(report.problems, []);
    assert.equal(report.exact, true);
    assert.equal(report.resultLines, report.planned, 'one line per planned URL');
    assert.ok(report.planned > URLS, 'pages, dead links and skipped out-of-scope links are all planned');
    assert.equal(report.fetchedPages, URLS, 'every page fetched');
    assert.deepEqual(report.dlq, { task: 0, results: 0, deadLetters: 0 });
    assert.equal(report.summaryWrites, 1);
    assert.equal(report.shortGaps, 0, 'no gap below the delay');
    assert.equal(report.duplicateVisits, 0, 'no visit message dropped but the copies hurry makes');
    assert.ok(report.hurriedVisits > 0, 'hosts awaiting their last results are hurried');
  });
});
