/** One result record per finished URL: what the aggregate function indexes. */
import { z } from 'zod';
import { OUTCOMES } from '../base/index.ts';

/** A gzip member of an object in the page bucket: one ranged GET of `offset` .. `offset + length - 1`. */
export const WarcPointerSchema = z.object({
  key: z.string(),
  offset: z.number().int().min(0),
  length: z.number().int().positive(),
});

/**
 * A link its page found and will not fetch (scope, depth, nofollow), carried by the page's result: the
 * aggregate writes its `skipped` line with the page's (docs/frontier.md, "Skipped links").
 */
export const CarriedLinkSchema = z.object({
  url: z.string(),
  key: z.string(),
  depth: z.number().int().min(0),
  code: z.string(),
  reason: z.string(),
});

/** How a re-crawl's URL compares with the crawl it follows (`--since`; lambdas/core/crawl/recrawl.ts). */
export const CHANGES = ['new', 'same', 'changed', 'removed'] as const;
export type Change = (typeof CHANGES)[number];

/**
 * A capture stored as a WARC revisit record: the earlier capture it confirms, whose response record
 * holds the payload (`crawler get` reads it from there).
 */
export const RevisitSchema = z.object({
  profile: z.enum(['server-not-modified', 'identical-payload-digest']),
  /** WARC-Target-URI and WARC-Date of the capture confirmed. */
  uri: z.string(),
  date: z.string(),
  warc: WarcPointerSchema,
});

export const ResultSchema = z.object({
  v: z.literal(1),
  crawlId: z.string(),
  /** Frontier key: sha256 of the normalized URL (for a malformed task: of `invalid:` + its message body). */
  key: z.string(),
  url: z.string(),
  finalUrl: z.string().optional(),
  status: z.number().int().optional(),
  outcome: z.enum(OUTCOMES),
  /** Stable machine code of why (e.g. `address-blocked`, `http-404`); absent for plain successes. */
  code: z.string().optional(),
  reason: z.string().optional(),
  contentType: z.string().optional(),
  bytes: z.number().int().min(0),
  sha1: z.string().optional(),
  truncated: z.enum(['length', 'time']).optional(),
  location: z.string().optional(),
  /** The host's robots.txt Crawl-delay was above the crawl's cap: it was crawled at the cap instead. */
  crawlDelayCapped: z.literal(true).optional(),
  /** `<link rel=canonical>` of an HTML page, resolved. */
  canonical: z.string().optional(),
  /** Its links and content come from the DOM a browser rendered (`--render`; a WARC conversion record). */
  rendered: z.literal(true).optional(),
  warc: WarcPointerSchema.optional(),
  /** The page's content record (Markdown, text, metadata) in its crawl's content file. */
  content: WarcPointerSchema.optional(),
  fetchedAt: z.string(),
  ms: z.number().min(0),
  depth: z.number().int().min(0),
  attempt: z.number().int().min(0).optional(),
  outlinks: z.number().int().min(0),
  /** Validators the server sent (ETag, Last-Modified): a re-crawl's conditional request sends them back. */
  etag: z.string().optional(),
  lastModified: z.string().optional(),
  /** Re-crawls only: new, same, changed or removed against the crawl it follows. */
  change: z.enum(CHANGES).optional(),
  revisit: RevisitSchema.optional(),
  /** Adaptive revisits (`--adaptive`): the URL's interval in minutes, and when it is due again. */
  interval: z.number().positive().optional(),
  dueAt: z.string().optional(),
  /** The page's skipped links it carries (never part of its own index line). */
  skipped: z.array(CarriedLinkSchema).optional(),
});

export type CrawlResult = z.infer<typeof ResultSchema>;
export type WarcPointer = z.infer<typeof WarcPointerSchema>;
export type CarriedLink = z.infer<typeof CarriedLinkSchema>;
export type Revisit = z.infer<typeof RevisitSchema>;
