/**
 * Imitates the fetch function's queues (lambdas/adapters/queues.ts: SqsTaskSender, SqsResultSender,
 * SqsDeadLetterSender) in memory, as the ports TaskSender, ResultSender (with DrainedSender) and
 * DeadLetterSender: every message sent is kept, in order; an empty send sends nothing. A send that
 * fails (`faults`) sends nothing, or (`at: 'after'`) sends everything and loses its answer. Checked
 * against the adapters on the embedded SQS (fauxqs) by test/integration/port-contracts.test.ts
 * (queueContract in test/contracts/queues.ts).
 */
import type { DrainedSender } from '../../lambdas/core/batches/index.ts';
import type {
  DeadLetter,
  DeadLetterSender,
  OutgoingVisit,
  ResultSender,
  TaskSender,
} from '../../lambdas/core/crawl/index.ts';
import { type CrawlResult, resultMessageBodies } from '../../lambdas/core/results/index.ts';
import { Faults } from './faults.ts';

export class MemoryTaskQueue implements TaskSender {
  readonly visits: OutgoingVisit[] = [];
  readonly faults = new Faults<'sendVisits'>();

  async sendVisits(visits: readonly OutgoingVisit[]): Promise<void> {
    return this.faults.run('sendVisits', [visits], async () => {
      this.visits.push(...structuredClone(visits));
    });
  }
}

export class MemoryResultsQueue implements ResultSender, DrainedSender {
  readonly results: CrawlResult[] = [];
  /** The SQS messages the records went in, as the adapter packs them (core/results/result-message.ts). */
  readonly messages: string[] = [];
  /** The crawl of each `drained` record, in order. */
  readonly drained: string[] = [];
  readonly faults = new Faults<'sendResults' | 'sendDrained'>();

  async sendResults(results: readonly CrawlResult[]): Promise<void> {
    return this.faults.run('sendResults', [results], async () => {
      this.results.push(...structuredClone(results));
      this.messages.push(...resultMessageBodies(results));
    });
  }

  async sendDrained(crawlId: string): Promise<void> {
    return this.faults.run('sendDrained', [crawlId], async () => {
      this.drained.push(crawlId);
    });
  }
}

export class MemoryDeadLetterQueue implements DeadLetterSender {
  readonly letters: DeadLetter[] = [];
  readonly faults = new Faults<'send'>();

  async send(letters: readonly DeadLetter[]): Promise<void> {
    return this.faults.run('send', [letters], async () => {
      this.letters.push(...structuredClone(letters));
    });
  }
}
