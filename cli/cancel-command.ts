/**
 * `crawler cancel ID`: stops a crawl. The crawl's counters item goes running → cancelled (one
 * conditional write, lambdas/adapters/frontier-cancel.ts); from then on the fetch function ends each
 * of the crawl's tasks it takes from the queue as a `cancelled` result without fetching (within a few
 * seconds: the flag is cached per container), so the queue drains quickly and cheaply and every URL
 * still gets its one result. Pages being fetched at that moment finish normally.
 *
 * Exit 0 when the crawl is stopped (now, or it already was cancelled or complete), 1 when there is no
 * such crawl, 2 on a usage error.
 */
import { EventBridgePublisher } from '../lambdas/adapters/eventbridge-publisher.ts';
import { cancelCrawl } from '../lambdas/adapters/frontier-cancel.ts';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { describeError } from '../lambdas/core/base/index.ts';
import { cancelledEvent } from '../lambdas/core/batches/index.ts';
import { DEFAULT_CRAWL_ID } from '../lambdas/core/crawl/index.ts';
import { isCrawlId, OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import { write } from './cli-io.ts';
import { defineCommand } from './define-command.ts';
import { STACK_OPTIONS, STACK_USAGE, withStack } from './stack-access.ts';
import { UsageError } from './usage-error.ts';
import { noSuchCrawl } from './usage-failures.ts';

export const CANCEL_USAGE = `usage: crawler cancel ID [options]
marks the crawl cancelled: its queued tasks end as \`cancelled\` results without being fetched
  --json               print {crawlId, status, endedAt?, pending?} as JSON
${STACK_USAGE}`;

export const cancelCommand = defineCommand({
  usage: CANCEL_USAGE,
  options: { json: { type: 'boolean' }, ...STACK_OPTIONS },
  run: async ({ io, values, positionals }) => {
    if (positionals.length !== 1) throw new UsageError(`cancel needs exactly one crawl id\n${CANCEL_USAGE}`);
    const crawlId = positionals[0] as string;
    if (!isCrawlId(crawlId)) throw new UsageError(`not a crawl id: ${JSON.stringify(crawlId)}`);

    return withStack(values, io, async (stack) => {
      const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description);
      const outcome = await cancelCrawl(stack.clients.dynamodb, table, crawlId);
      if (outcome.status === 'unknown') {
        io.stderr.write(`${noSuchCrawl(crawlId, stack.description)}\n`);
        return 1;
      }
      // Only the cancel that flipped the state announces it.
      const bus = stack.outputs[OUTPUTS.eventBusName];
      // The crawl is cancelled whatever becomes of its event: a failed publish is a warning.
      const eventbridge = stack.clients.eventbridge;
      if (outcome.status === 'cancelled' && bus !== undefined && eventbridge !== undefined)
        await new EventBridgePublisher(eventbridge, bus)
          .publish([cancelledEvent(crawlId, outcome.endedAt, 'crawler cancel')])
          .catch((error: unknown) =>
            io.stderr.write(
              `warning: crawl ${crawlId}: Crawl Cancelled not published: ${describeError(error)}\n`,
            ),
          );
      const counters = await createFrontierStore(stack.clients.dynamodb, table).readCounters(crawlId);
      const pending = counters ? Math.max(0, counters.queued - counters.done) : 0;
      if (values.json) {
        await write(io.stdout, `${JSON.stringify({ crawlId, ...outcome, pending })}\n`);
      } else if (outcome.status === 'cancelled') {
        await write(
          io.stdout,
          `crawl ${crawlId} cancelled: ${pending} pending URLs end as \`cancelled\` as their tasks come off the queue\n`,
        );
      } else if (outcome.status === 'already-cancelled') {
        await write(io.stdout, `crawl ${crawlId} was already cancelled${at(outcome.endedAt)}\n`);
      } else {
        await write(
          io.stdout,
          `crawl ${crawlId} is already complete${at(outcome.endedAt)}: nothing to cancel\n`,
        );
      }
      if (crawlId === DEFAULT_CRAWL_ID && outcome.status === 'cancelled') {
        io.stderr.write(
          `note: ${DEFAULT_CRAWL_ID} is the crawl of plain URL messages; it stays cancelled, so URLs sent as plain messages from now on end as cancelled too\n`,
        );
      }
      return 0;
    });
  },
});

function at(endedAt: string | undefined): string {
  return endedAt === undefined ? '' : ` (at ${endedAt})`;
}
