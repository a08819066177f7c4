/**
 * The fetch handler's peak memory with 64 concurrent fetches at the default body cap: the real
 * handler (lambdas/fetch/handler.ts, createHandler) in this process alone, its AWS in another
 * (bench/local-aws-process.ts), one SQS event of 64 tasks, every task on its own origin or spread over
 * enough origins that the fetcher's per-origin connection limit does not serialize them. The handler
 * starts all 64 at once; how many bodies it holds together depends on the fetcher's body budget and
 * on when the batch hands each page to the WARC writer (and drops its body).
 *
 * argv[2]: JSON `{env, origins, paths, warmup}`: the function environment, the site's origins, the 64
 * request paths, and a few other paths for a warm-up invocation (modules loaded, JIT, sockets open).
 * Prints one JSON line: `{startRss, baselineRss, peakRss, peakHeapUsed, peakExternal, seconds,
 * failures, error?}` (bytes, seconds): RSS at start, after the warm-up, and at its peak during the
 * measured invocation; peakExternal is V8's external memory (Buffers: bodies, WARC files), dead ones
 * included until a GC collects them. Samples are every 5 ms of event loop time, so peakRss also takes
 * the kernel's maximum (a long synchronous stretch hides samples).
 */
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { createHandler } from '../lambdas/fetch/handler.ts';

interface MemoryArgs {
  env: Record<string, string>;
  origins: string[];
  paths: string[];
  warmup: string[];
}

const args = JSON.parse(process.argv[2] ?? '{}') as MemoryArgs;
const startRss = process.memoryUsage.rss();
const handler = createHandler({
  ...args.env,
  DEFAULT_CRAWL_CONFIG: JSON.stringify({ allowPrivate: true, respectRobots: false, delayMs: 0 }),
});

let sequence = 0;
function event(paths: readonly string[]): SQSEvent {
  const records = paths.map((path, i): SQSRecord => {
    const id = `m-${++sequence}`;
    return {
      messageId: id,
      receiptHandle: id,
      // A bare URL is a task of the `default` crawl, whose config comes from DEFAULT_CRAWL_CONFIG.
      body: `${args.origins[i % args.origins.length]}${path}`,
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

await handler(event(args.warmup), { awsRequestId: 'warmup' });
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
let failures = 0;
let error: string | undefined;
try {
  const response = await handler(event(args.paths), { awsRequestId: 'measured' });
  failures = response.batchItemFailures.length;
} catch (caught) {
  // E.g. the local S3 emulator refusing a WARC object above its request size limit: the peak so far stands.
  const status = (caught as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const message = caught instanceof Error ? caught.message.split('\n')[0] : String(caught);
  error = status === undefined ? message : `HTTP ${status} from an AWS call (${message})`;
  failures = args.paths.length;
}
const seconds = (performance.now() - started) / 1000;
clearInterval(sampler);
peakRss = Math.max(peakRss, process.resourceUsage().maxRSS * 1024);
process.stdout.write(
  `${JSON.stringify({ startRss, baselineRss, peakRss, peakHeapUsed, peakExternal, seconds, failures, ...(error ? { error } : {}) })}\n`,
);
process.exit(0);
