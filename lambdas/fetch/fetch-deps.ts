/**
 * The fetch function's adapters, built once per container: the core's ports over DynamoDB, S3, SQS
 * and the network, plus the container's caches (what a warm container remembers between batches).
 */

import { CrawlConfigStore } from '../adapters/crawl-config-store.ts';
import { SsmCredentialStore } from '../adapters/credential-store.ts';
import { CrawlCancellation } from '../adapters/frontier-cancel.ts';
import { createFrontierStore } from '../adapters/frontier-store.ts';
import { functionOutputs } from '../adapters/function-outputs.ts';
import { HttpFetcher, type HttpFetcherOptions } from '../adapters/http-fetcher.ts';
import { SqsRenderSender } from '../adapters/queues.ts';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { LruSet } from '../core/base/index.ts';
import type { FetchBatchDeps } from '../core/batches/index.ts';
import type { PageFetcher } from '../core/crawl/index.ts';
import { createRobotsCache } from '../core/robots/index.ts';
import type { AwsClients, HandlerWiring } from '../shared/aws-clients.ts';
import { FUNCTION_ENV } from '../shared/contracts.ts';
import type { FetchEnv } from '../shared/env.ts';
import type { Logger } from '../shared/logger.ts';

/** Links this container has seen (per crawl): bounded so a long-lived container stays small. */
const SEEN_CACHE_ENTRIES = 100_000;
/** Hosts whose pages needed rendering (per crawl), remembered by this container. */
const RENDERED_HOSTS_CACHE_ENTRIES = 10_000;
/** Index parts this container has seen written. */
const WRITTEN_PARTS_CACHE_ENTRIES = 10_000;

/**
 * The runtime's wiring (no browser: pages to render go to the render function), and what a test may
 * put in place of the real thing (a synthetic web instead of sockets).
 */
export interface HandlerOverrides extends Omit<HandlerWiring, 'renderer'> {
  fetcher?: PageFetcher;
}

/**
 * Inside Lambda `--allow-private` opens private ranges but never this machine's own addresses: the
 * Runtime API listens on loopback and the metadata service is link-local.
 */
export function fetcherOptions(env: Pick<FetchEnv, 'AWS_LAMBDA_RUNTIME_API'>): HttpFetcherOptions {
  return { connectionsPerOrigin: 6, refuseHostLocal: env.AWS_LAMBDA_RUNTIME_API !== undefined };
}

/** The batch's deps but for what each invocation sets (its id and time). */
export type ContainerDeps = Omit<FetchBatchDeps, 'invocationId' | 'deadline' | 'end'>;

export function fetchDeps(
  env: FetchEnv,
  clients: AwsClients,
  log: Logger,
  overrides: HandlerOverrides = {},
): ContainerDeps {
  const bus = env[FUNCTION_ENV.eventBusName];
  const frontier = createFrontierStore(clients.dynamodb, env.FRONTIER_TABLE, {
    singleAttemptClient: clients.singleAttempt.dynamodb,
  });
  const configs = new CrawlConfigStore(clients.dynamodb, env.FRONTIER_TABLE, env.DEFAULT_CRAWL_CONFIG);
  // Several connections per origin: a request waiting behind another on one socket would leave late.
  const fetcher = overrides.fetcher ?? new HttpFetcher(fetcherOptions(env));
  const blobs = new S3Blobs(clients.s3, env.PAGE_BUCKET);
  const writtenParts = new LruSet(WRITTEN_PARTS_CACHE_ENTRIES);
  return {
    fetcher,
    ...(fetcher instanceof HttpFetcher ? { bodyBudget: fetcher.bodyBudget } : {}),
    configs,
    frontier,
    hosts: frontier,
    robots: frontier.robots,
    // One cached read per crawl per few seconds; a failed read counts as not cancelled (fail open).
    crawlStates: new CrawlCancellation(clients.dynamodb, env.FRONTIER_TABLE, {
      onError: (crawlId, error) => log.warn('cancel check failed', { crawlId, error: String(error) }),
    }),
    robotsCache: createRobotsCache(),
    credentials: new SsmCredentialStore(clients.ssm),
    // Pages to render go to the render function, in a stack that has one (-c render=true).
    ...(env.RENDER_QUEUE_URL === undefined
      ? {}
      : {
          renderQueue: new SqsRenderSender(clients.sqs, env.RENDER_QUEUE_URL),
          renderedHosts: new LruSet(RENDERED_HOSTS_CACHE_ENTRIES),
        }),
    seen: new LruSet(SEEN_CACHE_ENTRIES),
    blobs,
    // A part once written is never removed: a HEAD that found it need not be repeated.
    partExists: async (key: string) => {
      if (writtenParts.has(key)) return true;
      const exists = await blobs.exists(key);
      if (exists) writtenParts.add(key);
      return exists;
    },
    ...functionOutputs(clients, env, env.TASK_DLQ_URL, configs, bus),
  };
}
