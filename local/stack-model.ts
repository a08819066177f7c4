// What provisioning yields: the local picture of the deployed stack.

export interface ProvisionedResource {
  type: string;
  /** What CloudFormation's Ref returns: queue URL, bucket/table/function name, mapping UUID. */
  physicalId: string;
  arn?: string;
  url?: string;
  /** Queues: the settable attributes as the endpoint reports them (VisibilityTimeout, RedrivePolicy...). */
  attributes?: Record<string, string>;
}

export interface LocalFunction {
  logicalId: string;
  functionName: string;
  functionArn: string;
  /** Metadata `crawler:handler`: module path relative to the repo root. */
  handlerModule: string;
  /** Absolute path of that module. */
  handlerPath: string;
  timeoutSeconds: number;
  memorySizeMb: number;
  /** Architectures[0]; Lambda's default x86_64 when the template leaves it out (a GB-second's price). */
  architecture: 'arm64' | 'x86_64';
  /** Environment.Variables as resolved from the template (no endpoint env yet). */
  environment: Record<string, string>;
  reservedConcurrency?: number;
}

export interface LocalEventSource {
  logicalId: string;
  uuid: string;
  functionLogicalId: string;
  queueLogicalId: string;
  queueUrl: string;
  queueArn: string;
  batchSize: number;
  maximumBatchingWindowInSeconds: number;
  /** ScalingConfig.MaximumConcurrency; undefined when the template leaves it to Lambda. */
  maximumConcurrency?: number;
  reportBatchItemFailures: boolean;
  enabled: boolean;
}

/** An EventBridge rule of the template (AWS::Events::Rule), resolved: its bus, pattern and SQS targets. */
export interface LocalEventRule {
  logicalId: string;
  busName: string;
  pattern: unknown;
  enabled: boolean;
  queueUrls: string[];
}

/** A template setting the local runtime did not apply, with the reason. */
export interface ProvisionNote {
  logicalId: string;
  note: string;
}

export interface ProvisionedStack {
  stackName: string;
  instanceId: string;
  region: string;
  accountId: string;
  resources: Record<string, ProvisionedResource>;
  functions: Record<string, LocalFunction>;
  eventSources: Record<string, LocalEventSource>;
  /** The local event bus applies these to each event put (local/eventbridge-server.ts). */
  eventRules: LocalEventRule[];
  outputs: Record<string, string>;
  /** Resources not provisioned locally (IAM, Logs, policies, custom resources...). */
  ignored: Array<{ logicalId: string; type: string; reason: string }>;
  skipped: ProvisionNote[];
}
