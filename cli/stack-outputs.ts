/**
 * A deployed stack's outputs (queue URLs, bucket and table names) from CloudFormation DescribeStacks,
 * for `--stack NAME`: nobody types a physical name by hand.
 *
 * Against AWS the client takes the SDK's default configuration (region from AWS_REGION or the
 * profile, credentials from the default provider chain, AWS_ENDPOINT_URL_CLOUDFORMATION honoured).
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
import { clientSettings } from '../local/aws-clients.ts';
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
  const client = options.client ?? new CloudFormationClient(cloudFormationConfig(options.endpoint));
  const where = options.endpoint ? ` at ${new URL(options.endpoint).origin}` : '';
  let stack: Stack | undefined;
  try {
    const out = await client.send(new DescribeStacksCommand({ StackName: stackName }));
    stack = out.Stacks?.[0];
  } catch (error) {
    throw new Error(explain(stackName, where, error), { cause: error });
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

export function cloudFormationConfig(endpoint?: string): CloudFormationClientConfig {
  if (endpoint === undefined) return {};
  const settings = clientSettings();
  return {
    endpoint: new URL(endpoint).origin,
    region: settings.region,
    credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
    maxAttempts: settings.maxAttempts,
  };
}

function explain(stackName: string, where: string, error: unknown): string {
  const name = error instanceof Error ? error.name : '';
  const message = error instanceof Error ? error.message : String(error);
  if (name === 'ValidationError' && /does not exist/i.test(message)) {
    const region = where
      ? ''
      : ` in region ${process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? '(default)'}`;
    return `stack ${stackName}${where} does not exist${region}; deploy it (npx cdk deploy ${stackName}) or pass --stack NAME (docs/deploy.md)`;
  }
  if (name === 'CredentialsProviderError' || /credential/i.test(message)) {
    return `no AWS credentials to read stack ${stackName}${where}: ${message} (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)`;
  }
  if (/region is missing/i.test(message)) {
    return `reading stack ${stackName}: no AWS region configured (set AWS_REGION or a profile region)`;
  }
  if (name === 'AccessDenied' || name === 'AccessDeniedException') {
    return `not allowed to read stack ${stackName}${where}: ${message} (needs cloudformation:DescribeStacks; docs/deploy.md)`;
  }
  return `reading stack ${stackName}${where} from CloudFormation failed: ${name ? `${name}: ` : ''}${message}`;
}
