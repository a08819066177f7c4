import { type App, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { credentialsPrefix, IDS } from '../lambdas/shared/contracts.ts';
import type { CrawlerFunction } from './crawler-function.ts';
import type { CrawlerStack } from './crawler-stack.ts';

/** Registers the cdk-nag AwsSolutions pack; synthesis fails on any finding not acknowledged here. */
export function applyNag(app: App, stack: CrawlerStack): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const objects = `Resource::<${logicalIdOfGetAtt(stack.resolve(stack.pageStore.bucketArn))}.Arn>/*`;
  const crawlers = [
    stack.fetchFunction,
    stack.aggregateFunction,
    ...(stack.renderFunction ? [stack.renderFunction] : []),
  ];
  for (const fn of crawlers) {
    acknowledge(
      defaultPolicyOf(fn),
      objects,
      'Objects of the page store bucket only; keys are per crawl (WARC files, index parts, summaries) and unknown at deploy time.',
    );
  }
  acknowledge(
    defaultPolicyOfRole(stack.accountCheck.role),
    'Resource::*',
    'lambda:GetAccountSettings only (the account concurrency check): the action has no resource-level permissions.',
  );
  acknowledge(
    stack.operatorPolicy,
    objects,
    'Read-only (GetObject) on the page store objects: results and get read index parts and WARC records of any crawl.',
  );
  acknowledge(
    stack.operatorPolicy,
    `Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/<${IDS.scheduleGroup}>/*`,
    "Create and delete schedules in the stack's own schedule group only: `crawler schedule add NAME` names them, unknown at deploy time.",
  );
  const credentials = `Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter${credentialsPrefix(stack.stackName)}*`;
  for (const fn of [stack.fetchFunction, ...(stack.renderFunction ? [stack.renderFunction] : [])])
    acknowledge(
      defaultPolicyOf(fn),
      credentials,
      "GetParameter on the crawls' credential parameters only (`/<stack>/credentials/<crawl id>`): crawl ids are unknown at deploy time.",
    );
  acknowledge(
    stack.operatorPolicy,
    credentials,
    "PutParameter on the crawls' credential parameters only: `crawler submit --header ...` writes `/<stack>/credentials/<crawl id>`.",
  );
  acknowledge(
    stack.operatorPolicy,
    'Resource::arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/ServerlessCrawler/*',
    'DescribeStacks on this stack only; the trailing * is the stack id, which changes when the stack is re-created.',
  );
}

/**
 * IAM5 findings are acknowledged one at a time, on one policy, so any other wildcard (a new grant, a
 * hand-written `*`) still fails synthesis. Every action is named: no action wildcard is acknowledged.
 */
function acknowledge(policy: IConstruct, finding: string, reason: string): void {
  Validations.of(policy).acknowledge({ id: `AwsSolutions-IAM5[${finding}]`, reason });
}

function defaultPolicyOf(fn: CrawlerFunction): IConstruct {
  const role = fn.role;
  if (!(role instanceof iam.Role)) throw new Error(`${fn.node.id}: its role is not a Role of this stack`);
  return defaultPolicyOfRole(role);
}

function defaultPolicyOfRole(role: iam.Role): IConstruct {
  const policy = role.node.tryFindChild('DefaultPolicy');
  if (!policy) throw new Error(`${role.node.path}: no DefaultPolicy to acknowledge findings on`);
  return policy;
}

/** `{ 'Fn::GetAtt': [id, 'Arn'] }` -> id. */
function logicalIdOfGetAtt(resolved: unknown): string {
  if (typeof resolved === 'object' && resolved !== null && 'Fn::GetAtt' in resolved) {
    const args = resolved['Fn::GetAtt'];
    if (Array.isArray(args) && typeof args[0] === 'string') return args[0];
  }
  throw new Error(`expected a Fn::GetAtt, got ${JSON.stringify(resolved)}`);
}
