/**
 * What the in-memory fakes' calls would cost and take on AWS, for simulations (bench/scale.ts): each
 * port call of a metered fake (test/fakes/metered-ports.ts) is described as the AWS requests its
 * adapter makes, and the meter
 *
 * - waits the service's latency on the virtual clock (S3 ~20 ms, DynamoDB ~5 ms, SQS ~10 ms);
 * - counts the requests as lambdas/shared/aws-call-counter.ts counts the real adapters' calls
 *   (`service:operation`, DynamoDB request units from item sizes, SQS 64 KiB chunks, S3 request
 *   classes), so lambdas/shared/aws-prices.ts prices them;
 * - applies DynamoDB's per-partition-key throughput (1,000 WCU and 3,000 RCU a second): a request over
 *   it is throttled, billed as a request without units, and retried after the SDK's back-off (base
 *   100 ms, doubling, full jitter, at most 20 s); past THROTTLE_ATTEMPTS attempts (the SDK's 3 times
 *   the adapters' retryStep of 3) it fails with a ThrottlingException, as the adapter's call would;
 * - records the item sizes against DynamoDB's 400 KB, and every limit crossed, by name.
 */

import {
  type CounterSnapshot,
  emptyCount,
  type OperationCount,
  SQS_CHUNK_BYTES,
  s3RequestClass,
} from '../../lambdas/shared/aws-call-counter.ts';
import { DYNAMODB_MAX_ITEM_BYTES } from '../../local/strict-limits.ts';

/** Typical request latencies inside a region (the figures). */
export const AWS_LATENCY_MS = { s3: 20, dynamodb: 5, sqs: 10 } as const;

/** DynamoDB's throughput per partition key (adaptive capacity isolates a hot key up to these). */
export const PARTITION_LIMITS = { writeUnitsPerSecond: 1_000, readUnitsPerSecond: 3_000 } as const;

/** The SDK's 3 attempts, each repeated by the adapters' retryStep (3): then the call fails. */
export const THROTTLE_ATTEMPTS = 9;
const THROTTLE_BASE_MS = 100;
const THROTTLE_MAX_MS = 20_000;

const WRITE_UNIT_BYTES = 1024;
const READ_UNIT_BYTES = 4096;

/** One AWS request as the meter sees it. */
export interface AwsRequest {
  /** `service:operation`, as aws-call-counter.ts names it. */
  op: string;
  /** DynamoDB: the partition key, and the kind of item (`url`, `host`, ...) for the per-page figures. */
  pk?: string;
  kind?: string;
  /** DynamoDB: request units (from item sizes: writeUnits, readUnits). */
  wcu?: number;
  rcu?: number;
  /** DynamoDB: the largest item the request writes or reads (bytes). */
  itemBytes?: number;
  /** SQS: payload bytes of the request (billed per 64 KiB chunk); S3: body bytes. */
  bytes?: number;
}

export class ThrottlingException extends Error {
  override name = 'ThrottlingException';
  readonly $retryable = { throttling: true };
}

export const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));
/** Strongly consistent: 1 unit per 4 KiB; eventually consistent: half. */
export const readUnits = (bytes: number, consistent: boolean): number =>
  Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES)) * (consistent ? 1 : 0.5);

export interface KindCount {
  writes: number;
  reads: number;
  wcu: number;
  rcu: number;
}

export class AwsMeter {
  readonly operations: Record<string, OperationCount> = {};
  readonly byKind = new Map<string, KindCount>();
  /** Per partition key, the units used in the current second. */
  readonly #second = new Map<string, { second: number; wcu: number; rcu: number }>();
  readonly peak = {
    wcu: { pk: '', units: 0 },
    rcu: { pk: '', units: 0 },
  };
  /** The same, over the crawl's own keys only (`CRAWL#<id>` and its shards `CRAWL#<id>#NN`). */
  readonly peakCrawlKeys = {
    wcu: { pk: '', units: 0 },
    rcu: { pk: '', units: 0 },
  };
  largestItem = { kind: '', bytes: 0 };
  throttled = 0;
  throttleFailures = 0;
  /** Limits crossed, by name, with how often. */
  readonly violations = new Map<string, number>();
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  #random: () => number;

  constructor(clock: { now: () => number; sleep: (ms: number) => Promise<void> }, random: () => number) {
    this.#now = clock.now;
    this.#sleep = clock.sleep;
    this.#random = random;
  }

  violation(what: string): void {
    this.violations.set(what, (this.violations.get(what) ?? 0) + 1);
  }

  /** Makes `requests` one after the other (each waits its latency); DynamoDB ones may be throttled. */
  async serial(requests: readonly AwsRequest[]): Promise<void> {
    for (const request of requests) await this.request(request);
  }

  /** Makes `requests` at most `concurrency` at a time. */
  async parallel(requests: readonly AwsRequest[], concurrency: number): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < requests.length) await this.request(requests[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, requests.length) }, worker));
  }

  async request(request: AwsRequest): Promise<void> {
    const service = request.op.slice(0, request.op.indexOf(':'));
    const latency =
      service === 'S3' ? AWS_LATENCY_MS.s3 : service === 'SQS' ? AWS_LATENCY_MS.sqs : AWS_LATENCY_MS.dynamodb;
    if (service !== 'DynamoDB') {
      this.#count(request, true);
      await this.#sleep(latency);
      return;
    }
    this.#item(request);
    for (let attempt = 1; ; attempt++) {
      await this.#sleep(latency);
      if (this.#admit(request)) {
        this.#count(request, true);
        return;
      }
      this.throttled++;
      this.#count(request, false);
      if (attempt >= THROTTLE_ATTEMPTS) {
        this.throttleFailures++;
        throw new ThrottlingException(`${request.op} on ${request.pk}: throughput exceeded`);
      }
      const cap = Math.min(THROTTLE_MAX_MS, THROTTLE_BASE_MS * 2 ** (attempt - 1));
      await this.#sleep(this.#random() * cap);
    }
  }

  /** The counts in the shape aws-prices.ts prices. */
  snapshot(): CounterSnapshot {
    return { operations: structuredClone(this.operations) };
  }

  #item(request: AwsRequest): void {
    const bytes = request.itemBytes ?? 0;
    if (bytes > this.largestItem.bytes) this.largestItem = { kind: request.kind ?? '?', bytes };
    if (bytes > DYNAMODB_MAX_ITEM_BYTES) this.violation(`DynamoDB item over 400 KB (${request.kind})`);
  }

  /** Whether the partition has room for the request's units in this second (then they are used). */
  #admit(request: AwsRequest): boolean {
    const pk = request.pk ?? '';
    const second = Math.floor(this.#now() / 1000);
    let used = this.#second.get(pk);
    if (used === undefined || used.second !== second) {
      used = { second, wcu: 0, rcu: 0 };
      this.#second.set(pk, used);
    }
    const wcu = request.wcu ?? 0;
    const rcu = request.rcu ?? 0;
    // A request bigger than a second's budget on its own still runs once the second is fresh.
    const fresh = used.wcu === 0 && used.rcu === 0;
    if (
      !fresh &&
      (used.wcu + wcu > PARTITION_LIMITS.writeUnitsPerSecond ||
        used.rcu + rcu > PARTITION_LIMITS.readUnitsPerSecond)
    )
      return false;
    used.wcu += wcu;
    used.rcu += rcu;
    if (used.wcu > this.peak.wcu.units) this.peak.wcu = { pk, units: used.wcu };
    if (used.rcu > this.peak.rcu.units) this.peak.rcu = { pk, units: used.rcu };
    if (pk.startsWith('CRAWL#')) {
      const crawl = this.peakCrawlKeys;
      if (used.wcu > crawl.wcu.units) crawl.wcu = { pk, units: used.wcu };
      if (used.rcu > crawl.rcu.units) crawl.rcu = { pk, units: used.rcu };
    }
    return true;
  }

  #count(request: AwsRequest, succeeded: boolean): void {
    let count = this.operations[request.op];
    if (count === undefined) {
      count = emptyCount();
      if (request.op.startsWith('S3:')) count.s3Class = s3RequestClass(request.op.slice('S3:'.length));
      this.operations[request.op] = count;
    }
    count.requests++;
    if (succeeded) count.calls++;
    count.bytesOut += request.bytes ?? 0;
    if (request.op.startsWith('SQS:'))
      count.sqsBilledRequests += Math.max(1, Math.ceil((request.bytes ?? 0) / SQS_CHUNK_BYTES));
    // A throttled request is billed as a request but consumes no units.
    if (!succeeded || !request.op.startsWith('DynamoDB:')) return;
    count.writeUnits += request.wcu ?? 0;
    count.readUnits += request.rcu ?? 0;
    const kind = request.kind ?? 'other';
    let byKind = this.byKind.get(kind);
    if (byKind === undefined) {
      byKind = { writes: 0, reads: 0, wcu: 0, rcu: 0 };
      this.byKind.set(kind, byKind);
    }
    if ((request.wcu ?? 0) > 0) byKind.writes++;
    else byKind.reads++;
    byKind.wcu += request.wcu ?? 0;
    byKind.rcu += request.rcu ?? 0;
  }
}
