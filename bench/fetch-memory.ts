/**
 * The fetch handler's peak memory with 64 concurrent fetches at the default body cap: the real
 * handler (lambdas/fetch/handler.ts, createHandler) in this process alone, its AWS in another
 * (bench/local-aws-process.ts). The 64 URLs are sent to the handler as bare-URL tasks, which admits
 * them and wakes their hosts; the measured invocation is one SQS event of the visit messages that
 * woke, every URL on its own origin (host), so the 64 visits fetch at once. How many bodies the
 * handler holds together depends on the fetcher's body budget and on when the batch hands each page
 * to the WARC writer (and drops its body).
 *
 * argv[2]: JSON `{env, origins, paths, warmup, crawl?}`: the function environment, the site's origins,
 * the 64 request paths, a few other paths for a warm-up invocation (modules loaded, JIT, sockets
 * open), and settings of the `default` crawl over the bench's.
 * Prints one JSON line: `{startRss, baselineRss, peakRss, peakHeapUsed, peakExternal, seconds,
 * cpuSeconds, failures, error?}` (bytes, seconds): cpuSeconds is the handler process's user + system
 * CPU over the measured invocation (what Lambda's share of a vCPU must cover); RSS at start, after the warm-up, and at its peak during the
 * measured invocation; peakExternal is V8's external memory (Buffers: bodies, WARC files), dead ones
 * included until a GC collects them. Samples are every 5 ms of event loop time, so peakRss also takes
 * the kernel's maximum (a long synchronous stretch hides samples).
 */
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { createHandler } from '../lambdas/fetch/handler.ts';
import { createAwsClients } from '../lambdas/shared/aws-clients.ts';
import { FetchEnvSchema, loadEnv } from '../lambdas/shared/env.ts';

interface MemoryArgs {
  env: Record<string, string>;
  origins: string[];
  paths: string[];
  warmup: string[];
  /** Settings of the `default` crawl over the bench's own (e.g. maxDepth 0: only the tasks are fetched). */
  crawl?: Record<string, unknown>;
}

const args = JSON.parse(process.argv[2] ?? '{}') as MemoryArgs;
const startRss = process.memoryUsage.rss();
const handler = createHandler({
  ...args.env,
  DEFAULT_CRAWL_CONFIG: JSON.stringify({
    allowPrivate: true,
    respectRobots: false,
    delayMs: 0,
    ...args.crawl,
  }),
});

let sequence = 0;
/** A bare URL is a task of the `default` crawl, whose config comes from DEFAULT_CRAWL_CONFIG. */
function tasks(paths: readonly string[]): string[] {
  return paths.map((path, i) => `${args.origins[i % args.origins.length]}${path}`);
}

function event(bodies: readonly string[]): SQSEvent {
  const records = bodies.map((body): SQSRecord => {
    const id = `m-${++sequence}`;
    return {
      messageId: id,
      receiptHandle: id,
      body,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(Date.now()),
        SenderId: 'bench',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:bench',
      awsRegion: 'us-east-1',
    };
  });
  return { Records: records };
}

const sqs = createAwsClients(loadEnv(FetchEnvSchema, args.env, 'fetch-memory bench')).sqs;
/** The visit messages the admission of `bodies` sent (one per woken host), taken off the task queue. */
async function admitted(bodies: readonly string[], id: string): Promise<string[]> {
  await handler(event(bodies), { awsRequestId: id });
  const visits: string[] = [];
  for (let round = 0; round < 20 && visits.length < bodies.length; round++) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: args.env.TASK_QUEUE_URL,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
      }),
    );
    for (const message of out.Messages ?? []) {
      visits.push(message.Body ?? '');
      await sqs.send(
        new DeleteMessageCommand({ QueueUrl: args.env.TASK_QUEUE_URL, ReceiptHandle: message.ReceiptHandle }),
      );
    }
  }
  return visits;
}

await handler(event(await admitted(tasks(args.warmup), 'warmup-admit')), { awsRequestId: 'warmup' });
const measuredVisits = await admitted(tasks(args.paths), 'admit');
(globalThis as { gc?: () => void }).gc?.();
await new Promise((resolve) => setTimeout(resolve, 200));
const baselineRss = process.memoryUsage.rss();
let peakRss = baselineRss;
let peakHeapUsed = process.memoryUsage().heapUsed;
let peakExternal = process.memoryUsage().external;
const sampler = setInterval(() => {
  const usage = process.memoryUsage();
  peakRss = Math.max(peakRss, usage.rss);
  peakHeapUsed = Math.max(peakHeapUsed, usage.heapUsed);
  peakExternal = Math.max(peakExternal, usage.external);
}, 5);
const started = performance.now();
const cpuBefore = process.cpuUsage();
let failures = 0;
let error: string | undefined;
try {
  const response = await handler(event(measuredVisits), { awsRequestId: 'measured' });
  failures = response.batchItemFailures.length;
} catch (caught) {
  // E.g. the local S3 emulator refusing a WARC object above its request size limit: the peak so far stands.
  const status = (caught as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const message = caught instanceof Error ? caught.message.split('\n')[0] : String(caught);
  error = status === undefined ? message : `HTTP ${status} from an AWS call (${message})`;
  failures = args.paths.length;
}
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
clearInterval(sampler);
peakRss = Math.max(peakRss, process.resourceUsage().maxRSS * 1024);
process.stdout.write(
  `${JSON.stringify({ startRss, baselineRss, peakRss, peakHeapUsed, peakExternal, seconds, cpuSeconds, failures, ...(error ? { error } : {}) })}\n`,
);
process.exit(0);
