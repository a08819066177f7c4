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
  /**
   * The queues' MaximumMessageSize (cdk/limits.ts QUEUE sets it), which SQS also applies to a whole
   * SendMessageBatch: senders stay within it. SQS takes up to 1 MiB now; 256 KiB is accepted by every
   * region and emulator.
   */
  sqsMaxMessageBytes: 256 * KiB,
  /** EventBridge PutEvents: at most 10 entries a call, and 256 KiB of them (eb-putevent-size.html). */
  putEventsEntries: 10,
  putEventsBytes: 256 * KiB,
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
  /**
   * `--delay` (a crawl's pace per host): at most the longest SQS delay, so a host handed back waits
   * for its next request in one message; a longer pace is a mistake (a crawl of one page a day),
   * not politeness.
   */
  maxDelayMs: AWS_LIMITS.sqsMaxDelaySeconds * 1000,
} as const;

/**
 * Every retry's wait (core/base/backoff.ts computes it): `baseMs` doubles per attempt up to `maxMs`.
 * `equal` jitter keeps at least half the wait, `full` spreads it from 0, `none` is a stored time.
 */
export const RETRY_BACKOFF = {
  /** A page that failed retryably (5xx, timeout, reset) waits on its URL item: 2 s, 4 s, ... 5 min. */
  page: { baseMs: 2_000, maxMs: 300_000, jitter: 'equal' },
  /**
   * A message whose processing failed (an AWS step after its retries) comes back after this, not the
   * queue's visibility timeout (6x the function timeout): both functions use it.
   */
  failedMessage: { baseMs: 2_000, maxMs: 60_000, jitter: 'equal' },
  /** An unreachable robots.txt: 30 s, 1 min, ... (~8.5 h at most); its host waits until `retryAt`. */
  robotsUnreachable: { baseMs: 30_000, maxMs: 30_000 * 2 ** 10, jitter: 'none' },
  /** An AWS step repeated in process after the SDK's own retries (or a round of SQS batch sends). */
  awsStep: { baseMs: 100, maxMs: 3_200, jitter: 'full' },
  /** An optimistic DynamoDB update that lost to a concurrent writer: it re-reads, the pause only spreads writers apart. */
  writeConflict: { baseMs: 2, maxMs: 50, jitter: 'full' },
} as const;

export const ROBOTS_LIMITS = {
  /** A fetched policy is used for at most a day (RFC 9309 §2.4). */
  ttlMs: 24 * 60 * 60 * 1000,
  /** Parsed policies a container keeps (crawl and origin each). */
  cacheEntries: 1000,
} as const;

/** A host's state as its visits keep it (host-visit.ts, docs/frontier.md). */
export const FRONTIER_LIMITS = {
  /**
   * Index-part checks (S3 HEADs) a drain keeps in flight at once: a host of 100,000 URLs names
   * thousands of parts, and one at a time at ~20 ms each 3,000 of them used up a 60 s function.
   */
  partChecksAtOnce: 32,
  /**
   * Shards of a crawl read at once by a look for active hosts and by the `DONE#` sums: a completion
   * check reads every shard four times, and 128 reads one after another took ~0.5 s locally and
   * about a second on AWS at the end of every crawl.
   */
  shardReadsAtOnce: 8,
  /**
   * URLs a host keeps in flight (fetched, results not yet finalized): the host item's `inflight` set
   * (64-character keys) stays under ~27 KB, since every write of the item costs a unit per KB (a
   * wake's `ADD` too) and one past 400 KB fails. A visit at delay 0 (~100 pages/s, results finalized
   * ~3 s after their fetch) stays below it; a visit that reaches it hands its host back to wait.
   */
  inflightKeys: 400,
  /**
   * URL items a visit reads of its host's partition in one page at most: about 1 MB of items (a done
   * item is 400-650 bytes), the most one DynamoDB Query returns, so a page is one call.
   */
  hostUrlPage: 1_600,
  /**
   * The first page a visit reads; each further page of the visit doubles, up to hostUrlPage. About
   * what a visit fetches at the default pace (~27 pages in its ~29 s of requests): a visit that stops
   * there has read little it did not use, and one that walks on (done items, a fast host) soon reads
   * full pages.
   */
  hostUrlFirstPage: 32,
  /**
   * Bytes of the skipped links (scope, depth, nofollow) a page's result carries (`skipped`, JSON): the
   * aggregate writes their lines with the page's, so they need no host item and no visit. Results go
   * out packed into SQS messages of at most 256 KiB (AWS_LIMITS.sqsMaxMessageBytes): a quarter leaves
   * the page's own record and its neighbours room. Past it a page's other skipped links are admitted
   * held and get results of their own (docs/frontier.md, "Skipped links").
   */
  carriedBytes: 64 * KiB,
} as const;

/**
 * Partition keys a crawl's host, `DONE#` and robots items are spread over (`CRAWL#<crawlId>#00` ..
 * `#31`, adapters/frontier-schema.ts). One key takes at most 1,000 write units/s. The host items take
 * ~2.15 units a fetched page (a wake at 2, acquire and release 4 ÷ 27), so as one key they were full
 * at ~450 pages/s and throttled in any burst of new hosts, while deploy.md's largest concurrency (17
 * invocations × 25 visits ÷ 1.1 s) asks up to ~386 pages/s of one crawl, a shorter --delay more.
 * One of 32 shards takes ~0.07 units a page (0.15 with a host linked from every page): full at
 * ~6,800 pages/s, so the crawl's own keys no longer bind (docs/scale.md). More shards would only
 * cost reads: a completion check reads every shard twice (docs/frontier.md, "Completion").
 */
export const FRONTIER_SHARDS = 32;

/** Names of `--markdown-dir` files (cli/markdown-names.ts): what Linux, macOS and Windows all take. */
export const MARKDOWN_NAME_LIMITS = {
  /**
   * Bytes of one file or directory name before its suffixes: file systems take 255 (UTF-8 bytes, or
   * UTF-16 units); the rest is room for `_<8 hex>` suffixes (a cut, a query, a collision) and `.md`.
   */
  segmentBytes: 200,
  /** Bytes of a file's path under the directory: macOS refuses paths over 1,024; half is left for the directory's own. */
  pathBytes: 512,
} as const;

/** A re-crawl (core/crawl/recrawl.ts). */
export const RECRAWL_LIMITS = {
  /**
   * Characters of an ETag or Last-Modified kept: each goes back as a request header, on the URL's item
   * and in its result. Real ones are under 100; a server's 10 KB validator is not worth a conditional request.
   */
  validatorChars: 512,
} as const;

export const STORAGE_LIMITS = {
  /**
   * Response bodies held at once per fetch container; fetches past it pause until there is room (64
   * to 100 fetches at the 5 MiB cap peaked at 482-507 MB, within the function's 768 MB: cdk/limits.ts).
   */
  bufferedBodyBytes: 24 * MiB,
  /** A WARC (or content) file is closed here: under the local S3's ~11 MiB request limit with a 5 MiB body. */
  warcFileBytes: 8 * MiB,
} as const;

export const CONTENT_LIMITS = {
  /**
   * CPU time of one page's content extraction (main-content.ts): reading stops here, what was read
   * gets as much again to be rendered, and the content record says `truncated: "time"`; the page's
   * WARC record and links do not depend on it. Extraction is linear in the page, so this is a
   * backstop far above real pages: the slowest bench page (test/data/article-extraction, 180 KB)
   * takes 4 ms, a 5 MiB page of tiny linked paragraphs ~1 s (measured on a loaded 2-core machine).
   */
  extractionCpuMs: 500,
  /**
   * Characters of a <title> read: titles are a line, and a hostile megabyte one would be carried
   * into every record, front matter and llms.txt line of its page.
   */
  titleChars: 2_000,
  /** Characters of one JSON-LD block read; a longer block is cut off, fails to parse and is ignored. */
  jsonLdChars: 1_000_000,
  /**
   * Characters of one listing item's description (main-content.ts renders a section index, product
   * grid or search results as `- [Title](url) — description`): an item is a line that says what is
   * behind its link, and a card's megabyte of text would otherwise become one line of the Markdown.
   */
  itemDescriptionChars: 500,
} as const;

/** A PDF's text (core/content/pdf-content.ts, pdf-streams.ts). */
export const PDF_LIMITS = {
  /** Pages read; the document's page count is still reported. */
  maxPages: 200,
  /**
   * Decoded bytes of all the document's streams, counted from the raw bytes before pdf.js opens it
   * (pdf.js decodes streams without a bound: a 5 MiB Flate bomb would be gigabytes).
   */
  maxDecodedBytes: 64 * MiB,
  /** Wall-clock time from the document's opening to the last page read. */
  timeBudgetMs: 5_000,
} as const;

/** A page rendered in the browser (`--render`, core/content/page-render.ts, adapters/browser-renderer.ts). */
export const RENDER_LIMITS = {
  /**
   * Wall-clock time of one render, from the browser's first look at the page to its DOM read back:
   * an endless script or an infinite scroll ends here (the page is kept as fetched).
   */
  timeMs: 15_000,
  /** Subrequests of one page (scripts, styles, XHR): past it they are refused. */
  maxRequests: 200,
  /** Bytes of a page's subrequests' responses: past it their connections are cut. */
  maxBytes: 20 * MiB,
  /** Characters of the rendered DOM kept (its WARC record, links and content). */
  maxDomChars: 5_000_000,
  /**
   * A page sent to the render function holds its host (crawl/host-visit-ports.ts RenderHold): no visit fetches from
   * it until the render function ends the hold (core/batches/render-batch.ts). A held host is looked at this
   * often meanwhile, in case that end was missed; the visit finds the hold and hands it back again.
   */
  holdRecheckMs: 30_000,
  /**
   * Past this the hold lapses and the host's other URLs are fetched: a render that has not happened
   * in an hour is in RenderDLQ (its message's receives are spent in 30 minutes), and its URL waits
   * for a redrive, as a result in ResultsDLQ does.
   */
  holdMaxMs: 3_600_000,
} as const;

/** A crawl's credentials (core/crawl/credentials.ts). */
export const CREDENTIAL_LIMITS = {
  /**
   * Bytes of a crawl's credentials (headers, cookies, Basic): they are kept in one SSM SecureString
   * parameter, which holds 4 KB in the standard tier (the advanced tier costs a monthly fee a
   * parameter).
   */
  bundleBytes: 4096,
  /**
   * Seconds a fetch container keeps a crawl's credentials read from SSM: a changed parameter holds
   * within this, and a crawl of many pages reads it once a container, not once a page.
   */
  cacheSeconds: 300,
} as const;

/** A crawl's seeds (lambdas/submission/submit-crawl.ts) and the scope they make (adapters/crawl-scope-store.ts). */
export const SEED_LIMITS = {
  /**
   * Bytes of a crawl config holding its seeds: one DynamoDB item holds at most 400 KB, and this
   * leaves room for the keys and attribute names. More seeds go by `--seeds-file`, streamed, their
   * scope stored apart.
   */
  inlineConfigBytes: 380_000,
  /**
   * Bytes of scope keys (hosts, domains or prefixes, one a line, before gzip) per stored scope item:
   * an item stays far below both DynamoDB's 400 KB and the 100 KB no item of a crawl should pass,
   * and a million distinct hosts (~20 MB) make ~200 items written once.
   */
  scopePartBytes: 96 * KiB,
  /** Seed (and sitemap) URLs admitted and sent per round: memory for one chunk, progress per chunk. */
  chunkUrls: 500,
} as const;
