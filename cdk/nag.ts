import { type App, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import type { CrawlerFunction } from './crawler-function.ts';
import type { CrawlerStack } from './crawler-stack.ts';

/** Registers the cdk-nag AwsSolutions pack; synthesis fails on any finding not acknowledged here. */
export function applyNag(app: App, stack: CrawlerStack): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  for (const fn of [stack.fetchFunction, stack.aggregateFunction]) acknowledgeBucketGrants(fn, stack);
}

/**
 * IAM5 findings from `Bucket.grantRead` / `grantPut`: CDK's grants use action wildcards and the
 * object ARN `bucket/*`. Acknowledged one finding at a time, on the function's policy only, so any
 * other wildcard (a new grant, a hand-written `*`) still fails synthesis.
 */
function acknowledgeBucketGrants(fn: CrawlerFunction, stack: CrawlerStack): void {
  const policy = defaultPolicyOf(fn);
  const bucketLogicalId = stack.resolve(stack.pageStore.bucketArn);
  const bucketArnToken = `<${logicalIdOfGetAtt(bucketLogicalId)}.Arn>`;
  const ack = (finding: string, reason: string) =>
    Validations.of(policy).acknowledge({ id: `AwsSolutions-IAM5[${finding}]`, reason });
  ack(
    `Resource::${bucketArnToken}/*`,
    'Objects of the page store bucket only; keys are per crawl (WARC files, index parts, robots cache) and unknown at deploy time.',
  );
  ack(
    'Action::s3:GetObject*',
    'Bucket.grantRead: read-only object actions (GetObject, ranged reads, versions, attributes) on the page store objects only.',
  );
  ack(
    'Action::s3:GetBucket*',
    'Bucket.grantRead: read-only bucket metadata (location, versioning) of the page store bucket only.',
  );
  ack(
    'Action::s3:List*',
    'Bucket.grantRead: ListBucket on the page store so a missing key (robots cache miss) answers 404, not 403.',
  );
  ack(
    'Action::s3:Abort*',
    'Bucket.grantPut: AbortMultipartUpload, so an interrupted multipart WARC upload can be cleaned up; page store objects only.',
  );
}

function defaultPolicyOf(fn: CrawlerFunction): IConstruct {
  const role = fn.role;
  const policy = role instanceof iam.Role ? role.node.tryFindChild('DefaultPolicy') : undefined;
  if (!policy) throw new Error(`${fn.node.id}: its role has no DefaultPolicy to acknowledge findings on`);
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
