/**
 * Starts a crawl on a running stack (embedded, endpoint or deployed): stores its config once, admits
 * the seeds through the frontier like any discovered link (scope, dedup, page budget), and sends the
 * seed tasks and any skipped results in batches. A seed that is not a valid URL is still sent, so it
 * ends as an `invalid` result with its reason.
 *
 * Seeds go in chunks (default 500): each chunk is admitted (conditional puts, 16 in flight) and its
 * tasks sent (SendMessageBatch of 10, failed entries resent) before the next, so a file of a million
 * URLs needs memory for one chunk, and progress can be reported. Seeds (and sitemap URLs) that
 * normalize to the same URL are sent once.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { CrawlConfigStore } from '../lambdas/adapters/crawl-config-store.ts';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { SqsResultSender, SqsTaskSender } from '../lambdas/adapters/queues.ts';
import type { CrawlConfig } from '../lambdas/core/crawl-config.ts';
import { admitLinks, confirmSent } from '../lambdas/core/link-admission.ts';
import { LruSet } from '../lambdas/core/lru.ts';
import { normalizeUrl } from '../lambdas/core/url-normalize.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from './required-output.ts';

export interface StackHandles {
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient };
  outputs: Record<string, string>;
}

/**
 * The crawl config is one DynamoDB item (at most 400 KB), seeds included (they define the scope).
 * This leaves room for the keys and attribute names.
 */
export const MAX_CONFIG_BYTES = 380_000;

export class ConfigTooLargeError extends Error {
  override name = 'ConfigTooLargeError';
}

export interface SubmitProgress {
  /** Seed and sitemap URLs handled so far (admitted, skipped or invalid), of `total`. */
  done: number;
  total: number;
  tasks: number;
  skipped: number;
  invalid: number;
}

export interface SubmitOptions {
  /** URLs admitted and sent per round (default 500). */
  chunkSize?: number;
  /** Called after each chunk is sent. */
  onProgress?: (progress: SubmitProgress) => void;
}

export interface SubmitSummary {
  /** Seeds to fetch (admitted, their hosts woken) plus invalid seeds (which end as `invalid` results). */
  tasks: number;
  /** Seeds admitted straight into a `skipped` result (out of scope, beyond --max-pages...). */
  skipped: number;
  invalid: number;
  /** Seeds or sitemap URLs dropped because an earlier one normalizes to the same URL. */
  duplicates: number;
}

/** `sitemapUrls` are admitted like seeds but do not widen the scope (it comes from `config.seeds`). */
export async function submitCrawl(
  stack: StackHandles,
  config: CrawlConfig,
  sitemapUrls: readonly string[] = [],
  options: SubmitOptions = {},
): Promise<SubmitSummary> {
  const configBytes = Buffer.byteLength(JSON.stringify(config));
  if (configBytes > MAX_CONFIG_BYTES) {
    throw new ConfigTooLargeError(
      `the crawl config is ${configBytes} bytes with its ${config.seeds.length} seeds; one DynamoDB item holds at most ` +
        `${MAX_CONFIG_BYTES}: split the seeds into several crawls`,
    );
  }
  const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName);
  const tasks = new SqsTaskSender(stack.clients.sqs, requiredOutput(stack.outputs, OUTPUTS.taskQueueUrl));
  const results = new SqsResultSender(
    stack.clients.sqs,
    requiredOutput(stack.outputs, OUTPUTS.resultsQueueUrl),
  );
  await new CrawlConfigStore(stack.clients.dynamodb, table).put(config);
  const frontier = createFrontierStore(stack.clients.dynamodb, table);

  // One entry per distinct normalized URL (the first spelling wins); invalid seeds are kept as given.
  const seen = new Set<string>();
  const entries: Array<{ url: string; valid: boolean }> = [];
  let duplicates = 0;
  for (const [url, isSeed] of [
    ...config.seeds.map((seed) => [seed, true] as const),
    ...sitemapUrls.map((u) => [u, false] as const),
  ]) {
    const normalized = normalizeUrl(url, { maxUrlLength: config.limits.maxUrlLength });
    if (!normalized.ok) {
      // An invalid sitemap entry is not the user's input: it is left out (the sitemap loader reports it).
      if (isSeed) entries.push({ url, valid: false });
      continue;
    }
    if (seen.has(normalized.key)) {
      duplicates++;
      continue;
    }
    seen.add(normalized.key);
    entries.push({ url, valid: true });
  }

  const chunkSize = Math.max(1, Math.floor(options.chunkSize ?? 500));
  const summary: SubmitSummary = { tasks: 0, skipped: 0, invalid: 0, duplicates };
  for (let start = 0; start < entries.length; start += chunkSize) {
    const chunk = entries.slice(start, start + chunkSize);
    const valid = chunk.filter((entry) => entry.valid).map((entry) => entry.url);
    const invalid = chunk.filter((entry) => !entry.valid).map((entry) => entry.url);
    const admitted =
      valid.length === 0
        ? { visits: [], results: [] }
        : await admitLinks(
            [
              {
                config,
                parentKey: 'seed',
                depth: -1,
                links: valid.map((url) => ({ url, nofollow: false })),
              },
            ],
            { frontier, hosts: frontier, seen: new LruSet(1), now: new Date() },
          );
    // An invalid seed goes to the queue as a task, to end there as an `invalid` result with its reason.
    await tasks.sendVisits(admitted.visits);
    // A seed's visit may wait long in a large crawl's queue: no wake sends it again meanwhile.
    await confirmSent(admitted.visits, frontier);
    await tasks.sendTasks(invalid.map((url) => ({ v: 1 as const, crawlId: config.crawlId, url, depth: 0 })));
    await results.sendResults(admitted.results);
    summary.tasks += valid.length - admitted.results.length + invalid.length;
    summary.skipped += admitted.results.length;
    summary.invalid += invalid.length;
    options.onProgress?.({
      done: Math.min(entries.length, start + chunk.length),
      total: entries.length,
      tasks: summary.tasks,
      skipped: summary.skipped,
      invalid: summary.invalid,
    });
  }
  return summary;
}
