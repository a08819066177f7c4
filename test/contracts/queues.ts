/**
 * What the fetch batch relies on from its queues (TaskSender, ResultSender + DrainedSender,
 * DeadLetterSender): every message sent arrives once, as sent. Run against the in-memory fakes
 * (test/fakes/queues.ts) and the SQS adapters on the embedded SQS (test/integration/port-contracts.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { DrainedSender } from '../../lambdas/core/fetch-batch.ts';
import type {
  DeadLetter,
  DeadLetterSender,
  OutgoingVisit,
  ResultSender,
  TaskSender,
} from '../../lambdas/core/ports.ts';
import type { CrawlResult } from '../../lambdas/core/result.ts';
import type { VisitMessage } from '../../lambdas/core/task.ts';

/** Fresh queues, and what has arrived on each so far (taken off the queue: each read sees new arrivals). */
export interface QueuesUnderTest {
  tasks: TaskSender;
  results: ResultSender & DrainedSender;
  deadLetters: DeadLetterSender;
  arrived(): Promise<{ visits: VisitMessage[]; results: unknown[]; letters: DeadLetter[] }>;
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
      const records = arrived as Array<Record<string, unknown>>;
      assert.deepEqual(
        sortBy(
          records.filter((r) => r.kind === undefined),
          (r) => String(r.key),
        ),
        sortBy(results, (r) => r.key),
      );
      assert.deepEqual(
        records.filter((r) => r.kind !== undefined),
        [{ v: 1, kind: 'drained', crawlId: 'c9' }],
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
