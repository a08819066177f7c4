// Reads the template's functions and SQS event source mappings into what the pollers need.
import { randomUUID } from 'node:crypto';
import { resolve as resolvePath } from 'node:path';
import { HANDLER_METADATA_KEY } from '../lambdas/shared/contracts.ts';
import type { CfnResource } from './cfn-template.ts';
import type { LocalEventSource, LocalFunction, ProvisionedResource } from './stack-model.ts';

export interface FunctionInput {
  logicalId: string;
  resource: CfnResource;
  functionName: string;
  region: string;
  accountId: string;
  rootDir: string;
  resolveString(value: unknown, path: string): string;
}

export function handlerModuleOf(resource: CfnResource): string | undefined {
  const value = resource.Metadata?.[HANDLER_METADATA_KEY];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

export function readFunction(input: FunctionInput): LocalFunction {
  const props = input.resource.Properties ?? {};
  const at = (key: string) => `Resources.${input.logicalId}.Properties.${key}`;
  const handlerModule = handlerModuleOf(input.resource);
  if (!handlerModule) throw new Error(`${input.logicalId}: no Metadata['${HANDLER_METADATA_KEY}']`);
  const environment: Record<string, string> = {};
  const variables = isRecord(props.Environment) ? props.Environment.Variables : undefined;
  if (isRecord(variables)) {
    for (const [key, value] of Object.entries(variables)) {
      environment[key] = input.resolveString(value, at(`Environment.Variables.${key}`));
    }
  }
  const fn: LocalFunction = {
    logicalId: input.logicalId,
    functionName: input.functionName,
    functionArn: `arn:aws:lambda:${input.region}:${input.accountId}:function:${input.functionName}`,
    handlerModule,
    handlerPath: resolvePath(input.rootDir, handlerModule),
    // Lambda's own defaults when the template leaves them out.
    timeoutSeconds: numberOr(props.Timeout, 3),
    memorySizeMb: numberOr(props.MemorySize, 128),
    architecture:
      Array.isArray(props.Architectures) && props.Architectures[0] === 'arm64' ? 'arm64' : 'x86_64',
    environment,
  };
  if (props.ReservedConcurrentExecutions !== undefined) {
    fn.reservedConcurrency = numberOr(props.ReservedConcurrentExecutions, 0);
  }
  return fn;
}

export interface EventSourceInput {
  logicalId: string;
  resource: CfnResource;
  functions: Record<string, LocalFunction>;
  resources: Record<string, ProvisionedResource>;
  resolveString(value: unknown, path: string): string;
  note(text: string): void;
  /** The mapping's UUID (deterministic per instance when given); random otherwise, as on Lambda. */
  uuid?: string;
}

export type EventSourceResult =
  | { kind: 'mapped'; eventSource: LocalEventSource }
  | { kind: 'ignored'; reason: string };

const HANDLED_MAPPING_PROPERTIES = [
  'FunctionName',
  'EventSourceArn',
  'BatchSize',
  'MaximumBatchingWindowInSeconds',
  'ScalingConfig',
  'FunctionResponseTypes',
  'Enabled',
];

export function readEventSource(input: EventSourceInput): EventSourceResult {
  const props = input.resource.Properties ?? {};
  const at = (key: string) => `Resources.${input.logicalId}.Properties.${key}`;
  const fnId = targetId(
    props.FunctionName,
    input,
    at('FunctionName'),
    (id) => input.functions[id]?.functionName,
    (id) => input.functions[id]?.functionArn,
  );
  if (!fnId || !input.functions[fnId]) {
    return { kind: 'ignored', reason: 'its function is not run locally (no crawler:handler metadata)' };
  }
  const queueId = targetId(
    props.EventSourceArn,
    input,
    at('EventSourceArn'),
    () => undefined,
    (id) => input.resources[id]?.arn,
  );
  const queue = queueId ? input.resources[queueId] : undefined;
  if (!queueId || queue?.type !== 'AWS::SQS::Queue' || !queue.url || !queue.arn) {
    return { kind: 'ignored', reason: 'its event source is not an SQS queue of this stack' };
  }
  const fn = input.functions[fnId];
  const batchSize = numberOr(props.BatchSize, 10);
  const window = numberOr(props.MaximumBatchingWindowInSeconds, 0);
  // The same checks Lambda makes when the mapping is created, so a bad template fails here too.
  if (batchSize < 1 || batchSize > 10_000)
    throw new Error(`${input.logicalId}: BatchSize ${batchSize} out of 1..10000`);
  if (batchSize > 10 && window <= 0) {
    throw new Error(
      `${input.logicalId}: BatchSize ${batchSize} > 10 needs MaximumBatchingWindowInSeconds > 0`,
    );
  }
  const scaling = isRecord(props.ScalingConfig) ? props.ScalingConfig.MaximumConcurrency : undefined;
  const maximumConcurrency = scaling === undefined ? undefined : numberOr(scaling, 2);
  if (maximumConcurrency !== undefined && (maximumConcurrency < 2 || maximumConcurrency > 1000)) {
    throw new Error(
      `${input.logicalId}: ScalingConfig.MaximumConcurrency ${maximumConcurrency} out of 2..1000`,
    );
  }
  const types = Array.isArray(props.FunctionResponseTypes) ? props.FunctionResponseTypes : [];
  const extra = Object.keys(props).filter((key) => !HANDLED_MAPPING_PROPERTIES.includes(key));
  if (extra.length > 0) input.note(`not applied locally: ${extra.join(', ')}`);
  const eventSource: LocalEventSource = {
    logicalId: input.logicalId,
    uuid: input.uuid ?? randomUUID(),
    functionLogicalId: fnId,
    queueLogicalId: queueId,
    queueUrl: queue.url,
    queueArn: queue.arn,
    batchSize,
    maximumBatchingWindowInSeconds: window,
    reportBatchItemFailures: types.includes('ReportBatchItemFailures'),
    enabled: props.Enabled === undefined ? true : props.Enabled === true || props.Enabled === 'true',
  };
  if (maximumConcurrency !== undefined) eventSource.maximumConcurrency = maximumConcurrency;
  // Lambda refuses a mapping whose queue visibility timeout is below the function timeout.
  const visibility = Number(queue.attributes?.VisibilityTimeout);
  if (fn && Number.isFinite(visibility) && visibility < fn.timeoutSeconds) {
    throw new Error(
      `${input.logicalId}: queue visibility timeout ${visibility} s is less than function ${fnId} timeout ${fn.timeoutSeconds} s`,
    );
  }
  return { kind: 'mapped', eventSource };
}

/** The logical id a mapping property points at: {Ref}, {Fn::GetAtt}, or a resolved name/ARN. */
function targetId(
  value: unknown,
  input: EventSourceInput,
  path: string,
  nameOf: (id: string) => string | undefined,
  arnOf: (id: string) => string | undefined,
): string | undefined {
  if (isRecord(value)) {
    if (typeof value.Ref === 'string') return value.Ref;
    const getAtt = value['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
    if (typeof getAtt === 'string') return getAtt.split('.')[0];
  }
  const text = input.resolveString(value, path);
  const ids = [...Object.keys(input.functions), ...Object.keys(input.resources)];
  return ids.find((id) => nameOf(id) === text || arnOf(id) === text);
}

function numberOr(value: unknown, fallback: number): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  return Number.isFinite(n) ? n : fallback;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
