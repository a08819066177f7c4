/** What a received HTTP status means for the crawl: keep it, follow it, retry it, or record a failure. */
import { headerValue, retryAfterMs } from '../base/index.ts';
import { stripUserinfo, withoutUserinfo } from '../urls/index.ts';

export type ResponseVerdict =
  | { kind: 'fetched' }
  | { kind: 'redirect'; location: URL }
  | { kind: 'retry'; code: string; retryAfterMs: number | undefined }
  | { kind: 'failed'; code: string; reason: string };

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export function responseVerdict(
  status: number,
  headers: ReadonlyArray<[string, string]>,
  requestUrl: string,
): ResponseVerdict {
  if (status >= 200 && status < 300) return { kind: 'fetched' };
  if (REDIRECT_STATUSES.has(status)) {
    const location = headerValue(headers, 'location');
    if (location === undefined || location.trim() === '') {
      return {
        kind: 'failed',
        code: 'redirect-without-location',
        reason: `HTTP ${status} without a Location header`,
      };
    }
    const target = URL.parse(location.trim(), requestUrl);
    // The location is recorded and followed: a `user:pass@` in it (or inherited from the request
    // URL by a relative one) is a secret that must not reach results or the next request.
    if (target !== null) return { kind: 'redirect', location: withoutUserinfo(target) };
    return {
      kind: 'failed',
      code: 'bad-redirect-location',
      reason: `HTTP ${status} Location ${JSON.stringify(stripUserinfo(location.trim()).slice(0, 200))} is not a valid URL`,
    };
  }
  if (status === 429 || (status >= 500 && status < 600)) {
    return {
      kind: 'retry',
      code: `http-${status}`,
      retryAfterMs: retryAfterMs(headerValue(headers, 'retry-after')),
    };
  }
  return { kind: 'failed', code: `http-${status}`, reason: `the server answered HTTP ${status}` };
}
