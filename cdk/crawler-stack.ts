import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { DEFAULT_EVENT_BUS, FUNCTION_ENV, IDS, STACK_NAME } from '../lambdas/shared/contracts.ts';
import {
  ACCOUNT_CHECK_ID,
  AccountConcurrencyCheck,
  type AccountConcurrencyCheckProps,
} from './account-concurrency.ts';
import { parseAlarmEmail, parseFetchConcurrency, readCrawlerContext } from './context.ts';
import { createCrawlEvents } from './crawl-events.ts';
import {
  type CrawlerResources,
  createPipelineFunctions,
  createPipelineQueues,
  credentialParametersArn,
  wirePipeline,
} from './crawl-pipeline.ts';
import { createCrawlSchedules } from './crawl-schedules.ts';
import type { CrawlerFunction } from './crawler-function.ts';
import { FrontierTable } from './frontier-table.ts';
import { grantAggregateAccess, grantFetchAccess } from './function-access.ts';
import { AGGREGATE_EVENT_SOURCE, FETCH_EVENT_SOURCE, RENDER_EVENT_SOURCE } from './limits.ts';
import { pinLogicalId } from './logical-id.ts';
import { CrawlerMonitoring } from './monitoring.ts';
import { OperatorPolicy } from './operator-policy.ts';
import { PageStore } from './page-store.ts';
import type { QueueWithDlq } from './queue-with-dlq.ts';
import { createRenderPipeline } from './render-pipeline.ts';
import { addStackOutputs } from './stack-outputs.ts';

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

    // The functions first: each queue's visibility timeout derives from its consumer's.
    const functions = createPipelineFunctions(this);
    const queues = createPipelineQueues(this, functions);
    const pageStore = new PageStore(this, IDS.pageStore);
    const frontierTable = new FrontierTable(this, IDS.frontierTable);
    const crawlEvents = createCrawlEvents(this, context.eventBusName ?? DEFAULT_EVENT_BUS);
    const crawler: CrawlerResources = {
      ...functions,
      ...queues,
      pageStore,
      frontierTable,
      eventBus: crawlEvents.eventBus,
      eventBusName: crawlEvents.eventBusName,
      credentialParameters: credentialParametersArn(this),
    };

    wirePipeline(crawler, fetchConcurrency);
    grantFetchAccess(crawler);
    grantAggregateAccess(crawler);
    const render = context.render ? createRenderPipeline(this, crawler) : undefined;
    const counting = context.callCounting;
    if (counting !== undefined)
      for (const fn of [functions.fetchFunction, functions.aggregateFunction, render?.fn])
        fn?.addEnvironment(FUNCTION_ENV.callCounting, counting);
    const schedules = createCrawlSchedules(this, queues.taskQueue);
    const operatorPolicy = new OperatorPolicy(this, IDS.operatorPolicy, {
      ...crawler,
      scheduleGroupName: schedules.scheduleGroup.ref,
      schedulerRole: schedules.schedulerRole,
      renderQueue: render?.queue,
    });
    for (const construct of [pageStore, frontierTable, operatorPolicy]) pinLogicalId(construct);

    const monitoring = new CrawlerMonitoring(this, 'Monitoring', {
      ...functions,
      ...queues,
      fetchConcurrency,
      aggregateConcurrency: AGGREGATE_EVENT_SOURCE.maxConcurrency,
      ...(alarmEmail ? { alarmEmail } : {}),
      ...(render ? { render: { queue: render.queue, fn: render.fn } } : {}),
    });
    addStackOutputs(this, { crawler, crawlEvents, schedules, operatorPolicy, monitoring, render });
    const accountCheck = this.checkAccountFirst({
      fetch: fetchConcurrency,
      aggregate: AGGREGATE_EVENT_SOURCE.maxConcurrency,
      ...(render ? { render: RENDER_EVENT_SOURCE.maxConcurrency } : {}),
    });

    this.taskQueue = queues.taskQueue;
    this.resultsQueue = queues.resultsQueue;
    this.pageStore = pageStore;
    this.frontierTable = frontierTable;
    this.fetchFunction = functions.fetchFunction;
    this.aggregateFunction = functions.aggregateFunction;
    this.monitoring = monitoring;
    this.operatorPolicy = operatorPolicy;
    this.accountCheck = accountCheck;
    this.renderFunction = render?.fn;
    this.fetchConcurrency = fetchConcurrency;
  }

  /**
   * Created first: a deploy the account cannot run fails before anything else exists, so a first
   * deploy that fails leaves no retained bucket, table or log group behind.
   */
  private checkAccountFirst(needs: AccountConcurrencyCheckProps['needs']): AccountConcurrencyCheck {
    const accountCheck = new AccountConcurrencyCheck(this, ACCOUNT_CHECK_ID, { needs });
    for (const child of this.node.children)
      if (child !== accountCheck) child.node.addDependency(accountCheck);
    return accountCheck;
  }
}
