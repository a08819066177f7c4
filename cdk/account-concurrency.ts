/**
 * Fails a deploy whose event sources may run more functions at once than the account's unreserved
 * Lambda concurrency in the Region. New AWS accounts start with a reduced concurrency quota (10 has
 * been reported, where the default is 1,000; docs/deploy.md): the stack would deploy, and its crawls
 * would then be throttled with nothing to say why. A custom resource reads the quota with
 * lambda:GetAccountSettings during the deploy (the synth is offline and cannot) and answers FAILED
 * with one line that says what to do, which `cdk deploy` prints as the reason of the failed resource.
 */
import { CustomResource, Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** Construct id in the stack; the logical ids of its resources begin with it. */
export const ACCOUNT_CHECK_ID = 'AccountConcurrencyCheck';
/** The resource type CloudFormation shows for the check. */
export const ACCOUNT_CHECK_TYPE = 'Custom::AccountConcurrency';

/**
 * The check's handler, deployed inline (CommonJS `index.js`, under the 4 KB CloudFormation allows):
 * the Lambda runtime provides `@aws-sdk/client-lambda`, and Node's fetch answers CloudFormation's
 * pre-signed response URL. It always answers, or the stack would wait an hour for it. Delete
 * always succeeds: a stack being removed owes the quota nothing.
 */
export const ACCOUNT_CHECK_SOURCE = `
const { LambdaClient, GetAccountSettingsCommand } = require('@aws-sdk/client-lambda');
exports.shortfall = (unreserved, needs, region) => {
  const names = Object.keys(needs);
  const total = names.reduce((sum, name) => sum + Number(needs[name]), 0);
  if (total <= unreserved) return undefined;
  const parts = names.map((name) => name + ' ' + needs[name]).join(' + ');
  const fetchFits = unreserved - total + Number(needs.fetch);
  return 'The unreserved Lambda concurrency of this account in ' + region + ' is ' + unreserved +
    ', below the ' + total + ' this stack\\'s event sources may run at once (' + parts + '). ' +
    'New accounts start with a reduced quota: request ' + total + ' or more for Lambda "Concurrent executions" ' +
    '(quota code L-B99A9384) in Service Quotas' +
    (fetchFits >= 2 ? ', or deploy with -c fetchConcurrency=' + fetchFits : '') + ' (docs/deploy.md).';
};
exports.handler = async (event) => {
  let status = 'SUCCESS';
  let reason = event.RequestType === 'Delete' ? 'nothing to check on delete' : 'enough unreserved concurrency';
  try {
    if (event.RequestType !== 'Delete') {
      const settings = await new LambdaClient({}).send(new GetAccountSettingsCommand({}));
      const unreserved = settings.AccountLimit.UnreservedConcurrentExecutions;
      const short = exports.shortfall(unreserved, event.ResourceProperties.Needs, process.env.AWS_REGION);
      if (short !== undefined) [status, reason] = ['FAILED', short];
    }
  } catch (error) {
    [status, reason] = ['FAILED', 'Could not read the account\\'s Lambda concurrency (lambda:GetAccountSettings): ' + error.message];
  }
  console.log(JSON.stringify({ requestType: event.RequestType, status, reason }));
  const response = await fetch(event.ResponseURL, {
    method: 'PUT',
    headers: { 'content-type': '' },
    body: JSON.stringify({
      Status: status,
      Reason: reason,
      PhysicalResourceId: 'account-concurrency',
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: event.LogicalResourceId,
    }),
  });
  if (!response.ok) throw new Error('CloudFormation response: HTTP ' + response.status);
};
`;

export interface AccountConcurrencyCheckProps {
  /** What each event source may run at once (its MaximumConcurrency), by name; the sum must fit. */
  readonly needs: Readonly<Record<string, number>>;
}

export class AccountConcurrencyCheck extends Construct {
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: AccountConcurrencyCheckProps) {
    super(scope, id);
    // Gone with the stack: it holds one line a deploy, nothing worth keeping (the crawler's own logs are kept).
    const logGroup = new logs.LogGroup(this, 'LogGroup', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.role = new iam.Role(this, 'ServiceRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'Execution role of the account concurrency check: reads the account settings only',
    });
    logGroup.grantWrite(this.role);
    // GetAccountSettings has no resource-level permissions: "*" is the only resource it accepts.
    this.role.addToPolicy(
      new iam.PolicyStatement({ actions: ['lambda:GetAccountSettings'], resources: ['*'] }),
    );
    this.function = new lambda.Function(this, 'Function', {
      description:
        "Fails the deploy when the account's unreserved Lambda concurrency is below the event sources' maximum",
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      handler: 'index.handler',
      code: lambda.Code.fromInline(ACCOUNT_CHECK_SOURCE),
      timeout: Duration.seconds(30),
      memorySize: 128,
      role: this.role,
      logGroup,
    });
    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: this.function.functionArn,
      resourceType: ACCOUNT_CHECK_TYPE,
      // A new sum (another -c fetchConcurrency) updates the resource, and so checks again.
      properties: { Needs: { ...props.needs } },
    });
  }
}
