/**
 * `crawler results ID [--outcome X] [--change C] [--format jsonl|csv]`: streams a crawl's results index to
 * stdout, one record per URL (deduplicated by key, see index-reader.ts). JSONL repeats each stored
 * line byte for byte (format: lambdas/core/archive/cdxj.ts); CSV has a header row and the fixed columns of
 * `CSV_COLUMNS`, RFC 4180 quoting and CRLF line ends.
 *
 * A damaged index part or line is skipped with one warning on stderr naming its object; everything
 * else is still printed, and the exit code is 1 at the end.
 */
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import { damageWarning, streamIndex } from '../lambdas/core/archive/index.ts';
import { isOutcome, OUTCOMES } from '../lambdas/core/base/index.ts';
import { CHANGES } from '../lambdas/core/results/index.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import { write } from './cli-io.ts';
import { defineCommand } from './define-command.ts';
import { CSV_COLUMNS, csvHeader, csvRow } from './results-csv.ts';
import { STACK_OPTIONS, STACK_USAGE, withStorage } from './stack-access.ts';
import { UsageError } from './usage-error.ts';
import { noSuchCrawl } from './usage-failures.ts';

export const RESULTS_USAGE = `usage: crawler results ID [options]
  --outcome X          only URLs with this outcome (${OUTCOMES.join(', ')})
  --change C           re-crawls: only URLs with this change against the crawl followed (${CHANGES.join(', ')})
  --format F           jsonl (default: the index lines as stored) or csv (columns: ${CSV_COLUMNS.join(',')})
${STACK_USAGE}`;

export const resultsCommand = defineCommand({
  usage: RESULTS_USAGE,
  options: {
    outcome: { type: 'string' },
    change: { type: 'string' },
    format: { type: 'string' },
    ...STACK_OPTIONS,
  },
  run: async ({ io, values, positionals }) => {
    if (positionals.length !== 1)
      throw new UsageError(`results needs exactly one crawl id\n${RESULTS_USAGE}`);
    const crawlId = positionals[0]!;
    const format = values.format ?? 'jsonl';
    if (format !== 'jsonl' && format !== 'csv') {
      throw new UsageError(`--format expects jsonl or csv, got ${JSON.stringify(format)}`);
    }
    if (values.outcome !== undefined && !isOutcome(values.outcome)) {
      throw new UsageError(
        `--outcome expects one of ${OUTCOMES.join(', ')}, got ${JSON.stringify(values.outcome)}`,
      );
    }
    const change = values.change;
    if (change !== undefined && !(CHANGES as readonly string[]).includes(change)) {
      throw new UsageError(`--change expects one of ${CHANGES.join(', ')}, got ${JSON.stringify(change)}`);
    }
    return withStorage(values, io, async (stack) => {
      const blobs = new S3Blobs(
        stack.clients.s3,
        requiredOutput(stack.outputs, OUTPUTS.pageBucketName, stack.description),
      );
      if (format === 'csv') await write(io.stdout, csvHeader());
      let damaged = 0;
      const lines = streamIndex(blobs, crawlId, {
        ...(values.outcome === undefined ? {} : { outcome: values.outcome }),
        onDamage: (damage) => {
          damaged++;
          io.stderr.write(`${damageWarning(damage)}\n`);
        },
      });
      let count = 0;
      for await (const { line, text } of lines) {
        if (change !== undefined && line.change !== change) continue;
        await write(io.stdout, format === 'csv' ? csvRow(line) : `${text}\n`);
        count++;
      }
      if (damaged > 0) return 1;
      // No lines: an unknown crawl is an error; a known one just has no (matching) results yet.
      if (count === 0) {
        const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description);
        if (!(await createFrontierStore(stack.clients.dynamodb, table).readCounters(crawlId))) {
          io.stderr.write(`${noSuchCrawl(crawlId, stack.description)}\n`);
          return 1;
        }
      }
      return 0;
    });
  },
});
