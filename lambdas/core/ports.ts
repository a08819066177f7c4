/**
 * What the pure crawl logic needs from the outside world. Adapters (lambdas/adapters) implement
 * these over undici and the AWS SDK; core code never imports either.
 */
import type { CrawlConfig, FetchLimits } from './crawl-config.ts';
import type { CrawlResult } from './result.ts';
import type { Task } from './task.ts';

export interface PageRequest {
  url: URL;
  userAgent: string;
  allowPrivate: boolean;
  limits: FetchLimits;
}

export interface PageResponse {
  url: string;
  requestLine: string;
  requestHeaders: Array<[string, string]>;
  httpVersion: string;
  status: number;
  statusText: string;
  headers: Array<[string, string]>;
  body: Uint8Array;
  truncated: 'length' | 'time' | undefined;
  remoteAddress: string;
  startedAt: Date;
  elapsedMs: number;
}

export interface PageFetcher {
  fetch(request: PageRequest): Promise<PageResponse>;
}

export interface OutgoingTask {
  task: Task;
  delaySeconds?: number;
}

export interface TaskSender {
  sendTasks(tasks: readonly OutgoingTask[]): Promise<void>;
}

export interface ResultSender {
  sendResults(results: readonly CrawlResult[]): Promise<void>;
}

export interface BlobWriter {
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
}

export interface CrawlConfigReader {
  get(crawlId: string): Promise<CrawlConfig>;
}
