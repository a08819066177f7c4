/**
 * AWS list prices (us-east-1, USD) and the cost model that turns counted requests and handler
 * durations into a cost per million pages (docs/performance.md, "The cost model").
 *
 * The one price table of the project. Request prices only: storage (S3 GB-month, DynamoDB GB-month),
 * CloudWatch Logs and data transfer are not request costs and are left out (the doc sizes them).
 * Free tiers are ignored: a crawl of millions of pages is past them.
 */
import type { CounterSnapshot } from './aws-call-counter.ts';

export const AWS_PRICES = {
  region: 'us-east-1',
  /** When these were read off the AWS pricing pages. */
  asOf: '2026-11',
  lambda: {
    /** Per GB-second of duration, arm64 (Graviton), first 7.5 billion GB-s a month. */
    arm64GbSecond: 0.0000133334,
    /** Per GB-second of duration, x86_64 (the render function), first 6 billion GB-s a month. */
    x86GbSecond: 0.0000166667,
    /** Per request (invocation). */
    request: 0.2 / 1e6,
  },
  sqs: {
    /** Standard queue, per request (each 64 KiB chunk of payload is one request), first 100 billion a month. */
    request: 0.4 / 1e6,
  },
  s3: {
    /** S3 Standard PUT, COPY, POST, LIST requests. */
    putClassRequest: 0.005 / 1e3,
    /** S3 Standard GET, SELECT and all other requests. */
    getClassRequest: 0.0004 / 1e3,
  },
  eventbridge: {
    /** Custom events published (PutEvents), per event (each 64 KiB chunk of an entry is one). */
    event: 1.0 / 1e6,
  },
  dynamodb: {
    /** On-demand, per write request unit (1 KiB, standard table class; price since 2024-11-01). */
    writeRequestUnit: 0.625 / 1e6,
    /** On-demand, per read request unit (4 KiB strongly consistent, or two eventually consistent). */
    readRequestUnit: 0.125 / 1e6,
  },
} as const;

export type ServiceCost = 'lambda' | 'sqs' | 's3' | 'dynamodb' | 'eventbridge';

export interface CostBreakdown {
  lambda: number;
  sqs: number;
  s3: number;
  dynamodb: number;
  eventbridge: number;
  total: number;
}

/** Per function: invocations and the summed duration (ms) at the function's configured memory. */
export interface LambdaUsage {
  invocations: number;
  durationMs: number;
  memoryMb: number;
  /** Default arm64, as the crawler's functions but the render function run. */
  architecture?: 'arm64' | 'x86_64';
}

/**
 * Operations not billed to a crawl: setting up and inspecting the stack, and the local runtime's own
 * idle detection (on AWS nothing polls queue depths; `crawler status` reads counters instead).
 */
export const UNBILLED_OPERATIONS: ReadonlySet<string> = new Set([
  'SQS:GetQueueAttributes',
  'SQS:CreateQueue',
  'SQS:SetQueueAttributes',
  'SQS:ListQueues',
  'SQS:DeleteQueue',
  'SQS:PurgeQueue',
  'SQS:TagQueue',
  'SQS:ReceiveMessage(empty)', // a sub-count of SQS:ReceiveMessage, which is billed
  'S3:CreateBucket',
  'S3:HeadBucket',
  'S3:ListBuckets',
  'DynamoDB:CreateTable',
  'DynamoDB:DescribeTable',
  'DynamoDB:ListTables',
  'DynamoDB:UpdateTimeToLive',
  'DynamoDB:DescribeTimeToLive',
]);

function billed(key: string): boolean {
  if (UNBILLED_OPERATIONS.has(key)) return false;
  return !/^S3:(Put|Get|Delete)Bucket/.test(key);
}

/** Dollars for the counted requests and the Lambda usage, by service. */
export function costOf(counts: CounterSnapshot, lambda: readonly LambdaUsage[] = []): CostBreakdown {
  const p = AWS_PRICES;
  let sqs = 0;
  let s3 = 0;
  let dynamodb = 0;
  let eventbridge = 0;
  for (const [key, count] of Object.entries(counts.operations)) {
    if (!billed(key)) continue;
    eventbridge += (count.billedEvents ?? 0) * p.eventbridge.event;
    if (key.startsWith('SQS:')) sqs += count.sqsBilledRequests * p.sqs.request;
    else if (key.startsWith('S3:')) {
      if (count.s3Class === 'put') s3 += count.requests * p.s3.putClassRequest;
      else if (count.s3Class === 'get') s3 += count.requests * p.s3.getClassRequest;
    } else if (key.startsWith('DynamoDB:')) {
      dynamodb +=
        count.writeUnits * p.dynamodb.writeRequestUnit + count.readUnits * p.dynamodb.readRequestUnit;
    }
  }
  let lambdaCost = 0;
  for (const fn of lambda) {
    const gbSeconds = (fn.durationMs / 1000) * (fn.memoryMb / 1024);
    const gbSecond = fn.architecture === 'x86_64' ? p.lambda.x86GbSecond : p.lambda.arm64GbSecond;
    lambdaCost += gbSeconds * gbSecond + fn.invocations * p.lambda.request;
  }
  return {
    lambda: lambdaCost,
    sqs,
    s3,
    dynamodb,
    eventbridge,
    total: lambdaCost + sqs + s3 + dynamodb + eventbridge,
  };
}

/** `cost` scaled to one million pages, rounded to a tenth of a cent. */
export function perMillionPages(cost: CostBreakdown, pages: number): CostBreakdown {
  const scale = pages > 0 ? 1e6 / pages : 0;
  const round = (value: number) => Math.round(value * scale * 1000) / 1000;
  return {
    lambda: round(cost.lambda),
    sqs: round(cost.sqs),
    s3: round(cost.s3),
    dynamodb: round(cost.dynamodb),
    eventbridge: round(cost.eventbridge),
    total: round(cost.total),
  };
}

/** Billed requests per page by `service:operation` (SQS in billed 64 KiB chunks), 3 decimals. */
export function requestsPerPage(counts: CounterSnapshot, pages: number): Record<string, number> {
  const out: Record<string, number> = {};
  if (pages <= 0) return out;
  for (const [key, count] of Object.entries(counts.operations)) {
    if (!billed(key)) continue;
    const requests = key.startsWith('SQS:') ? count.sqsBilledRequests : count.requests;
    out[key] = Math.round((requests / pages) * 1000) / 1000;
  }
  return out;
}

/** What `crawler crawl` writes as `aws` in summary.json. */
export interface CrawlCostReport {
  /** The denominator: pages fetched (outcome `fetched`). */
  pages: number;
  /** Billed requests per page by `service:operation` (SQS in 64 KiB chunks). */
  requestsPerPage: Record<string, number>;
  /** This crawl's dollars at list prices, from the counted requests and handler durations. */
  cost: CostBreakdown;
  /** The same scaled to a million pages (meaningful from PER_MILLION_MIN_PAGES pages on). */
  costPerMillionPages: CostBreakdown;
  /** DynamoDB request units per page, and how many calls had their units estimated. */
  dynamodb: { writeUnitsPerPage: number; readUnitsPerPage: number; estimatedCalls: number };
  /** Per function: invocations, summed duration and GB-seconds at its configured memory. */
  lambda: Record<string, { invocations: number; seconds: number; memoryMb: number; gbSeconds: number }>;
  prices: { region: string; asOf: string };
}

export function crawlCostReport(
  counts: CounterSnapshot,
  lambda: Readonly<Record<string, LambdaUsage>>,
  pages: number,
): CrawlCostReport {
  let writeUnits = 0;
  let readUnits = 0;
  let estimatedCalls = 0;
  for (const [key, count] of Object.entries(counts.operations)) {
    if (!key.startsWith('DynamoDB:') || !billed(key)) continue;
    writeUnits += count.writeUnits;
    readUnits += count.readUnits;
    estimatedCalls += count.estimatedUnits;
  }
  const perPage = (value: number) => (pages > 0 ? Math.round((value / pages) * 1000) / 1000 : 0);
  const cost = costOf(counts, Object.values(lambda));
  return {
    pages,
    requestsPerPage: requestsPerPage(counts, pages),
    cost,
    costPerMillionPages: perMillionPages(cost, pages),
    dynamodb: {
      writeUnitsPerPage: perPage(writeUnits),
      readUnitsPerPage: perPage(readUnits),
      estimatedCalls,
    },
    lambda: Object.fromEntries(
      Object.entries(lambda).map(([id, fn]) => [
        id,
        {
          invocations: fn.invocations,
          seconds: Math.round(fn.durationMs) / 1000,
          memoryMb: fn.memoryMb,
          gbSeconds: Math.round((fn.durationMs / 1000) * (fn.memoryMb / 1024) * 1000) / 1000,
        },
      ]),
    ),
    prices: { region: AWS_PRICES.region, asOf: AWS_PRICES.asOf },
  };
}

/**
 * Below this many pages a crawl's cost per page is mostly fixed costs (start-up invocations, robots.txt,
 * polling): scaled to a million pages it reads as an alarming, meaningless number ($97 for one page).
 */
export const PER_MILLION_MIN_PAGES = 1000;

/**
 * One line for the end of a run: this crawl's dollars and their split, billed requests per page, and
 * the cost per million pages when the crawl is large enough for it to mean something (or `verbose`).
 */
export function describeCost(report: CrawlCostReport, options: { verbose?: boolean } = {}): string {
  const c = report.cost;
  const requests = Object.values(report.requestsPerPage).reduce((a, b) => a + b, 0);
  const perMillion =
    options.verbose || report.pages >= PER_MILLION_MIN_PAGES
      ? `; ${usd(report.costPerMillionPages.total, 2)} per million pages`
      : '';
  return (
    `${usd(c.total)} for this crawl at ${report.prices.region} list prices ` +
    `(lambda ${usd(c.lambda)}, sqs ${usd(c.sqs)}, s3 ${usd(c.s3)}, dynamodb ${usd(c.dynamodb)}` +
    // Crawl events cost a few millionths of a dollar; named only when there were any.
    `${c.eventbridge > 0 ? `, eventbridge ${usd(c.eventbridge)}` : ''}); ` +
    `${requests.toFixed(2)} AWS requests per page${perMillion}`
  );
}

/** Dollars to cents, or to two significant digits below a cent (a small crawl costs fractions of one). */
function usd(value: number, fixed?: number): string {
  if (fixed !== undefined || value === 0 || value >= 0.01) return `$${value.toFixed(fixed ?? 2)}`;
  const digits = Math.min(20, 1 - Math.floor(Math.log10(value)));
  return `$${value.toFixed(digits)}`;
}
