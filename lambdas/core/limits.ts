/**
 * Every runtime limit of the crawl in one place, each with its reason: the twin of cdk/limits.ts
 * (deploy-time). Plain data, no imports. The README's limits table is checked against it
 * (test/unit/limits-docs.test.ts).
 */

const KiB = 1024;
const MiB = 1024 * KiB;

/** Limits AWS enforces that the code must stay within (the strict local layer enforces them too). */
export const AWS_LIMITS = {
  /** SQS DelaySeconds: 0 to 900 (15 min); a longer wait is re-sent when the first delay ends. */
  sqsMaxDelaySeconds: 900,
} as const;

/** Per-request limits of the fetcher (a crawl's `limits` defaults; crawl-config.ts). */
export const FETCH_LIMITS = {
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  /** undici's own timeouts are inactivity timers that a trickling server defeats: a total deadline. */
  totalTimeoutMs: 20_000,
  /** Body bytes stored per response; longer ones are cut and marked `truncated: "length"`. */
  maxBodyBytes: 5 * MiB,
  /** Decoded (decompressed) bytes read for links and content: decompression bombs stop here. */
  maxDecodedBytes: 20 * MiB,
  maxRedirects: 5,
  maxUrlLength: 2048,
  /** Decoded bytes per received byte before a compressed body is a bomb (Apache POI's 1:100). */
  maxDecodeRatio: 100,
} as const;

export const CRAWL_LIMITS = {
  /** Attempts for retryable failures: below the queues' maxReceiveCount (5), so a URL ends with a result. */
  maxAttempts: 4,
  /**
   * Retry-After honoured (429, 503): at most the longest SQS delay, so one message can carry the
   * wait; a longer one ends the URL `failed`, `retry-after-too-long`.
   */
  maxRetryAfterMs: AWS_LIMITS.sqsMaxDelaySeconds * 1000,
} as const;

export const ROBOTS_LIMITS = {
  /** A fetched policy is used for at most a day (RFC 9309 §2.4). */
  ttlMs: 24 * 60 * 60 * 1000,
  /** Parsed policies a container keeps (crawl and origin each). */
  cacheEntries: 1000,
} as const;

export const STORAGE_LIMITS = {
  /**
   * Response bodies held at once per fetch container; fetches past it pause until there is room (64
   * fetches at the 5 MiB cap peaked at ~225 MB, within the function's 1,024 MB).
   */
  bufferedBodyBytes: 24 * MiB,
  /** A WARC (or content) file is closed here: under the local S3's ~11 MiB request limit with a 5 MiB body. */
  warcFileBytes: 8 * MiB,
} as const;
