import { Duration, Names, Size } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { HANDLER_METADATA_KEY } from '../lambdas/shared/contracts.ts';
import { LOGS } from './limits.ts';
import { fromRoot, REPO_ROOT } from './paths.ts';
import { type QueueWithDlq, visibilityTimeoutFor } from './queue-with-dlq.ts';

/**
 * Lets CommonJS dependencies `require()` Node built-ins from inside the ESM bundle; without it
 * esbuild's shim throws "Dynamic require of ... is not supported".
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

export interface CrawlerFunctionProps {
  /** Handler module relative to the repo root; it exports `handler` and `createHandler(env)`. */
  readonly handlerModule: string;
  readonly description: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** Required, never defaulted: whether Lambda may stop an SQS -> Lambda -> SQS loop is a design decision. */
  readonly recursiveLoop: lambda.RecursiveLoop;
  readonly environment?: Record<string, string>;
  /** Default arm64; the render function's Chromium (@sparticuz/chromium) exists for x86_64 only. */
  readonly architecture?: lambda.Architecture;
  readonly layers?: lambda.ILayerVersion[];
  /** Left out of the bundle, loaded from a layer (a module esbuild cannot bundle). */
  readonly externalModules?: string[];
  /** /tmp, default Lambda's 512 MiB. */
  readonly ephemeralStorageMiB?: number;
}

/**
 * What Lambda's SQS event source mapping does with the function's role: receive, delete, and read the
 * queue's attributes (the actions of the AWS managed policy AWSLambdaSQSQueueExecutionRole). Not
 * `Queue.grantConsumeMessages`, which adds ChangeMessageVisibility and GetQueueUrl for every consumer.
 */
export const EVENT_SOURCE_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'];

/** How a function consumes a queue (see limits.ts). */
export interface QueueConsumerSettings {
  readonly batchSize: number;
  readonly maxBatchingWindowSeconds: number;
  readonly maxConcurrency: number;
}

/**
 * A crawler Lambda function: Node.js 24 on arm64 (unless told otherwise), bundled by esbuild into one ESM file with every
 * dependency (AWS SDK included, so the deployed code is the tested code), source maps on, its own
 * log group with a retention, and a role that may write only to that log group until grants add more.
 */
export class CrawlerFunction extends NodejsFunction {
  readonly handlerModule: string;
  readonly functionTimeout: Duration;

  constructor(scope: Construct, id: string, props: CrawlerFunctionProps) {
    // Siblings, not children, so the function's own construct id stays exactly `id` in the stack.
    const logGroup = new logs.LogGroup(scope, `${id}LogGroup`, {
      retention: retentionDays(LOGS.functionLogRetentionDays),
    });
    // Own role instead of AWSLambdaBasicExecutionRole, whose log permissions cover every log group.
    const role = new iam.Role(scope, `${id}ServiceRole`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${id}`,
    });
    logGroup.grantWrite(role);
    const timeout = Duration.seconds(props.timeoutSeconds);
    super(scope, id, {
      entry: fromRoot(props.handlerModule),
      handler: 'handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: props.architecture ?? lambda.Architecture.ARM_64,
      ...(props.layers ? { layers: props.layers } : {}),
      ...(props.ephemeralStorageMiB
        ? { ephemeralStorageSize: Size.mebibytes(props.ephemeralStorageMiB) }
        : {}),
      timeout,
      memorySize: props.memoryMb,
      recursiveLoop: props.recursiveLoop,
      role,
      logGroup,
      environment: { NODE_OPTIONS: '--enable-source-maps', ...props.environment },
      projectRoot: REPO_ROOT,
      depsLockFilePath: fromRoot('package-lock.json'),
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        minify: true,
        sourceMap: true,
        // The mappings are enough for stack traces; the sources would only bloat the asset.
        sourcesContent: false,
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_BANNER,
        externalModules: props.externalModules ?? [],
        bundleAwsSDK: true,
      },
    });
    this.handlerModule = props.handlerModule;
    this.functionTimeout = timeout;
    (this.node.defaultChild as lambda.CfnFunction).addMetadata(HANDLER_METADATA_KEY, props.handlerModule);
  }

  /**
   * Consumes `queue` through an SQS event source mapping that reports batch item failures (the
   * handlers return `batchItemFailures`, which Lambda ignores otherwise). Refuses a queue whose
   * visibility timeout is below the factor x this function's timeout.
   */
  consumeFrom(queue: QueueWithDlq, settings: QueueConsumerSettings): void {
    checkConsumerSettings(this.node.id, settings);
    const window = Duration.seconds(settings.maxBatchingWindowSeconds);
    const needed = visibilityTimeoutFor(this.functionTimeout, window).toSeconds();
    if (queue.visibilityTimeout.toSeconds() < needed) {
      throw new Error(
        `${this.node.id}: queue ${queue.node.id} visibility timeout ${queue.visibilityTimeout.toSeconds()} s < ${needed} s`,
      );
    }
    // The mapping SqsEventSource would make (same construct id), with only the permissions it needs.
    this.addEventSourceMapping(`SqsEventSource:${Names.nodeUniqueId(queue.node)}`, {
      eventSourceArn: queue.queueArn,
      batchSize: settings.batchSize,
      maxBatchingWindow: window,
      maxConcurrency: settings.maxConcurrency,
      reportBatchItemFailures: true,
    });
    this.addToRolePolicy(
      new iam.PolicyStatement({ actions: EVENT_SOURCE_ACTIONS, resources: [queue.queueArn] }),
    );
  }
}

/** Lambda's own bounds, checked at synth time so a bad limits.ts fails before a deploy does. */
function checkConsumerSettings(id: string, s: QueueConsumerSettings): void {
  const fail = (what: string) => {
    throw new Error(`${id}: ${what}`);
  };
  if (!Number.isInteger(s.batchSize) || s.batchSize < 1 || s.batchSize > 10_000)
    fail('batchSize must be 1..10000');
  if (s.maxBatchingWindowSeconds < 0 || s.maxBatchingWindowSeconds > 300)
    fail('maxBatchingWindow must be 0..300 s');
  if (s.batchSize > 10 && s.maxBatchingWindowSeconds < 1)
    fail('batchSize > 10 needs a batching window >= 1 s');
  if (!Number.isInteger(s.maxConcurrency) || s.maxConcurrency < 2 || s.maxConcurrency > 1000) {
    fail('maxConcurrency must be 2..1000');
  }
}

function retentionDays(days: number): logs.RetentionDays {
  const match = Object.values(logs.RetentionDays).find((value) => value === days);
  if (typeof match !== 'number') throw new Error(`${days} days is not a CloudWatch Logs retention period`);
  return match;
}
