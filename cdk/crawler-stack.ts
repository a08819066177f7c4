import { CfnOutput, type CfnResource, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventTargets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct, IConstruct } from 'constructs';
import { DETAIL_TYPES, EVENT_SOURCE } from '../lambdas/core/batches/index.ts';
import {
  credentialsPrefix,
  DEFAULT_EVENT_BUS,
  FUNCTION_ENV,
  HANDLERS,
  IDS,
  OUTPUTS,
  STACK_NAME,
} from '../lambdas/shared/contracts.ts';
import { ACCOUNT_CHECK_ID, AccountConcurrencyCheck } from './account-concurrency.ts';
import { CHROMIUM_LAYER_MODULES, ChromiumLayer } from './chromium-layer.ts';
import { parseAlarmEmail, parseFetchConcurrency, readCrawlerContext } from './context.ts';
import { CrawlerFunction } from './crawler-function.ts';
import { FrontierTable } from './frontier-table.ts';
import {
  AGGREGATE_EVENT_SOURCE,
  AGGREGATE_FUNCTION,
  FETCH_EVENT_SOURCE,
  FETCH_FUNCTION,
  QUEUE,
  RENDER_EVENT_SOURCE,
  RENDER_FUNCTION,
} from './limits.ts';
import { CrawlerMonitoring } from './monitoring.ts';
import { OperatorPolicy } from './operator-policy.ts';
import { PageStore } from './page-store.ts';
import { QueueWithDlq } from './queue-with-dlq.ts';

export interface CrawlerStackProps extends StackProps {
  /**
   * The fetch event source's maximum concurrency (2..1000). Default: CDK context `fetchConcurrency`,
   * else FETCH_EVENT_SOURCE.maxConcurrency from limits.ts.
   */
  readonly fetchConcurrency?: number;
  /** Subscribed to the alarm topic. Default: CDK context `alarmEmail`, else no subscription. */
  readonly alarmEmail?: string;
}

/**
 * The crawler: TaskQueue -> fetch function -> PageStore + ResultsQueue -> aggregate function, with
 * the frontier in DynamoDB, and its alarms and dashboard (monitoring.ts). Every setting comes from
 * limits.ts, except the choices a deployer makes by CDK context (context.ts).
 */
export class CrawlerStack extends Stack {
  readonly taskQueue: QueueWithDlq;
  readonly resultsQueue: QueueWithDlq;
  readonly pageStore: PageStore;
  readonly frontierTable: FrontierTable;
  readonly fetchFunction: CrawlerFunction;
  readonly aggregateFunction: CrawlerFunction;
  readonly monitoring: CrawlerMonitoring;
  readonly operatorPolicy: OperatorPolicy;
  readonly accountCheck: AccountConcurrencyCheck;
  /** With `-c render=true`: the render function. */
  readonly renderFunction: CrawlerFunction | undefined;
  /** The fetch event source's maximum concurrency in this stack. */
  readonly fetchConcurrency: number;

  constructor(scope: Construct, id: string = STACK_NAME, props: CrawlerStackProps = {}) {
    const { fetchConcurrency: fetchConcurrencyProp, alarmEmail: alarmEmailProp, ...stackProps } = props;
    super(scope, id, {
      description:
        'serverless-crawler: SQS task queue, fetch and aggregate Lambdas, S3 page store, DynamoDB frontier',
      ...stackProps,
    });
    // Props win over context (-c key=value), context over the limits file; all validated alike.
    const context = readCrawlerContext(this.node);
    const fetchConcurrency =
      parseFetchConcurrency(fetchConcurrencyProp) ??
      context.fetchConcurrency ??
      FETCH_EVENT_SOURCE.maxConcurrency;
    const alarmEmail = parseAlarmEmail(alarmEmailProp) ?? context.alarmEmail;

    const fetchFunction = new CrawlerFunction(this, IDS.fetchFunction, {
      handlerModule: HANDLERS.fetch,
      description: 'Fetches crawl tasks from TaskQueue, stores WARC records, enqueues results and new links',
      timeoutSeconds: FETCH_FUNCTION.timeoutSeconds,
      memoryMb: FETCH_FUNCTION.memoryMb,
      // The fetch function sends discovered links to the queue it consumes. Lambda's recursive loop
      // detection would otherwise stop that SQS -> Lambda -> SQS chain after ~16 hops, i.e. cut every
      // crawl at about depth 16. Runaway crawls are bounded by maxDepth / maxPages and the frontier dedup.
      recursiveLoop: lambda.RecursiveLoop.ALLOW,
    });
    const aggregateFunction = new CrawlerFunction(this, IDS.aggregateFunction, {
      handlerModule: HANDLERS.aggregate,
      description: 'Batches crawl results into index parts in S3 and keeps crawl counters',
      timeoutSeconds: AGGREGATE_FUNCTION.timeoutSeconds,
      memoryMb: AGGREGATE_FUNCTION.memoryMb,
      // It re-sends to ResultsQueue only the results it could not start before its deadline. One result
      // sent round that loop ~16 times in a row is stuck, not slow: Lambda stops it, and the message
      // ends in ResultsDLQ (alarmed), where redrive can move it after a fix.
      recursiveLoop: lambda.RecursiveLoop.TERMINATE,
    });

    // Visibility timeouts derive from the consumer's timeout and batching window.
    const taskQueue = new QueueWithDlq(this, IDS.taskQueue, {
      dlqId: IDS.taskDlq,
      consumerTimeout: fetchFunction.functionTimeout,
      consumerMaxBatchingWindow: Duration.seconds(FETCH_EVENT_SOURCE.maxBatchingWindowSeconds),
    });
    const resultsQueue = new QueueWithDlq(this, IDS.resultsQueue, {
      dlqId: IDS.resultsDlq,
      consumerTimeout: aggregateFunction.functionTimeout,
      consumerMaxBatchingWindow: Duration.seconds(AGGREGATE_EVENT_SOURCE.maxBatchingWindowSeconds),
    });
    const pageStore = new PageStore(this, IDS.pageStore);
    const frontierTable = new FrontierTable(this, IDS.frontierTable);

    // Crawl events (lambdas/core/batches/crawl-events.ts) go to this bus; the lifecycle ones also to a queue.
    const eventBusName = context.eventBusName ?? DEFAULT_EVENT_BUS;
    const eventBus = events.EventBus.fromEventBusName(this, 'CrawlEventBus', eventBusName);
    // A consumer that keeps failing on an event parks it in the DLQ instead of receiving it for ever.
    const crawlEventsDlq = new sqs.Queue(this, IDS.crawlEventsDlq, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(QUEUE.dlqRetentionDays),
    });
    const crawlEventsQueue = new sqs.Queue(this, IDS.crawlEventsQueue, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(QUEUE.retentionDays),
      deadLetterQueue: { queue: crawlEventsDlq, maxReceiveCount: QUEUE.maxReceiveCount },
    });
    const crawlEventsRule = new events.Rule(this, IDS.crawlEventsRule, {
      description: 'Crawl Started, Completed, Cancelled, Failed and Skipped to CrawlEventsQueue',
      eventBus,
      eventPattern: {
        source: [EVENT_SOURCE],
        detailType: [
          DETAIL_TYPES.started,
          DETAIL_TYPES.completed,
          DETAIL_TYPES.cancelled,
          DETAIL_TYPES.failed,
          DETAIL_TYPES.skipped,
        ],
      },
      targets: [new eventTargets.SqsQueue(crawlEventsQueue)],
    });

    fetchFunction.addEnvironment(FUNCTION_ENV.taskQueueUrl, taskQueue.queueUrl);
    fetchFunction.addEnvironment(FUNCTION_ENV.taskDlqUrl, taskQueue.dlq.queueUrl);
    fetchFunction.addEnvironment(FUNCTION_ENV.resultsQueueUrl, resultsQueue.queueUrl);
    fetchFunction.addEnvironment(FUNCTION_ENV.pageBucket, pageStore.bucketName);
    fetchFunction.addEnvironment(FUNCTION_ENV.frontierTable, frontierTable.tableName);
    aggregateFunction.addEnvironment(FUNCTION_ENV.resultsQueueUrl, resultsQueue.queueUrl);
    aggregateFunction.addEnvironment(FUNCTION_ENV.taskQueueUrl, taskQueue.queueUrl);
    aggregateFunction.addEnvironment(FUNCTION_ENV.pageBucket, pageStore.bucketName);
    aggregateFunction.addEnvironment(FUNCTION_ENV.frontierTable, frontierTable.tableName);
    fetchFunction.addEnvironment(FUNCTION_ENV.eventBusName, eventBusName);
    aggregateFunction.addEnvironment(FUNCTION_ENV.eventBusName, eventBusName);

    // The event source mappings grant what Lambda's polling needs (crawler-function.ts).
    fetchFunction.consumeFrom(taskQueue, { ...FETCH_EVENT_SOURCE, maxConcurrency: fetchConcurrency });
    aggregateFunction.consumeFrom(resultsQueue, AGGREGATE_EVENT_SOURCE);

    // Exactly the calls each handler makes (no CDK grant*: those add actions no call uses);
    // test/integration/iam-calls.test.ts records every call and checks both ways.
    const objects = pageStore.arnForObjects('*');
    const allow = (fn: CrawlerFunction, actions: string[], resources: string[]) =>
      fn.addToRolePolicy(new iam.PolicyStatement({ actions, resources }));
    // New links and woken or handed-back hosts to TaskQueue, results to ResultsQueue, and a malformed
    // task to TaskDLQ at once, with its reason (SendMessage only: it never reads or purges a DLQ).
    allow(
      fetchFunction,
      ['sqs:SendMessage'],
      [taskQueue.queueArn, resultsQueue.queueArn, taskQueue.dlq.queueArn],
    );
    allow(fetchFunction, ['sqs:ChangeMessageVisibility'], [taskQueue.queueArn]); // a retried task's backoff
    allow(fetchFunction, ['s3:GetObject', 's3:PutObject'], [objects]); // WARC and content files; index parts it checks
    // A HEAD of an index part not yet written must answer 404, not 403 (S3 does only with ListBucket).
    allow(fetchFunction, ['s3:ListBucket'], [pageStore.bucketArn]);
    allow(
      fetchFunction,
      [
        'dynamodb:GetItem',
        'dynamodb:BatchGetItem',
        'dynamodb:Query',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'dynamodb:DeleteItem',
      ],
      [frontierTable.tableArn],
    );

    // A malformed or retried result is made visible again soon (ChangeMessageVisibility); SQS itself
    // parks it in ResultsDLQ after maxReceiveCount. Results it had no time to start go back to the
    // queue as new messages (SendMessage).
    allow(aggregateFunction, ['sqs:ChangeMessageVisibility', 'sqs:SendMessage'], [resultsQueue.queueArn]);
    // A visit of a host that awaits results at the crawl's end, due at once (core/frontier/host-hurry.ts).
    allow(aggregateFunction, ['sqs:SendMessage'], [taskQueue.queueArn]);
    allow(aggregateFunction, ['s3:GetObject', 's3:PutObject'], [objects]); // index parts, summaries
    allow(aggregateFunction, ['s3:ListBucket'], [pageStore.bucketArn]); // listing parts; 404 on a missing one
    allow(
      aggregateFunction,
      ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      [frontierTable.tableArn],
    );

    // Crawl Cancelled when a crawl's --max-cost-usd is spent (fetch); its end and page events (aggregate).
    allow(fetchFunction, ['events:PutEvents'], [eventBus.eventBusArn]);
    allow(aggregateFunction, ['events:PutEvents'], [eventBus.eventBusArn]);

    // A crawl's credentials (--header, --cookie, --basic-auth): the submitter writes them to an SSM
    // SecureString parameter under the stack's prefix, the fetch function reads them. The AWS managed
    // key aws/ssm lets the account's principals decrypt through SSM: no KMS grant to write.
    const credentialParameters = this.formatArn({
      service: 'ssm',
      resource: 'parameter',
      resourceName: `${credentialsPrefix(this.stackName).slice(1)}*`,
    });
    allow(fetchFunction, ['ssm:GetParameter'], [credentialParameters]);

    // `--render` (-c render=true): pages to render go from the fetch function to the render function
    // through RenderQueue; it sends their results and links itself (core/batches/render-batch.ts).
    let render: { queue: QueueWithDlq; fn: CrawlerFunction; layer: ChromiumLayer } | undefined;
    if (context.render) {
      const layer = new ChromiumLayer(this, IDS.chromiumLayer);
      const fn = new CrawlerFunction(this, IDS.renderFunction, {
        handlerModule: HANDLERS.render,
        description:
          'Renders pages from RenderQueue in headless Chromium, stores the DOM, sends results and links',
        timeoutSeconds: RENDER_FUNCTION.timeoutSeconds,
        memoryMb: RENDER_FUNCTION.memoryMb,
        ephemeralStorageMiB: RENDER_FUNCTION.ephemeralStorageMiB,
        architecture: lambda.Architecture.X86_64,
        layers: [layer],
        externalModules: CHROMIUM_LAYER_MODULES,
        // It sends the visits its pages' links wake to TaskQueue, which the fetch function consumes,
        // and that one sends pages back here: the crawl's own loop, bounded as the fetch function's is.
        recursiveLoop: lambda.RecursiveLoop.ALLOW,
      });
      const queue = new QueueWithDlq(this, IDS.renderQueue, {
        dlqId: IDS.renderDlq,
        consumerTimeout: fn.functionTimeout,
        consumerMaxBatchingWindow: Duration.seconds(RENDER_EVENT_SOURCE.maxBatchingWindowSeconds),
      });
      fn.consumeFrom(queue, RENDER_EVENT_SOURCE);
      fetchFunction.addEnvironment(FUNCTION_ENV.renderQueueUrl, queue.queueUrl);
      allow(fetchFunction, ['sqs:SendMessage'], [queue.queueArn]);
      fn.addEnvironment(FUNCTION_ENV.renderQueueUrl, queue.queueUrl);
      fn.addEnvironment(FUNCTION_ENV.renderDlqUrl, queue.dlq.queueUrl);
      fn.addEnvironment(FUNCTION_ENV.taskQueueUrl, taskQueue.queueUrl);
      fn.addEnvironment(FUNCTION_ENV.resultsQueueUrl, resultsQueue.queueUrl);
      fn.addEnvironment(FUNCTION_ENV.pageBucket, pageStore.bucketName);
      fn.addEnvironment(FUNCTION_ENV.frontierTable, frontierTable.tableName);
      fn.addEnvironment(FUNCTION_ENV.eventBusName, eventBusName);
      // Visits of woken and hurried hosts, results, and a malformed message to RenderDLQ at once.
      allow(fn, ['sqs:SendMessage'], [taskQueue.queueArn, resultsQueue.queueArn, queue.dlq.queueArn]);
      allow(fn, ['sqs:ChangeMessageVisibility'], [queue.queueArn]); // a retried page's backoff
      allow(fn, ['s3:GetObject', 's3:PutObject'], [objects]); // the response read back; WARC and content files
      allow(
        fn,
        // Query: the stored scope of a crawl of seeds from a file, read with its config.
        ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
        [frontierTable.tableArn],
      );
      allow(fn, ['events:PutEvents'], [eventBus.eventBusArn]);
      allow(fn, ['ssm:GetParameter'], [credentialParameters]);
      render = { queue, fn, layer };
    }

    // Schedules (`crawler schedule add`, docs/crawling.md "Schedules"): the CLI creates them in this
    // group; each sends its run message to the task queue as this role, which can do nothing else.
    const scheduleGroup = new scheduler.CfnScheduleGroup(this, IDS.scheduleGroup, {});
    const schedulerRole = new iam.Role(this, IDS.schedulerRole, {
      description: "EventBridge Scheduler: sends the crawl schedules' run messages to the task queue",
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        // Only this account's schedules may use it (the confused-deputy guard AWS documents).
        conditions: { StringEquals: { 'aws:SourceAccount': this.account } },
      }),
    });
    schedulerRole.addToPolicy(
      new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [taskQueue.queueArn] }),
    );

    const operatorPolicy = new OperatorPolicy(this, IDS.operatorPolicy, {
      credentialParameters,
      scheduleGroupName: scheduleGroup.ref,
      schedulerRole,
      eventBus,
      taskQueue,
      resultsQueue,
      renderQueue: render?.queue,
      pageStore,
      frontierTable,
    });

    for (const construct of [
      taskQueue,
      taskQueue.dlq,
      resultsQueue,
      resultsQueue.dlq,
      pageStore,
      frontierTable,
      fetchFunction,
      aggregateFunction,
      operatorPolicy,
      crawlEventsQueue,
      crawlEventsDlq,
      crawlEventsRule,
      schedulerRole,
      ...(render ? [render.queue, render.queue.dlq, render.fn, render.layer] : []),
    ]) {
      pinLogicalId(construct);
    }
    scheduleGroup.overrideLogicalId(IDS.scheduleGroup);

    const monitoring = new CrawlerMonitoring(this, 'Monitoring', {
      taskQueue,
      resultsQueue,
      fetchFunction,
      aggregateFunction,
      fetchConcurrency,
      aggregateConcurrency: AGGREGATE_EVENT_SOURCE.maxConcurrency,
      ...(alarmEmail ? { alarmEmail } : {}),
      ...(render ? { render: { queue: render.queue, fn: render.fn } } : {}),
    });

    const output = (key: string, value: string, description: string) =>
      new CfnOutput(this, key, { value, description });
    output(OUTPUTS.taskQueueUrl, taskQueue.queueUrl, 'Send crawl tasks here');
    output(
      OUTPUTS.taskDlqUrl,
      taskQueue.dlq.queueUrl,
      'Tasks parked for inspection: malformed, or failed maxReceiveCount times',
    );
    output(OUTPUTS.resultsQueueUrl, resultsQueue.queueUrl, 'One result record per finished URL');
    output(
      OUTPUTS.resultsDlqUrl,
      resultsQueue.dlq.queueUrl,
      'Result records the aggregator could not process',
    );
    output(OUTPUTS.pageBucketName, pageStore.bucketName, 'WARC files, results index parts, crawl summaries');
    output(
      OUTPUTS.accessLogBucketName,
      pageStore.accessLogs.bucketName,
      "The page bucket's server access logs (retained, like the page bucket, when the stack is deleted)",
    );
    output(
      OUTPUTS.frontierTableName,
      frontierTable.tableName,
      'Frontier: seen URLs, politeness slots, counters',
    );
    output(
      OUTPUTS.alarmTopicArn,
      monitoring.topic.topicArn,
      'SNS topic the alarms notify (ALARM and OK); subscribe to it to be told',
    );
    output(OUTPUTS.dashboardName, monitoring.dashboard.dashboardName, 'CloudWatch dashboard of the crawler');
    output(
      OUTPUTS.operatorPolicyArn,
      operatorPolicy.managedPolicyArn,
      'Managed policy with what the crawler CLI needs on this stack; attach it to the operators (docs/deploy.md)',
    );
    output(
      OUTPUTS.eventBusName,
      eventBusName,
      'The EventBridge bus crawl events are published on (docs/deploy.md, Events)',
    );
    output(
      OUTPUTS.crawlEventsQueueUrl,
      crawlEventsQueue.queueUrl,
      'Crawl Started, Completed, Cancelled, Failed and Skipped events, for consumers that poll',
    );
    output(
      OUTPUTS.scheduleGroupName,
      scheduleGroup.ref,
      'EventBridge Scheduler group of `crawler schedule add`',
    );
    output(OUTPUTS.schedulerRoleArn, schedulerRole.roleArn, 'The role schedules send their run messages as');
    output(OUTPUTS.taskQueueArn, taskQueue.queueArn, 'Where schedules send their run messages');
    output(
      OUTPUTS.credentialsPrefix,
      credentialsPrefix(this.stackName),
      "Where a crawl's credentials are kept: the SSM SecureString parameter <prefix><crawlId>",
    );
    if (render) {
      output(OUTPUTS.renderQueueUrl, render.queue.queueUrl, 'Pages the fetch function sends to render');
      output(OUTPUTS.renderDlqUrl, render.queue.dlq.queueUrl, 'Pages the render function could not process');
    }

    // Created first: a deploy the account cannot run fails before anything else exists, so a first
    // deploy that fails leaves no retained bucket, table or log group behind.
    const accountCheck = new AccountConcurrencyCheck(this, ACCOUNT_CHECK_ID, {
      needs: {
        fetch: fetchConcurrency,
        aggregate: AGGREGATE_EVENT_SOURCE.maxConcurrency,
        ...(render ? { render: RENDER_EVENT_SOURCE.maxConcurrency } : {}),
      },
    });
    for (const child of this.node.children)
      if (child !== accountCheck) child.node.addDependency(accountCheck);

    this.taskQueue = taskQueue;
    this.resultsQueue = resultsQueue;
    this.pageStore = pageStore;
    this.frontierTable = frontierTable;
    this.fetchFunction = fetchFunction;
    this.aggregateFunction = aggregateFunction;
    this.monitoring = monitoring;
    this.operatorPolicy = operatorPolicy;
    this.accountCheck = accountCheck;
    this.renderFunction = render?.fn;
    this.fetchConcurrency = fetchConcurrency;
  }
}

/** Logical id = construct id (no hash): a stable contract, and moving the construct never replaces it. */
function pinLogicalId(construct: IConstruct): void {
  (construct.node.defaultChild as CfnResource).overrideLogicalId(construct.node.id);
}
