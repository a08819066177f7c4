/**
 * Process configuration of the functions, read once from their environment (set by the stack,
 * or by the local runtime from the synthesized template) and validated at start.
 */
import { z } from 'zod';
import { CrawlConfigSchema } from '../core/crawl/index.ts';
import { CALL_COUNTING, FUNCTION_ENV } from './contracts.ts';

export type Env = Record<string, string | undefined>;

const AwsEnvSchema = z.object({
  AWS_REGION: z.string().default('us-east-1'),
  AWS_ENDPOINT_URL: z.url().optional(),
  AWS_ENDPOINT_URL_SQS: z.url().optional(),
  AWS_ENDPOINT_URL_S3: z.url().optional(),
  AWS_ENDPOINT_URL_DYNAMODB: z.url().optional(),
  AWS_ENDPOINT_URL_EVENTBRIDGE: z.url().optional(),
  AWS_ENDPOINT_URL_SSM: z.url().optional(),
  /** Emulators and LocalStack serve S3 path-style on a plain endpoint. */
  AWS_S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).optional(),
  /** SDK attempts per call (the SDK's own retries of throttling and 5xx); default 3. */
  AWS_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).optional(),
  AWS_ACCESS_KEY_ID: z.string().optional(),
  AWS_SECRET_ACCESS_KEY: z.string().optional(),
  AWS_SESSION_TOKEN: z.string().optional(),
  /** How the function counts its AWS calls (contracts.ts CALL_COUNTING). */
  [FUNCTION_ENV.callCounting]: z.enum(CALL_COUNTING).default('estimated'),
  /** Set by Lambda: the function's name, the principal its calls are recorded under (aws-call-ledger.ts). */
  AWS_LAMBDA_FUNCTION_NAME: z.string().optional(),
  /** The account of the stack's resources where a call names none (DynamoDB tables); set by the local runtime. */
  AWS_ACCOUNT_ID: z
    .string()
    .regex(/^\d{12}$/)
    .optional(),
});

const DefaultCrawlSchema = z
  .string()
  .optional()
  .transform((text, ctx) => {
    if (text === undefined || text === '') return undefined;
    try {
      return CrawlConfigSchema.omit({ crawlId: true }).partial().parse(JSON.parse(text));
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `DEFAULT_CRAWL_CONFIG must be a JSON crawl config: ${String(error)}`,
      });
      return z.NEVER;
    }
  });

export const FetchEnvSchema = AwsEnvSchema.extend({
  [FUNCTION_ENV.taskQueueUrl]: z.url(),
  [FUNCTION_ENV.taskDlqUrl]: z.url(),
  [FUNCTION_ENV.resultsQueueUrl]: z.url(),
  [FUNCTION_ENV.pageBucket]: z.string().min(3),
  [FUNCTION_ENV.frontierTable]: z.string().min(3),
  /** Crawl events go to this bus (lambdas/core/batches/crawl-events.ts); none are published without it. */
  [FUNCTION_ENV.eventBusName]: z.string().min(1).max(256).optional(),
  [FUNCTION_ENV.defaultCrawlConfig]: DefaultCrawlSchema,
  /** The render function's queue, in a stack deployed with `-c render=true`. */
  [FUNCTION_ENV.renderQueueUrl]: z.url().optional(),
  /**
   * Set by Lambda itself (the Runtime API's host:port, on loopback), never by the stack or the local
   * runtime: its presence means this process runs inside Lambda.
   */
  AWS_LAMBDA_RUNTIME_API: z.string().optional(),
});

export const AggregateEnvSchema = AwsEnvSchema.extend({
  /** The queue it consumes: failed results are given their back-off and unstarted ones sent again there. */
  [FUNCTION_ENV.resultsQueueUrl]: z.url(),
  /** Where it sends a visit of a host whose awaited results it wrote (core/frontier/host-hurry.ts). */
  [FUNCTION_ENV.taskQueueUrl]: z.url(),
  [FUNCTION_ENV.pageBucket]: z.string().min(3),
  [FUNCTION_ENV.frontierTable]: z.string().min(3),
  /** Crawl events go to this bus (lambdas/core/batches/crawl-events.ts); none are published without it. */
  [FUNCTION_ENV.eventBusName]: z.string().min(1).max(256).optional(),
});

export const RenderEnvSchema = AwsEnvSchema.extend({
  /** The queue it consumes: a failed page is given its back-off there. */
  [FUNCTION_ENV.renderQueueUrl]: z.url(),
  [FUNCTION_ENV.renderDlqUrl]: z.url(),
  /** Visits of the hosts its pages' links wake, and of the hosts it hurries. */
  [FUNCTION_ENV.taskQueueUrl]: z.url(),
  [FUNCTION_ENV.resultsQueueUrl]: z.url(),
  [FUNCTION_ENV.pageBucket]: z.string().min(3),
  [FUNCTION_ENV.frontierTable]: z.string().min(3),
  /** The `default` crawl's config (`crawler local` options): its pages render as they were fetched. */
  [FUNCTION_ENV.defaultCrawlConfig]: DefaultCrawlSchema,
  /** Crawl Cancelled when a render spends a crawl's --max-cost-usd (core/crawl/budget.ts). */
  [FUNCTION_ENV.eventBusName]: z.string().min(1).max(256).optional(),
  /** Set by Lambda itself: inside Lambda the browser is @sparticuz/chromium's (lambda-browser.ts). */
  AWS_LAMBDA_RUNTIME_API: z.string().optional(),
});

export type AwsEnv = z.infer<typeof AwsEnvSchema>;
export type FetchEnv = z.infer<typeof FetchEnvSchema>;
export type AggregateEnv = z.infer<typeof AggregateEnvSchema>;
export type RenderEnv = z.infer<typeof RenderEnvSchema>;

export function loadEnv<T>(schema: z.ZodType<T>, env: Env, what: string): T {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
  throw new Error(`${what} configuration is invalid: ${problems}`);
}
