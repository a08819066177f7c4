/**
 * A deployed stack's outputs (queue URLs, bucket and table names) from CloudFormation DescribeStacks,
 * for `--stack NAME`: nobody types a physical name by hand.
 *
 * Against AWS the client takes the SDK's default configuration (region from AWS_REGION, else
 * AWS_DEFAULT_REGION, else the profile; credentials from the default provider chain,
 * AWS_ENDPOINT_URL_CLOUDFORMATION honoured), and an error names the region it searched.
 * With an endpoint (`--stack NAME --endpoint URL`: LocalStack after `cdklocal deploy`) it talks to
 * that endpoint with the local client settings (region us-east-1, dummy credentials), as the data
 * clients of `locateStack` do.
 */
import {
  CloudFormationClient,
  type CloudFormationClientConfig,
  DescribeStacksCommand,
  type Stack,
} from '@aws-sdk/client-cloudformation';
import { OPERATOR, recordAwsCalls } from '../lambdas/shared/aws-call-ledger.ts';
import { awsRegion, clientSettings, LOCAL_ACCOUNT_ID } from '../local/aws-clients.ts';
import { processMeters } from '../local/process-meters.ts';
import type { DescribeStackOutputs } from '../local/stack-locator.ts';

export interface StackOutputsOptions {
  /** A CloudFormation endpoint (LocalStack); the SDK's default configuration otherwise. */
  endpoint?: string | undefined;
  /** Injected client (tests); created and destroyed per call otherwise. */
  client?: Pick<CloudFormationClient, 'send'>;
}

/** The stack states in which its resources cannot be used (never created, rolled back or deleted). */
const UNUSABLE = /^(CREATE_FAILED|ROLLBACK_|DELETE_|IMPORT_ROLLBACK_)/;

/** The outputs of stack `stackName` by OutputKey. Throws a one-line, actionable error when it cannot. */
export async function describeStackOutputs(
  stackName: string,
  options: StackOutputsOptions = {},
): Promise<Record<string, string>> {
  const client = options.client ?? operatorClient(options.endpoint);
  const where = options.endpoint ? ` at ${new URL(options.endpoint).origin}` : '';
  let stack: Stack | undefined;
  try {
    const out = await client.send(new DescribeStacksCommand({ StackName: stackName }));
    stack = out.Stacks?.[0];
  } catch (error) {
    const region = where ? undefined : await searchedRegion(client);
    throw new Error(explain(stackName, where, error, region), { cause: error });
  } finally {
    if (!options.client) (client as CloudFormationClient).destroy();
  }
  if (!stack) throw new Error(`stack ${stackName}${where} not found`);
  const status = stack.StackStatus ?? 'UNKNOWN';
  if (UNUSABLE.test(status)) {
    throw new Error(
      `stack ${stackName}${where} is ${status}: its resources cannot be used; deploy it again (npx cdk deploy ${stackName})`,
    );
  }
  const outputs: Record<string, string> = {};
  for (const output of stack.Outputs ?? []) {
    if (output.OutputKey && output.OutputValue !== undefined) outputs[output.OutputKey] = output.OutputValue;
  }
  return outputs;
}

/** A `DescribeStackOutputs` for `locateStack`, bound to an endpoint (or AWS itself when none). */
export function stackOutputsReader(endpoint?: string): DescribeStackOutputs {
  return (stackName) => describeStackOutputs(stackName, { endpoint });
}

/** The operator's CloudFormation client; its calls are recorded like the data clients' (aws-call-ledger.ts). */
function operatorClient(endpoint: string | undefined): CloudFormationClient {
  const tag =
    endpoint === undefined ? { principal: OPERATOR } : { principal: OPERATOR, accountId: LOCAL_ACCOUNT_ID };
  return recordAwsCalls(new CloudFormationClient(cloudFormationConfig(endpoint)), tag, processMeters.ledger);
}

export function cloudFormationConfig(endpoint?: string): CloudFormationClientConfig {
  if (endpoint === undefined) return awsRegion();
  const settings = clientSettings();
  return {
    endpoint: new URL(endpoint).origin,
    region: settings.region,
    credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
    maxAttempts: settings.maxAttempts,
  };
}

/** The region the client really used (its resolved config), not what the environment suggests. */
async function searchedRegion(client: Pick<CloudFormationClient, 'send'>): Promise<string | undefined> {
  const config = (client as Partial<CloudFormationClient>).config;
  try {
    return config ? await config.region() : undefined;
  } catch {
    return undefined;
  }
}

function explain(stackName: string, where: string, error: unknown, region: string | undefined): string {
  const name = error instanceof Error ? error.name : '';
  const message = error instanceof Error ? error.message : String(error);
  if (name === 'ValidationError' && /does not exist/i.test(message)) {
    const inRegion = region ? ` in region ${region}` : '';
    return `stack ${stackName}${where} does not exist${inRegion}; deploy it (npx cdk deploy ${stackName}) or pass --stack NAME (docs/deploy.md)`;
  }
  if (name === 'CredentialsProviderError' || /credential/i.test(message)) {
    return `no AWS credentials to read stack ${stackName}${where}: ${message} (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)`;
  }
  if (/region is missing/i.test(message)) {
    return `reading stack ${stackName}: no AWS region configured (set AWS_REGION, AWS_DEFAULT_REGION or a profile region)`;
  }
  if (name === 'AccessDenied' || name === 'AccessDeniedException') {
    return `not allowed to read stack ${stackName}${where}: ${message} (needs cloudformation:DescribeStacks; docs/deploy.md)`;
  }
  return `reading stack ${stackName}${where} from CloudFormation failed: ${name ? `${name}: ` : ''}${message}`;
}
