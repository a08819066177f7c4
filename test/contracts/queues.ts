/**
 * What the fetch batch relies on from its queues (TaskSender, ResultSender + DrainedSender,
 * DeadLetterSender): every message sent arrives once, as sent. Run against the in-memory fakes
 * (test/fakes/queues.ts) and the SQS adapters on the embedded SQS (test/integration/port-contracts.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { DrainedSender } from '../../lambdas/core/batches/index.ts';
import type {
  DeadLetter,
  DeadLetterSender,
  OutgoingVisit,
  ResultSender,
  TaskSender,
  VisitMessage,
} from '../../lambdas/core/crawl/index.ts';
import type { CrawlResult } from '../../lambdas/core/results/index.ts';

/**
 * Fresh queues, and what has arrived on each so far (taken off the queue: each read sees new
 * arrivals). `results` holds each results-queue message's body, parsed as JSON.
 */
export interface QueuesUnderTest {
  tasks: TaskSender;
  results: ResultSender & DrainedSender;
  deadLetters: DeadLetterSender;
  arrived(): Promise<{ visits: VisitMessage[]; results: unknown[]; letters: DeadLetter[] }>;
}

type Body = Record<string, unknown>;

/** The result records in results-queue messages, packed or bare (what the aggregate function reads). */
function recordsIn(bodies: readonly Body[]): unknown[] {
  return bodies.flatMap((body) => {
    if (body.kind === 'results') return body.results as unknown[];
    return body.kind === undefined ? [body] : [];
  });
}

function result(i: number): CrawlResult {
  return {
    v: 1,
    crawlId: 'c1',
    key: `k${i}`,
    url: `https://site.test/${i}`,
    outcome: 'fetched',
    status: 200,
    bytes: i,
    fetchedAt: '2025-01-01T00:00:00.000Z',
    ms: 1,
    depth: 1,
    outlinks: 0,
  };
}

const sortBy = <T>(items: T[], key: (item: T) => string) =>
  items.toSorted((a, b) => key(a).localeCompare(key(b)));

export function queueContract(name: string, make: () => Promise<QueuesUnderTest>): void {
  describe(`queue contract: ${name}`, () => {
    it('every visit sent arrives once, as sent, however many batches it takes', async () => {
      const queues = await make();
      const visits: OutgoingVisit[] = Array.from({ length: 23 }, (_, i) => ({
        visit: { v: 1, kind: 'visit', crawlId: 'c1', host: `h${i}.test`, ticket: randomUUID() },
      }));
      await queues.tasks.sendVisits(visits);
      await queues.tasks.sendVisits([]);
      const { visits: arrived } = await queues.arrived();
      assert.deepEqual(
        sortBy(arrived, (v) => v.host),
        sortBy(
          visits.map((v) => v.visit),
          (v) => v.host,
        ),
      );
    });

    it('results arrive as sent, and a drained record names its crawl', async () => {
      const queues = await make();
      const results = Array.from({ length: 12 }, (_, i) => result(i));
      await queues.results.sendResults(results);
      await queues.results.sendResults([]);
      await queues.results.sendDrained('c9');
      const { results: arrived } = await queues.arrived();
      const bodies = arrived as Body[];
      assert.deepEqual(
        sortBy(recordsIn(bodies) as Body[], (r) => String(r.key)),
        sortBy(results, (r) => r.key),
      );
      assert.deepEqual(
        bodies.filter((r) => r.kind === 'drained'),
        [{ v: 1, kind: 'drained', crawlId: 'c9' }],
      );
    });

    it("a crawl's results go packed: one crawl a message, as few messages as fit 256 KiB", async () => {
      const queues = await make();
      // ~100 KB records: two fit a message, three do not.
      const large = Array.from({ length: 5 }, (_, i) => ({
        ...result(100 + i),
        crawlId: 'c3',
        reason: 'r'.repeat(100_000),
      }));
      const others = Array.from({ length: 3 }, (_, i) => ({ ...result(200 + i), crawlId: 'c2' }));
      const sent = [...Array.from({ length: 12 }, (_, i) => result(i)), ...others, ...large];
      await queues.results.sendResults(sent);
      const bodies = (await queues.arrived()).results as Body[];
      const byCrawl = Map.groupBy(bodies, (body) => String(body.crawlId));
      assert.deepEqual([...byCrawl].map(([crawlId, messages]) => [crawlId, messages.length]).sort(), [
        ['c1', 1],
        ['c2', 1],
        ['c3', 3],
      ]);
      for (const body of bodies) {
        assert.equal(body.kind, 'results');
        assert.ok(Buffer.byteLength(JSON.stringify(body)) <= 256 * 1024);
        for (const record of body.results as Body[]) assert.equal(record.crawlId, body.crawlId);
      }
      assert.deepEqual(
        sortBy(recordsIn(bodies) as Body[], (r) => String(r.key)),
        sortBy(sent, (r) => r.key),
      );
    });

    it('dead letters arrive with their body, code and reason', async () => {
      const queues = await make();
      const letters: DeadLetter[] = [
        { body: 'not a task', code: 'invalid-task', reason: 'message body is neither a task nor a URL' },
        {
          body: '{"v":1,"crawlId":"gone","url":"https://x.test/","depth":0}',
          code: 'unknown-crawl',
          reason: 'gone',
        },
      ];
      await queues.deadLetters.send(letters);
      assert.deepEqual(
        sortBy((await queues.arrived()).letters, (l) => l.code),
        sortBy(letters, (l) => l.code),
      );
    });
  });
}
