/**
 * The crawl config: stored once per crawl (FrontierTable), never copied into tasks.
 * Defaults are stated here once; every entry point (CLI, handlers) validates through this schema.
 */
import { z } from 'zod';
import { CRAWL_ID_PATTERN, CRAWL_ID_RULE } from '../../shared/contracts.ts';
import { CRAWL_LIMITS, FETCH_LIMITS } from '../base/index.ts';
import { stripUserinfo } from '../urls/index.ts';
import { DEFAULT_MAX_DECODE_RATIO, DEFAULT_STORE_TYPES, isTypePattern } from './page-content.ts';
import { isProxyUrl } from './proxy-url.ts';

/** What a stored page's content record holds (content-record.ts). */
export const CONTENT_MODES = ['markdown', 'text', 'none'] as const;
export type ContentMode = (typeof CONTENT_MODES)[number];

/** Which HTML pages go through the browser (core/content/page-render.ts). */
export const RENDER_MODES = ['never', 'auto', 'always'] as const;
export type RenderMode = (typeof RENDER_MODES)[number];

export const DEFAULT_USER_AGENT = 'serverless-crawler/0.1 (+https://github.com/serverless-crawler)';

export const FetchLimitsSchema = z.object({
  connectTimeoutMs: z.number().int().positive().default(FETCH_LIMITS.connectTimeoutMs),
  headersTimeoutMs: z.number().int().positive().default(FETCH_LIMITS.headersTimeoutMs),
  /** Total deadline per request: undici's own timeouts are inactivity timers a trickling server defeats. */
  totalTimeoutMs: z.number().int().positive().default(FETCH_LIMITS.totalTimeoutMs),
  maxBodyBytes: z.number().int().positive().default(FETCH_LIMITS.maxBodyBytes),
  /** Decoded (decompressed) bytes read for link extraction: decompression bombs stop here. */
  maxDecodedBytes: z.number().int().positive().default(FETCH_LIMITS.maxDecodedBytes),
  maxRedirects: z.number().int().min(0).default(FETCH_LIMITS.maxRedirects),
  maxUrlLength: z.number().int().positive().default(FETCH_LIMITS.maxUrlLength),
  /** Decoded bytes per received byte before a compressed body counts as a decompression bomb (past 1 MiB decoded). */
  maxDecodeRatio: z.number().positive().default(DEFAULT_MAX_DECODE_RATIO),
});

export const CrawlConfigSchema = z.object({
  v: z.literal(1).default(1),
  crawlId: z.string().regex(CRAWL_ID_PATTERN, `crawl id: ${CRAWL_ID_RULE}`),
  /**
   * As given, minus any `user:pass@`: the config is stored and its seeds are recorded (invalid ones
   * as given), so a secret in a seed must not survive parsing. The scope is compiled from these.
   */
  seeds: z.array(z.string().transform(stripUserinfo)).default([]),
  userAgent: z.string().min(1).max(512).default(DEFAULT_USER_AGENT),
  /**
   * Seeds too many for this item (`--seeds-file`, up to millions): streamed and admitted in chunks,
   * and the scope they make (their distinct hosts, domains or prefixes) stored apart in `scopeParts`
   * items that the config store loads with this config (adapters/crawl-scope-store.ts). `seeds` then
   * holds only the seeds given as arguments; `count` is every seed line, arguments included.
   */
  seedFile: z
    .object({
      source: z.string(),
      count: z.number().int().min(0),
      scopeParts: z.number().int().min(0),
    })
    .optional(),
  /** Tests and local demos crawl 127.0.0.1; production crawls must not reach private addresses. */
  allowPrivate: z.boolean().default(false),
  scope: z.enum(['host', 'domain', 'prefix']).default('host'),
  include: z.array(z.string()).default([]),
  /** `--render`: which HTML pages go through the browser (core/content/page-render.ts). */
  render: z.enum(RENDER_MODES).default('never'),
  /** `--render-pattern`: URLs matching any of these are rendered in every mode. */
  renderPatterns: z.array(z.string()).default([]),
  exclude: z.array(z.string()).default([]),
  maxDepth: z.number().int().min(0).default(20),
  /** Pages fetched at most (admitted fetch tasks); unlimited when absent. */
  maxPages: z.number().int().positive().optional(),
  /** Minimum gap between two requests to one host, unless robots.txt Crawl-delay asks for more. */
  delayMs: z.number().int().min(0).default(1000),
  /** Cap on robots.txt Crawl-delay: a host asking for more is crawled at the cap, and that is recorded. */
  maxCrawlDelayMs: z.number().int().min(0).default(30_000),
  /**
   * Cap on a server's Retry-After (429, 503; robots.txt too): the host rests at most this long, and a
   * URL asked to wait longer ends `failed` with code `retry-after-too-long`. 15 min, the longest SQS delay.
   */
  maxRetryAfterMs: z.number().int().min(0).default(CRAWL_LIMITS.maxRetryAfterMs),
  respectRobots: z.boolean().default(true),
  /** Stop the crawl (its queued tasks end `cancelled`) once the counted cost of its AWS calls reaches this (core/crawl/budget.ts). */
  maxCostUsd: z.number().positive().optional(),
  followNofollow: z.boolean().default(false),
  /**
   * Media type patterns (`text/*`, `application/pdf`, `*`) of the 2xx responses that are stored; any
   * other type ends `skipped` with code `content-type`, body not stored. No Content-Type counts as
   * application/octet-stream.
   */
  storeTypes: z
    .array(z.string().refine(isTypePattern, 'a media type pattern such as text/*, application/pdf or *'))
    .default([...DEFAULT_STORE_TYPES]),
  /**
   * What each stored page also gets as a content record (docs/output.md): `markdown` (HTML: main
   * content as Markdown, with metadata; text, JSON, XML: the text), `text` (HTML as plain text
   * instead) or `none`.
   */
  content: z.enum(CONTENT_MODES).default('markdown'),
  /** Also put each page's Markdown (or text) into the WARC file, as a conversion record. */
  warcConversion: z.boolean().default(false),
  /** Attempts for retryable failures before the URL ends as `failed` (kept below the queue's maxReceiveCount). */
  maxAttempts: z.number().int().min(1).max(CRAWL_LIMITS.maxAttempts).default(CRAWL_LIMITS.maxAttempts),
  limits: FetchLimitsSchema.default(FetchLimitsSchema.parse({})),
  /**
   * A re-crawl: the crawl it follows (`--since`). Its fetched URLs are due again, each asked
   * conditionally with its stored validators, and every result says how it changed (core/crawl/recrawl.ts).
   */
  since: z.string().regex(CRAWL_ID_PATTERN, `--since: ${CRAWL_ID_RULE}`).optional(),
  /**
   * Adaptive revisits (`--adaptive`): each URL keeps an interval, moved toward `minMinutes` when its
   * page changed and ×1.5 toward `maxMinutes` when it did not (StormCrawler's arithmetic,
   * core/crawl/recrawl.ts); a re-crawl fetches only the URLs that are due.
   */
  adaptive: z
    .object({ minMinutes: z.number().positive(), maxMinutes: z.number().positive() })
    .refine(
      (bounds) => bounds.minMinutes <= bounds.maxMinutes,
      '--min-interval must not exceed --max-interval',
    )
    .optional(),
  /** A re-crawl also publishes a `Page Changed` event per new, changed or removed page (crawl-events.ts). */
  pageEvents: z.boolean().default(false),
  /**
   * Where the crawl's credentials are (core/crawl/credentials.ts): an SSM SecureString parameter's name,
   * never their values.
   */
  credentials: z.object({ parameter: z.string().regex(/^\/[a-zA-Z0-9_.\-/]{1,1010}$/) }).optional(),
  /**
   * An HTTP proxy every request of the crawl goes through (a CONNECT tunnel), or only the requests to
   * `hosts` (`host[:port]`). Its credentials, if any, are in the credentials parameter.
   */
  proxy: z
    .object({
      url: z.string().refine(isProxyUrl, 'an http:// proxy URL without user, path, query or fragment'),
      hosts: z.array(z.string().min(1)).min(1).optional(),
    })
    .optional(),
  createdAt: z.string().optional(),
});

export type CrawlConfig = z.infer<typeof CrawlConfigSchema>;
export type CrawlConfigInput = z.input<typeof CrawlConfigSchema>;
export type FetchLimits = z.infer<typeof FetchLimitsSchema>;

/** Crawl id used for tasks that arrive as a bare URL (e.g. `aws sqs send-message --message-body https://...`). */
export const DEFAULT_CRAWL_ID = 'default';

export function parseCrawlConfig(input: unknown): CrawlConfig {
  return CrawlConfigSchema.parse(input);
}

/** How many seeds the crawl was submitted with (invalid and repeated ones included). */
export function seedCount(config: Pick<CrawlConfig, 'seeds' | 'seedFile'>): number {
  return config.seedFile?.count ?? config.seeds.length;
}

/**
 * Whether the crawl has seeds, so a scope of its own. A crawl without (the default crawl of bare URLs
 * sent to the queue) scopes each page's links by that page itself.
 */
export function hasSeeds(config: Pick<CrawlConfig, 'seeds' | 'seedFile'>): boolean {
  return config.seedFile !== undefined || config.seeds.length > 0;
}
