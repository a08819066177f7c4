/**
 * The fetch function's work for one batch of task messages, over ports only:
 * parse → fetch → one WARC file per crawl → results and follow-up tasks → which messages to retry.
 */
import { backoffSeconds } from './backoff.ts';
import type { CrawlConfig } from './crawl-config.ts';
import { describeError, isCrawlError, PermanentError } from './errors.ts';
import { headerValue } from './http-headers.ts';
import type { Outcome } from './outcome.ts';
import type {
  BlobWriter,
  CrawlConfigReader,
  OutgoingTask,
  PageFetcher,
  PageResponse,
  ResultSender,
  TaskSender,
} from './ports.ts';
import { responseVerdict } from './response-verdict.ts';
import type { CrawlResult } from './result.ts';
import { parseTaskMessage, type Task } from './task.ts';
import { WarcFileBuilder } from './warc.ts';

export interface IncomingMessage {
  id: string;
  body: string;
  /** SQS ApproximateReceiveCount: 1 on first delivery. */
  receiveCount: number;
}

export interface RetryRequest {
  id: string;
  /** Seconds until the message should be visible again. */
  delaySeconds: number;
  code: string;
}

export interface FetchBatchDeps {
  fetcher: PageFetcher;
  configs: CrawlConfigReader;
  blobs: BlobWriter;
  results: ResultSender;
  tasks: TaskSender;
  invocationId: string;
  now?: () => Date;
}

export interface FetchBatchReport {
  retries: RetryRequest[];
  results: CrawlResult[];
  warcKeys: string[];
  followUps: OutgoingTask[];
}

interface Captured {
  task: Task;
  config: CrawlConfig;
  response: PageResponse;
  result: Omit<CrawlResult, 'warc' | 'sha1'>;
}

const MAX_SQS_DELAY_SECONDS = 900;

export async function processFetchBatch(
  messages: readonly IncomingMessage[],
  deps: FetchBatchDeps,
): Promise<FetchBatchReport> {
  const now = deps.now ?? (() => new Date());
  const results: CrawlResult[] = [];
  const retries: RetryRequest[] = [];
  const followUps: OutgoingTask[] = [];
  const captured: Captured[] = [];

  await Promise.all(
    messages.map(async (message) => {
      const parsed = parseTaskMessage(message.body);
      if (!parsed.ok) {
        results.push(
          bareResult(
            { crawlId: parsed.crawlId, url: parsed.url ?? '', depth: 0 },
            'invalid',
            parsed.code,
            parsed.reason,
            now(),
          ),
        );
        return;
      }
      const { task } = parsed;
      const attempt = Math.max(task.attempt ?? 0, message.receiveCount);
      let config: CrawlConfig;
      try {
        config = await deps.configs.get(task.crawlId);
      } catch (error) {
        if (isCrawlError(error) && error.disposition === 'record') {
          results.push(bareResult(task, (error as PermanentError).outcome, error.code, error.message, now()));
          return;
        }
        throw error;
      }
      const started = now();
      try {
        const url = checkedUrl(task.url, config);
        const response = await deps.fetcher.fetch({
          url,
          userAgent: config.userAgent,
          allowPrivate: config.allowPrivate,
          limits: config.limits,
        });
        const verdict = responseVerdict(response.status, response.headers, response.url);
        if (verdict.kind === 'retry' && attempt < config.maxAttempts) {
          retries.push({
            id: message.id,
            code: verdict.code,
            delaySeconds: retryDelay(attempt, verdict.retryAfterMs),
          });
          return;
        }
        const base = {
          ...bareResult(task, 'fetched', undefined, undefined, response.startedAt),
          finalUrl: response.url,
          status: response.status,
          contentType: headerValue(response.headers, 'content-type'),
          bytes: response.body.byteLength,
          truncated: response.truncated,
          ms: response.elapsedMs,
          attempt,
        };
        if (verdict.kind === 'redirect') {
          const hops = (task.redirects ?? 0) + 1;
          const location = verdict.location.href;
          if (hops > config.limits.maxRedirects) {
            const reason = `redirect chain longer than ${config.limits.maxRedirects} hops (next: ${location})`;
            captured.push({
              task,
              config,
              response,
              result: { ...base, outcome: 'redirected', code: 'too-many-redirects', reason, location },
            });
          } else {
            captured.push({ task, config, response, result: { ...base, outcome: 'redirected', location } });
            followUps.push({
              task: {
                v: 1,
                crawlId: task.crawlId,
                url: location,
                depth: task.depth,
                parent: task.url,
                redirects: hops,
              },
            });
          }
        } else if (verdict.kind === 'fetched') {
          captured.push({ task, config, response, result: base });
        } else {
          const reason =
            verdict.kind === 'retry'
              ? `the server answered HTTP ${response.status} on ${attempt} attempts`
              : verdict.reason;
          captured.push({
            task,
            config,
            response,
            result: { ...base, outcome: 'failed', code: verdict.code, reason },
          });
        }
      } catch (error) {
        const elapsed = now().getTime() - started.getTime();
        if (isCrawlError(error) && error.disposition === 'record') {
          const permanent = error as PermanentError;
          results.push({
            ...bareResult(task, permanent.outcome, permanent.code, permanent.message, started),
            ms: elapsed,
            attempt,
          });
          return;
        }
        const code = isCrawlError(error) ? error.code : 'unexpected-error';
        if (attempt < config.maxAttempts) {
          const retryAfter =
            isCrawlError(error) && 'retryAfterMs' in error
              ? (error.retryAfterMs as number | undefined)
              : undefined;
          retries.push({ id: message.id, code, delaySeconds: retryDelay(attempt, retryAfter) });
          return;
        }
        const reason = `${describeError(error)} (gave up after ${attempt} attempts)`;
        results.push({ ...bareResult(task, 'failed', code, reason, started), ms: elapsed, attempt });
      }
    }),
  );

  const warcKeys = await storeWarcFiles(captured, results, deps, now());
  await deps.results.sendResults(results);
  if (followUps.length > 0) await deps.tasks.sendTasks(followUps);
  return { retries, results, warcKeys, followUps };
}

function checkedUrl(raw: string, config: CrawlConfig): URL {
  if (raw.length > config.limits.maxUrlLength) {
    throw new PermanentError(
      'invalid',
      'url-too-long',
      `URL is ${raw.length} characters; at most ${config.limits.maxUrlLength} are accepted`,
    );
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new PermanentError(
      'invalid',
      'invalid-url',
      `not a valid absolute URL: ${JSON.stringify(raw.slice(0, 200))}`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PermanentError(
      'invalid',
      'unsupported-scheme',
      `scheme ${url.protocol} is not crawlable; expected http: or https:`,
    );
  }
  return url;
}

function retryDelay(attempt: number, retryAfterMs: number | undefined): number {
  const backoff = backoffSeconds(attempt);
  const wanted = retryAfterMs === undefined ? backoff : Math.max(backoff, Math.ceil(retryAfterMs / 1000));
  return Math.min(MAX_SQS_DELAY_SECONDS, wanted);
}

function bareResult(
  task: Pick<Task, 'crawlId' | 'url' | 'depth'>,
  outcome: Outcome,
  code: string | undefined,
  reason: string | undefined,
  at: Date,
): CrawlResult {
  return {
    v: 1,
    crawlId: task.crawlId,
    url: task.url,
    outcome,
    ...(code === undefined ? {} : { code }),
    ...(reason === undefined ? {} : { reason }),
    bytes: 0,
    fetchedAt: at.toISOString(),
    ms: 0,
    depth: task.depth,
    outlinks: 0,
  };
}

/** One WARC file per crawl per invocation, written with one PUT; results point at their response record. */
async function storeWarcFiles(
  captured: readonly Captured[],
  results: CrawlResult[],
  deps: FetchBatchDeps,
  at: Date,
): Promise<string[]> {
  const byCrawl = Map.groupBy(captured, (entry) => entry.task.crawlId);
  const keys: string[] = [];
  for (const [crawlId, entries] of byCrawl) {
    const day = at.toISOString().slice(0, 10);
    const key = `warc/${crawlId}/${day}/${deps.invocationId}.warc.gz`;
    const builder = new WarcFileBuilder({ filename: key.split('/').at(-1)! });
    builder.addWarcinfo(
      { software: 'serverless-crawler', format: 'WARC File Format 1.1', 'crawl-id': crawlId },
      at,
    );
    for (const { response, result } of entries) {
      const written = builder.addResponse({
        targetUri: response.url,
        date: response.startedAt,
        httpVersion: response.httpVersion,
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
        body: response.body,
        ip: response.remoteAddress,
        truncated: response.truncated,
      });
      builder.addRequest({
        targetUri: response.url,
        date: response.startedAt,
        requestLine: response.requestLine,
        headers: response.requestHeaders,
        ip: response.remoteAddress,
        concurrentTo: written.recordId,
      });
      builder.addMetadata({
        targetUri: response.url,
        date: response.startedAt,
        concurrentTo: written.recordId,
        fields: [
          ['fetchTimeMs', String(response.elapsedMs)],
          ...(result.location === undefined
            ? []
            : ([['redirectTo', result.location]] as Array<[string, string]>)),
        ],
      });
      results.push({
        ...result,
        sha1: written.payloadSha1Hex,
        warc: { key, offset: written.offset, length: written.length },
      });
    }
    await deps.blobs.put(key, builder.toBytes(), 'application/warc');
    keys.push(key);
  }
  return keys;
}
