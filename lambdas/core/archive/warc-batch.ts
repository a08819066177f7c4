/**
 * The WARC and content files of one fetch invocation, written as pages arrive: each page's records go into the
 * open file of its crawl at once (so the caller can drop the body), and a file that reaches
 * `maxFileBytes` is closed and uploaded in the background while later pages go to the next one.
 * Usually that is one file per crawl per invocation (S3 PUTs per page: a fraction of one); big pages
 * split it, which keeps every object under the local S3 emulator's request size limit (~11 MiB) and
 * the writer's memory at about one open file per crawl plus the uploads in flight.
 * Each result points at its response record's gzip member.
 *
 * A page's content record (content-record.ts), when it has one, goes the same way into its crawl's
 * content file: gzip JSONL, one gzip member per line, so the result's `content` pointer is one ranged
 * GET and the whole file is one `zcat`. With `warcConversion`, the record's Markdown (or text) also
 * goes into the WARC file as a conversion record referring to the response.
 */
import { gzipSync } from 'node:zlib';
import { contentKey, warcKey } from '../../shared/contracts.ts';
import { headerValue, STORAGE_LIMITS } from '../base/index.ts';
import {
  type BlobWriter,
  changeOf,
  type IntervalBounds,
  nextInterval,
  type PageResponse,
  type PriorCapture,
  revisitProfileOf,
} from '../crawl/index.ts';
import type { ContentRecord, CrawlResult, Revisit } from '../results/index.ts';
import {
  formatSha1,
  type PreparedResponse,
  prepareResponse,
  WarcFileBuilder,
  type WarcRecordRef,
} from './warc.ts';

export interface CapturedPage {
  response: PageResponse;
  /** The result, complete but for its WARC and content pointers and payload digest. */
  result: CrawlResult;
  content?: ContentRecord;
  /** Also write the content into the WARC file as a conversion record. */
  warcConversion?: boolean;
  /** The DOM a browser rendered from the response (`--render`): a conversion record referring to it. */
  rendered?: string;
  /**
   * A re-crawl's page, with its earlier capture if it had one: the result gets its `change`, and a
   * capture that repeats the earlier one is written as a revisit record (recrawl.ts).
   */
  recrawl?: { prior?: PriorCapture | undefined };
  /** Adaptive revisits: the result gets the URL's next interval and due time (recrawl.ts). */
  adaptive?: IntervalBounds;
  /**
   * The response is in a WARC file already, as this record (a page rendered after its fetch:
   * render-batch.ts): only its conversion records are written, and the result keeps its pointers.
   */
  stored?: { recordId: string };
}

/** What a re-crawl adds to a captured page's result. */
type RecrawlFields = Pick<CrawlResult, 'change' | 'revisit' | 'etag' | 'lastModified'>;

/** What a page's records came to: where its capture record lies, and the payload it stands for. */
interface Written {
  ref: WarcRecordRef;
  sha1: string;
  revisit?: Revisit;
}

/** A capture to write as a revisit: the earlier capture it refers to, and that capture's payload SHA-1. */
interface PlannedRevisit {
  record: Revisit;
  sha1: string;
}

export interface WarcBatchWriterOptions {
  /**
   * A file is closed before a page's records would take it past this size; a page whose records alone
   * are larger gets a file of its own. Default 8 MiB: under fauxqs's ~11 MiB request limit even with
   * a whole 5 MiB body, and few enough files (S3 PUTs) per page.
   */
  maxFileBytes?: number;
  /** `ready()` waits while uploads in flight hold more than this many bytes. Default 2 × maxFileBytes. */
  maxPendingBytes?: number;
  /** zlib level of each record's gzip member (default zlib's 6). */
  gzipLevel?: number;
}

export const DEFAULT_MAX_WARC_FILE_BYTES: number = STORAGE_LIMITS.warcFileBytes;

/**
 * zlib level of a content record's gzip member. Level 1: on the bench site's pages (58 KB records:
 * Markdown and text) level 6 took 2.3 ms a record, more than extracting it (0.4 ms), for 18 % of the
 * bytes instead of 24 %.
 */
export const CONTENT_GZIP_LEVEL = 1;

interface OpenFile {
  key: string;
  builder: WarcFileBuilder;
  pages: number;
}

/** A content file being filled: one gzip member per JSON line. */
interface OpenContentFile {
  key: string;
  members: Buffer[];
  byteLength: number;
}

interface Upload {
  key: string;
  bytes: Uint8Array;
  type: string;
}

const WARC_TYPE = 'application/warc';
/** As the results index parts are stored: gzip-compressed JSON lines. */
const JSONL_GZ = 'application/x-ndjson';

export class WarcBatchWriter {
  readonly #blobs: BlobWriter;
  readonly #invocationId: string;
  readonly #at: Date;
  readonly #maxFileBytes: number;
  readonly #maxPendingBytes: number;
  readonly #gzipLevel: number | undefined;
  /** The open file of each crawl, in the order crawls first appeared. */
  readonly #open = new Map<string, OpenFile>();
  /** Files opened so far per crawl (the next file's part number). */
  readonly #parts = new Map<string, number>();
  readonly #openContent = new Map<string, OpenContentFile>();
  readonly #contentParts = new Map<string, number>();
  readonly #keys: string[] = [];
  readonly #results: CrawlResult[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  /** Uploads that failed, kept (with their bytes) so that a later finish() tries them again. */
  #failed: Array<{ upload: Upload; error: unknown }> = [];
  #pendingBytes = 0;
  #drainWaiters: Array<() => void> = [];
  #finishing = false;

  constructor(blobs: BlobWriter, invocationId: string, at: Date, options: WarcBatchWriterOptions = {}) {
    const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_WARC_FILE_BYTES;
    if (!(maxFileBytes > 0)) throw new RangeError(`maxFileBytes must be positive, got ${maxFileBytes}`);
    this.#blobs = blobs;
    this.#invocationId = invocationId;
    this.#at = at;
    this.#maxFileBytes = maxFileBytes;
    this.#maxPendingBytes = options.maxPendingBytes ?? 2 * maxFileBytes;
    this.#gzipLevel = options.gzipLevel;
  }

  /** Bytes of closed files whose upload has not finished. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /**
   * Writes the page's request, response and metadata records into its crawl's open file. Nothing
   * keeps a reference to the body afterwards. A file that reaches maxFileBytes is closed and its
   * upload started; upload errors surface in finish().
   */
  add(page: CapturedPage): void {
    if (this.#finishing) throw new Error('WarcBatchWriter: add() after finish()');
    if (page.stored !== undefined) {
      this.#addConversions(page, page.stored.recordId);
      return;
    }
    const { response, result } = page;
    // Hashed and compressed once, whichever file it ends up in.
    const prepared = prepareResponse(
      {
        targetUri: response.url,
        date: response.startedAt,
        httpVersion: response.httpVersion,
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
        body: response.body,
        ip: response.remoteAddress,
        truncated: response.truncated,
      },
      this.#gzipLevel === undefined ? {} : { gzipLevel: this.#gzipLevel },
    );
    const prior = page.recrawl?.prior;
    const profile = page.recrawl && revisitProfileOf(response.status, prepared.payloadSha1Hex, prior);
    const revisit: PlannedRevisit | undefined =
      profile && prior
        ? { record: { profile, uri: prior.uri, date: prior.date, warc: prior.warc }, sha1: prior.sha1 }
        : undefined;
    let file = this.#fileOf(result.crawlId);
    const before = file.builder.recordCount;
    let written = this.#write(file, page, prepared, revisit);
    if (file.pages > 0 && file.builder.byteLength > this.#maxFileBytes) {
      // Would overflow a file that already holds pages: close it as it was, start the next one.
      file.builder.rollback(before);
      this.#close(result.crawlId, file);
      file = this.#fileOf(result.crawlId);
      written = this.#write(file, page, prepared, revisit);
    }
    file.pages++;
    // A revisit stores no second copy: its page's content is the earlier capture's record.
    const content =
      revisit !== undefined
        ? prior?.content
        : page.content === undefined
          ? undefined
          : this.#addContent(result.crawlId, page.content);
    const changeFields: RecrawlFields = page.recrawl
      ? recrawlFields(result, response, prepared.payloadSha1Hex, prior, written.revisit)
      : {};
    this.#results.push({
      ...result,
      sha1: written.sha1,
      warc: { key: file.key, offset: written.ref.offset, length: written.ref.length },
      ...(content === undefined ? {} : { content }),
      ...changeFields,
      ...(page.adaptive ? adaptiveFields(page.adaptive, prior, changeFields.change, response.startedAt) : {}),
    });
    if (file.builder.byteLength >= this.#maxFileBytes) this.#close(result.crawlId, file);
  }

  /**
   * A stored response's conversion records (its rendered DOM) and content record; the result as it
   * was. A page with no conversion to write (a render that failed) opens no WARC file.
   */
  #addConversions(page: CapturedPage, refersTo: string): void {
    const { result } = page;
    const converted = page.warcConversion && (page.content?.markdown ?? page.content?.text) !== undefined;
    if (page.rendered !== undefined || converted) {
      const file = this.#fileOf(result.crawlId);
      const before = file.builder.recordCount;
      try {
        this.#writeConversions(file.builder, page, refersTo);
      } catch (error) {
        file.builder.rollback(before);
        throw error;
      }
      file.pages++;
      if (file.builder.byteLength >= this.#maxFileBytes) this.#close(result.crawlId, file);
    }
    const content = page.content === undefined ? undefined : this.#addContent(result.crawlId, page.content);
    this.#results.push({ ...result, ...(content === undefined ? {} : { content }) });
  }

  /** Appends the record to its crawl's content file; returns where its gzip member lies. */
  #addContent(crawlId: string, record: ContentRecord): { key: string; offset: number; length: number } {
    const member = gzipSync(`${JSON.stringify(record)}\n`, { level: CONTENT_GZIP_LEVEL });
    let file = this.#openContent.get(crawlId);
    if (
      file !== undefined &&
      file.byteLength > 0 &&
      file.byteLength + member.byteLength > this.#maxFileBytes
    ) {
      this.#closeContent(crawlId, file);
      file = undefined;
    }
    if (file === undefined) {
      const part = this.#contentParts.get(crawlId) ?? 0;
      this.#contentParts.set(crawlId, part + 1);
      file = { key: contentKey(crawlId, this.#at, this.#invocationId, part), members: [], byteLength: 0 };
      this.#openContent.set(crawlId, file);
    }
    const pointer = { key: file.key, offset: file.byteLength, length: member.byteLength };
    file.members.push(member);
    file.byteLength += member.byteLength;
    return pointer;
  }

  #closeContent(crawlId: string, file: OpenContentFile): void {
    this.#openContent.delete(crawlId);
    this.#start({ key: file.key, bytes: Buffer.concat(file.members, file.byteLength), type: JSONL_GZ });
  }

  /**
   * Resolves once the uploads in flight hold at most maxPendingBytes: a caller that awaits it before
   * add() keeps the writer's memory bounded when uploads are slower than fetches. Never rejects.
   */
  ready(): Promise<void> {
    if (this.#pendingBytes <= this.#maxPendingBytes) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /**
   * Closes the open files and waits for every upload. Results are in add() order, keys in the order the
   * files were opened. Rejects with the first upload error if any failed; calling it again uploads the
   * failed files again (their bytes are kept until then), so the step can be retried as a whole.
   */
  async finish(): Promise<{ results: CrawlResult[]; keys: string[] }> {
    this.#finishing = true;
    for (const [crawlId, file] of this.#open) this.#close(crawlId, file);
    for (const [crawlId, file] of this.#openContent) this.#closeContent(crawlId, file);
    const retry = this.#failed;
    this.#failed = [];
    for (const { upload } of retry) this.#start(upload);
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
    const failure = this.#failed[0];
    if (failure !== undefined) throw failure.error;
    return { results: [...this.#results], keys: [...this.#keys] };
  }

  #fileOf(crawlId: string): OpenFile {
    let file = this.#open.get(crawlId);
    if (file === undefined) {
      const part = this.#parts.get(crawlId) ?? 0;
      this.#parts.set(crawlId, part + 1);
      const key = warcKey(crawlId, this.#at, this.#invocationId, part);
      const builder = new WarcFileBuilder({
        filename: key.slice(key.lastIndexOf('/') + 1),
        ...(this.#gzipLevel === undefined ? {} : { gzipLevel: this.#gzipLevel }),
      });
      builder.addWarcinfo({ software: 'serverless-crawler', 'crawl-id': crawlId }, this.#at);
      file = { key, builder, pages: 0 };
      this.#open.set(crawlId, file);
      this.#keys.push(key);
    }
    return file;
  }

  /** The page's records, all or none (a throw leaves the file as it was). */
  #write(
    file: OpenFile,
    page: CapturedPage,
    prepared: PreparedResponse,
    revisit: PlannedRevisit | undefined,
  ): Written {
    const before = file.builder.recordCount;
    try {
      return this.#writeRecords(file.builder, page, prepared, revisit);
    } catch (error) {
      file.builder.rollback(before);
      throw error;
    }
  }

  #writeRecords(
    builder: WarcFileBuilder,
    page: CapturedPage,
    prepared: PreparedResponse,
    revisit: PlannedRevisit | undefined,
  ): Written {
    const { response, result } = page;
    builder.addRequest({
      targetUri: response.url,
      date: response.startedAt,
      requestLine: response.requestLine,
      headers: response.requestHeaders,
      ip: response.remoteAddress,
      concurrentTo: prepared.recordId,
    });
    let written: Written;
    if (revisit === undefined) {
      const ref = builder.addPreparedResponse(prepared);
      written = { ref, sha1: ref.payloadSha1Hex };
    } else
      written = {
        ref: this.#addRevisit(builder, response, prepared, revisit),
        sha1: revisit.sha1,
        revisit: revisit.record,
      };
    builder.addMetadata({
      targetUri: response.url,
      date: response.startedAt,
      concurrentTo: prepared.recordId,
      fields: [
        ['fetchTimeMs', String(response.elapsedMs)],
        ['outlinks', String(result.outlinks)],
        ...(result.location === undefined ? [] : [['redirectTo', result.location] as [string, string]]),
      ],
    });
    if (revisit === undefined) this.#writeConversions(builder, page, prepared.recordId);
    return written;
  }

  /** The rendered DOM, and with `warcConversion` the content's Markdown or text, each referring to the response. */
  #writeConversions(builder: WarcFileBuilder, page: CapturedPage, refersTo: string): void {
    const { response } = page;
    if (page.rendered !== undefined) {
      builder.addConversion({
        targetUri: response.url,
        date: response.startedAt,
        refersTo,
        contentType: 'text/html; charset=utf-8',
        block: Buffer.from(page.rendered, 'utf8'),
      });
    }
    const converted = page.content?.markdown ?? page.content?.text;
    if (page.warcConversion && converted !== undefined) {
      builder.addConversion({
        targetUri: response.url,
        date: response.startedAt,
        refersTo,
        contentType:
          page.content?.markdown === undefined ? 'text/plain; charset=utf-8' : 'text/markdown; charset=utf-8',
        block: Buffer.from(converted, 'utf8'),
      });
    }
  }

  /** The revisit record standing for the response (with the response's record id: the request points at it). */
  #addRevisit(
    builder: WarcFileBuilder,
    response: PageResponse,
    prepared: PreparedResponse,
    revisit: PlannedRevisit,
  ): WarcRecordRef {
    return builder.addRevisit({
      profile: revisit.record.profile,
      recordId: prepared.recordId,
      targetUri: response.url,
      date: response.startedAt,
      refersToTargetUri: revisit.record.uri,
      refersToDate: new Date(revisit.record.date),
      payloadDigest: formatSha1(Buffer.from(revisit.sha1, 'hex')),
      response,
      ip: response.remoteAddress,
    });
  }

  #close(crawlId: string, file: OpenFile): void {
    this.#open.delete(crawlId);
    this.#start({ key: file.key, bytes: file.builder.toBytes(), type: WARC_TYPE });
  }

  #start(upload: Upload): void {
    this.#pendingBytes += upload.bytes.byteLength;
    let put: Promise<void>;
    try {
      put = this.#blobs.put(upload.key, upload.bytes, upload.type);
    } catch (error) {
      put = Promise.reject(error);
    }
    const tracked: Promise<void> = put
      .catch((error: unknown) => {
        // Kept, bytes included, for finish() to report and a later finish() to try again.
        this.#failed.push({ upload, error });
      })
      .finally(() => {
        this.#inFlight.delete(tracked);
        this.#pendingBytes -= upload.bytes.byteLength;
        if (this.#pendingBytes > this.#maxPendingBytes) return;
        const waiters = this.#drainWaiters;
        this.#drainWaiters = [];
        for (const wake of waiters) wake();
      });
    this.#inFlight.add(tracked);
  }
}

/**
 * A re-crawl result's own fields: its change, the revisit it was stored as, and the validators to send
 * next time (a 304 may leave them out: the earlier capture's still hold).
 */
function recrawlFields(
  result: CrawlResult,
  response: PageResponse,
  payloadSha1: string,
  prior: PriorCapture | undefined,
  revisit: Revisit | undefined,
): RecrawlFields {
  const fields: RecrawlFields = {};
  // A failure that is not a gone page (a 500 after its retries) tells nothing about the page.
  const change = changeOf(response.status, payloadSha1, prior);
  if (result.outcome !== 'failed' || change === 'removed') fields.change = change;
  if (revisit !== undefined) fields.revisit = revisit;
  if (response.status === 304) {
    const etag = headerValue(response.headers, 'etag') ?? prior?.etag;
    const lastModified = headerValue(response.headers, 'last-modified') ?? prior?.lastModified;
    if (etag !== undefined) fields.etag = etag;
    if (lastModified !== undefined) fields.lastModified = lastModified;
  }
  return fields;
}

/** The URL's next interval under adaptive revisits, and when it falls due. */
function adaptiveFields(
  bounds: IntervalBounds,
  prior: PriorCapture | undefined,
  change: CrawlResult['change'],
  fetchedAt: Date,
): Pick<CrawlResult, 'interval' | 'dueAt'> {
  const interval = nextInterval(prior?.interval, change, bounds);
  return { interval, dueAt: new Date(fetchedAt.getTime() + interval * 60_000).toISOString() };
}

/** All pages at once (the writer's simplest use): write them, upload the files, return the pointers. */
export async function storeWarcFiles(
  captured: readonly CapturedPage[],
  blobs: BlobWriter,
  invocationId: string,
  at: Date,
  options: WarcBatchWriterOptions = {},
): Promise<{ results: CrawlResult[]; keys: string[] }> {
  const writer = new WarcBatchWriter(blobs, invocationId, at, options);
  for (const page of captured) writer.add(page);
  return writer.finish();
}
