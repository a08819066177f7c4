// Provisions a synthesized CDK stack into the emulators (or any AWS-compatible endpoint): walks the
// template's Resources in dependency order, creates queues, buckets and tables, and reads functions
// and event source mappings for the pollers, and EventBridge rules for the local event bus. Names and settings come only from the template.
import { createHash, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from './aws-clients.ts';
import { type ResolveContext, resolveString, resolveValue, TemplateResolveError } from './cfn-resolver.ts';
import {
  type CfnResource,
  type CfnTemplate,
  dependencyOrder,
  parseTemplate,
  type TemplateInput,
} from './cfn-template.ts';
import { type NameKind, physicalName } from './physical-names.ts';
import { handlerModuleOf, readEventSource, readFunction } from './provision-lambda.ts';
import {
  type CreateInput,
  createBucket,
  createQueue,
  createTable,
  findBucket,
  findQueue,
  findTable,
} from './provision-storage.ts';
import type { LocalEventRule, ProvisionedResource, ProvisionedStack } from './stack-model.ts';

export type { CfnTemplate, TemplateInput } from './cfn-template.ts';
export { NotProvisionedError } from './provision-storage.ts';
export type * from './stack-model.ts';

export interface ProvisionClients {
  sqs: SQSClient;
  s3: S3Client;
  dynamodb: DynamoDBClient;
}

export interface ProvisionOptions {
  stackName: string;
  /** Seeds the physical-name suffixes; the same id re-provisions the same names. Random by default. */
  instanceId?: string;
  region?: string;
  accountId?: string;
  /** Where Metadata `crawler:handler` paths are relative to; the repo root by default. */
  rootDir?: string;
  /**
   * `create` (default): create what is missing, reuse what exists. `lookup`: create nothing, only find
   * the queues, buckets and tables an earlier provisioning of the same instance made (read-only
   * callers against a running endpoint); a missing one throws NotProvisionedError.
   */
  mode?: 'create' | 'lookup';
}

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

const STORAGE_TYPES = new Set([
  'AWS::SQS::Queue',
  'AWS::S3::Bucket',
  'AWS::DynamoDB::Table',
  'AWS::DynamoDB::GlobalTable',
]);
const FUNCTION = 'AWS::Lambda::Function';
const MAPPING = 'AWS::Lambda::EventSourceMapping';
const EVENT_RULE = 'AWS::Events::Rule';
/** Kept by the local Scheduler (scheduler-server.ts): only the group's name is provisioned. */
const SCHEDULE_GROUP = 'AWS::Scheduler::ScheduleGroup';

export async function provisionStack(
  template: TemplateInput,
  clients: ProvisionClients,
  options: ProvisionOptions,
): Promise<ProvisionedStack> {
  const tpl = parseTemplate(template);
  const stack = emptyStack(options);
  const handled = sortResources(tpl, stack);
  const ctx = resolveContext(tpl, stack);
  const walk: Walk = {
    stack,
    clients,
    options,
    stackId: ctx.stackId,
    lookup: options.mode === 'lookup',
    resolve: (value, path) => resolveValue(value, ctx, path),
    asString: (value, path) => resolveString(value, ctx, path),
    nameOf: (id, kind, opts) => physicalName(kind, options.stackName, id, stack.instanceId, opts),
  };
  for (const id of dependencyOrder(tpl, handled)) {
    const resource = tpl.Resources[id];
    if (!resource) continue;
    await provisionResource(walk, id, resource);
  }
  resolveOutputs(tpl, stack, walk.asString);
  return stack;
}

/** What provisioning one resource is given: the stack so far, the clients and the resolvers. */
interface Walk {
  stack: ProvisionedStack;
  clients: ProvisionClients;
  options: ProvisionOptions;
  stackId: string;
  lookup: boolean;
  resolve(value: unknown, path: string): unknown;
  asString(value: unknown, path: string): string;
  nameOf(id: string, kind: NameKind, opts?: { fifo?: boolean }): string;
}

function emptyStack(options: ProvisionOptions): ProvisionedStack {
  return {
    stackName: options.stackName,
    instanceId: options.instanceId ?? randomUUID(),
    region: options.region ?? LOCAL_REGION,
    accountId: options.accountId ?? LOCAL_ACCOUNT_ID,
    resources: {},
    functions: {},
    eventSources: {},
    eventRules: [],
    outputs: {},
    ignored: [],
    skipped: [],
  };
}

/** The ids of the resources the local runtime provisions; the others noted in `stack.ignored`. */
function sortResources(tpl: CfnTemplate, stack: ProvisionedStack): string[] {
  const handled: string[] = [];
  for (const [id, resource] of Object.entries(tpl.Resources)) {
    const type = resource.Type;
    if (type === FUNCTION && !handlerModuleOf(resource)) {
      stack.ignored.push({ logicalId: id, type, reason: 'function without crawler:handler metadata' });
    } else if (
      STORAGE_TYPES.has(type) ||
      type === FUNCTION ||
      type === MAPPING ||
      type === EVENT_RULE ||
      type === SCHEDULE_GROUP
    ) {
      if (resource.Condition)
        throw new Error(`${id}: resource Conditions are not supported by the local runtime`);
      handled.push(id);
    } else {
      stack.ignored.push({ logicalId: id, type, reason: 'not emulated locally' });
    }
  }
  return handled;
}

async function provisionResource(walk: Walk, id: string, resource: CfnResource): Promise<void> {
  const { stack, clients, lookup } = walk;
  const note = (text: string) => stack.skipped.push({ logicalId: id, note: text });
  const input: CreateInput = {
    logicalId: id,
    type: resource.Type,
    properties: resource.Properties ?? {},
    resolve: walk.resolve,
    physicalName: (kind, opts) => walk.nameOf(id, kind, opts),
    note,
    region: stack.region,
    stackId: walk.stackId,
  };
  switch (resource.Type) {
    case 'AWS::SQS::Queue':
      stack.resources[id] = await (lookup ? findQueue : createQueue)(clients.sqs, input);
      break;
    case 'AWS::S3::Bucket':
      stack.resources[id] = await (lookup ? findBucket : createBucket)(clients.s3, input);
      break;
    case 'AWS::DynamoDB::Table':
    case 'AWS::DynamoDB::GlobalTable':
      stack.resources[id] = await (lookup ? findTable : createTable)(clients.dynamodb, input);
      break;
    case SCHEDULE_GROUP:
      stack.resources[id] = scheduleGroup(walk, id, resource);
      break;
    case EVENT_RULE: {
      const rule = readEventRule(id, resource.Properties ?? {}, walk.resolve, stack, note);
      if (rule) stack.eventRules.push(rule);
      break;
    }
    case FUNCTION:
      addFunction(walk, id, resource);
      break;
    case MAPPING:
      addEventSource(walk, id, resource, note);
      break;
  }
}

function scheduleGroup(walk: Walk, id: string, resource: CfnResource): ProvisionedResource {
  const props = resource.Properties ?? {};
  const name =
    props.Name === undefined
      ? walk.nameOf(id, 'other')
      : walk.asString(props.Name, `Resources.${id}.Properties.Name`);
  return {
    type: SCHEDULE_GROUP,
    physicalId: name,
    arn: `arn:aws:scheduler:${walk.stack.region}:${walk.stack.accountId}:schedule-group/${name}`,
  };
}

function addFunction(walk: Walk, id: string, resource: CfnResource): void {
  const { stack } = walk;
  const props = resource.Properties ?? {};
  const functionName = props.FunctionName
    ? walk.asString(props.FunctionName, `Resources.${id}.Properties.FunctionName`)
    : walk.nameOf(id, 'function');
  const fn = readFunction({
    logicalId: id,
    resource,
    functionName,
    region: stack.region,
    accountId: stack.accountId,
    rootDir: walk.options.rootDir ?? REPO_ROOT,
    resolveString: walk.asString,
  });
  stack.functions[id] = fn;
  stack.resources[id] = { type: FUNCTION, physicalId: fn.functionName, arn: fn.functionArn };
}

function addEventSource(walk: Walk, id: string, resource: CfnResource, note: (text: string) => void): void {
  const { stack } = walk;
  const result = readEventSource({
    logicalId: id,
    resource,
    functions: stack.functions,
    resources: stack.resources,
    resolveString: walk.asString,
    note,
    uuid: mappingUuid(stack.stackName, id, stack.instanceId),
  });
  if (result.kind === 'ignored') {
    stack.ignored.push({ logicalId: id, type: MAPPING, reason: result.reason });
  } else {
    stack.eventSources[id] = result.eventSource;
    stack.resources[id] = { type: MAPPING, physicalId: result.eventSource.uuid };
  }
}

function resolveOutputs(
  tpl: CfnTemplate,
  stack: ProvisionedStack,
  asString: (value: unknown, path: string) => string,
): void {
  for (const [name, output] of Object.entries(tpl.Outputs ?? {})) {
    try {
      stack.outputs[name] = asString(output.Value, `Outputs.${name}.Value`);
    } catch (err) {
      // An output the local runtime cannot resolve (e.g. a role ARN) must not stop the crawl.
      if (!(err instanceof TemplateResolveError)) throw err;
      stack.skipped.push({ logicalId: name, note: `output not resolved: ${err.message}` });
    }
  }
}

/** The name a role of the template would have (it is not created locally): a principal's name. */
export function roleName(stack: ProvisionedStack, logicalId: string): string {
  return physicalName('other', stack.stackName, logicalId, stack.instanceId);
}

export function roleArn(stack: ProvisionedStack, logicalId: string): string {
  return `arn:aws:iam::${stack.accountId}:role/${roleName(stack, logicalId)}`;
}

// Like the physical names: the same instance gets the same mapping ids (UUID-shaped, version 5 bits).
function mappingUuid(stackName: string, logicalId: string, instanceId: string): string {
  const hex = createHash('sha256').update(`${stackName}\0${logicalId}\0${instanceId}\0mapping`).digest('hex');
  const variant = ((Number.parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function resolveContext(tpl: CfnTemplate, stack: ProvisionedStack): ResolveContext {
  const ignoredType = (id: string) => stack.ignored.find((r) => r.logicalId === id)?.type;
  const provisioned = (id: string, at: string): ProvisionedResource => {
    const resource = stack.resources[id];
    if (resource) return resource;
    const type = ignoredType(id) ?? tpl.Resources[id]?.Type;
    if (!type) throw new TemplateResolveError(`${at}: no resource or parameter named ${id}`);
    throw new TemplateResolveError(`${at}: ${id} (${type}) is not provisioned by the local runtime`);
  };
  return {
    region: stack.region,
    accountId: stack.accountId,
    stackName: stack.stackName,
    stackId: `arn:aws:cloudformation:${stack.region}:${stack.accountId}:stack/${stack.stackName}/${stack.instanceId}`,
    ref(id, at) {
      const parameter = tpl.Parameters?.[id];
      if (parameter) {
        if (parameter.Default === undefined)
          throw new TemplateResolveError(`${at}: parameter ${id} has no Default`);
        return String(parameter.Default);
      }
      // A Ref to an ignored resource gets the name CloudFormation would have generated; harmless.
      if (!stack.resources[id] && ignoredType(id)) {
        return physicalName('other', stack.stackName, id, stack.instanceId);
      }
      return provisioned(id, at).physicalId;
    },
    getAtt(id, attribute, at) {
      // A role is not emulated (no IAM here), but its ARN is named: a schedule passes it to Scheduler.
      if (ignoredType(id) === 'AWS::IAM::Role' && attribute === 'Arn') return roleArn(stack, id);
      const resource = provisioned(id, at);
      const value = attributeOf(resource, attribute);
      if (value === undefined) {
        throw new TemplateResolveError(
          `${at}: Fn::GetAtt ${id}.${attribute} (${resource.type}) is not supported locally`,
        );
      }
      return value;
    },
  };
}

function attributeOf(resource: ProvisionedResource, attribute: string): string | undefined {
  switch (`${resource.type}.${attribute}`) {
    case 'AWS::SQS::Queue.Arn':
    case 'AWS::S3::Bucket.Arn':
    case 'AWS::DynamoDB::Table.Arn':
    case 'AWS::DynamoDB::GlobalTable.Arn':
    case 'AWS::Lambda::Function.Arn':
    case 'AWS::Scheduler::ScheduleGroup.Arn':
      return resource.arn;
    case 'AWS::SQS::Queue.QueueUrl':
      return resource.url;
    case 'AWS::SQS::Queue.QueueName':
      return resource.arn?.split(':').at(-1);
    case 'AWS::S3::Bucket.DomainName':
      return `${resource.physicalId}.s3.amazonaws.com`;
    case 'AWS::Lambda::EventSourceMapping.EventSourceMappingId':
      return resource.physicalId;
    default:
      return undefined;
  }
}

/**
 * A rule's bus, pattern and SQS targets. A schedule rule (ScheduleExpression) or a target that is not
 * one of the stack's queues is noted and left out: the local bus delivers to queues only.
 */
function readEventRule(
  id: string,
  props: Record<string, unknown>,
  resolve: (value: unknown, path: string) => unknown,
  stack: ProvisionedStack,
  note: (text: string) => void,
): LocalEventRule | undefined {
  const path = `Resources.${id}.Properties`;
  if (props.EventPattern === undefined) {
    note('a rule without an EventPattern (a schedule) is not run locally');
    return undefined;
  }
  const bus =
    props.EventBusName === undefined
      ? 'default'
      : String(resolve(props.EventBusName, `${path}.EventBusName`));
  const queueUrls: string[] = [];
  for (const [index, target] of (Array.isArray(props.Targets) ? props.Targets : []).entries()) {
    const arn = resolve((target as { Arn?: unknown }).Arn, `${path}.Targets.${index}.Arn`);
    const queue = Object.values(stack.resources).find((r) => r.type === 'AWS::SQS::Queue' && r.arn === arn);
    if (queue?.url) queueUrls.push(queue.url);
    else note(`target ${String(arn)} is not a queue of the stack: not delivered locally`);
  }
  return {
    logicalId: id,
    busName: bus.includes('event-bus/')
      ? bus.slice(bus.lastIndexOf('event-bus/') + 'event-bus/'.length)
      : bus,
    pattern: resolve(props.EventPattern, `${path}.EventPattern`),
    enabled: props.State === undefined || resolve(props.State, `${path}.State`) === 'ENABLED',
    queueUrls,
  };
}
