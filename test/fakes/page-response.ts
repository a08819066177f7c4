/**
 * A fetcher's answer as the fakes give it: no socket, sent and answered at `at` (the caller's clock),
 * the request line from the URL's path.
 */
import type { PageRequest, PageResponse } from '../../lambdas/core/crawl/index.ts';

export function syntheticResponse(
  request: PageRequest,
  answer: { status?: number; contentType: string; body: string; at: number; elapsedMs?: number },
): PageResponse {
  const status = answer.status ?? 200;
  return {
    url: request.url.href,
    requestLine: `GET ${request.url.pathname} HTTP/1.1`,
    requestHeaders: [],
    httpVersion: '1.1',
    status,
    statusText: status === 200 ? 'OK' : 'Status',
    headers: [['content-type', answer.contentType]],
    body: new TextEncoder().encode(answer.body),
    truncated: undefined,
    remoteAddress: '192.0.2.1',
    startedAt: new Date(answer.at),
    sentAt: answer.at,
    elapsedMs: answer.elapsedMs ?? 0,
  };
}
