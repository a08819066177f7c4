// One way for every read-only CLI command (`status`, `results`, `get`) to find "the AWS" a crawl ran
// on, and the stack's outputs there (queue URLs, bucket and table names):
//
//   stackName + describeStackOutputs  a deployed stack: outputs from CloudFormation, clients from the
//                                     default AWS config (or `endpoint`, e.g. LocalStack + cdklocal)
//   endpoint                          a running local AWS (`crawler local`, LocalStack provisioned by
//                                     `crawler crawl --endpoint`): names computed as provisioning makes
//                                     them (instance id from the queues' stack-id tag, else `local`),
//                                     looked up, nothing created
//   otherwise                         the embedded AWS on the state dir: started on the persisted state
//                                     (no pollers), or - if a live process (a running `crawler crawl`)
//                                     holds it - read through that process's emulators. A caller that
//                                     reads only the page store and the frontier table (`storageOnly`)
//                                     gets the emulators alone, with the names the state's marker
//                                     recorded: no template, no provisioning (docs/performance.md)
//
// The modules only one way needs (the local runtime, provisioning, the template) are imported by it.
import { existsSync } from 'node:fs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { STACK_NAME } from '../lambdas/shared/contracts.ts';
import {
  type AwsClients,
  type ClientSettings,
  clientSettings,
  createClients,
  createDefaultClients,
  destroyClients,
  type Endpoints,
  endpointsFromUrl,
} from './aws-clients.ts';
import type { TemplateInput } from './cfn-template.ts';
import { STACK_ID_TAG, stackNamePrefix } from './physical-names.ts';
import {
  LOCAL_INSTANCE_ID,
  NoLocalStateError,
  readStateMarker,
  type StateMarker,
  stateLayout,
} from './state-dir.ts';
import { acquireStateLock, liveStateLock, StateLockedError } from './state-lock.ts';

/** Outputs of a deployed CloudFormation stack by OutputKey (wire @aws-sdk/client-cloudformation here). */
export type DescribeStackOutputs = (stackName: string) => Promise<Record<string, string>>;

export interface LocateStackOptions {
  /** A running local AWS or LocalStack: one URL for all services. */
  endpoint?: string;
  /** The embedded AWS's state directory (see state-dir.ts `resolveStateDir`). */
  stateDir: string;
  /** A deployed stack's name (`--stack`); needs describeStackOutputs. */
  stackName?: string;
  describeStackOutputs?: DescribeStackOutputs;
  /** Template the local names derive from; synthesized from cdk/ when not given. */
  template?: TemplateInput;
  /** Stack name the local names derive from; `STACK_NAME` (endpoint) or the state's own (embedded). */
  localStackName?: string;
  /** Instance id the local names derive from; found at the endpoint (else `local`), or the state's own. */
  instanceId?: string;
  /** Client settings for local endpoints (region, dummy credentials). */
  clientSettings?: Partial<ClientSettings>;
  /**
   * The caller reads only the page store and the frontier table (STORAGE_OUTPUTS): an embedded state
   * is opened with the emulators alone, and `outputs` holds just those names.
   */
  storageOnly?: boolean;
}

export type LocatedMode = 'deployed' | 'endpoint' | 'embedded' | 'attached';

export interface LocatedStack {
  /** deployed, endpoint, embedded (emulators started here), attached (another process's emulators). */
  mode: LocatedMode;
  /** For messages: which AWS this is. */
  description: string;
  clients: AwsClients;
  outputs: Record<string, string>;
  /** Closes the clients, and stops the emulators if this call started them. Idempotent. */
  close(): Promise<void>;
}

export async function locateStack(options: LocateStackOptions): Promise<LocatedStack> {
  if (options.stackName !== undefined) {
    if (!options.describeStackOutputs) {
      throw new Error(
        `stack ${options.stackName}: reading a deployed stack's outputs needs CloudFormation ` +
          '(describeStackOutputs, from @aws-sdk/client-cloudformation), which is not wired in this build',
      );
    }
    return locateDeployed(options.stackName, options.describeStackOutputs, options);
  }
  if (options.endpoint !== undefined) {
    const endpoint = new URL(options.endpoint).origin;
    const stackName = options.localStackName ?? STACK_NAME;
    return lookupLocal(endpointsFromUrl(endpoint), {
      mode: 'endpoint',
      description: `local stack ${stackName} at ${endpoint}`,
      stackName,
      instanceId: options.instanceId,
      options,
      hint: `run \`crawler local\` or \`crawler crawl --endpoint ${endpoint}\` first`,
    });
  }
  return locateEmbedded(options);
}

async function locateDeployed(
  stackName: string,
  describe: DescribeStackOutputs,
  options: LocateStackOptions,
): Promise<LocatedStack> {
  const outputs = await describe(stackName);
  const clients = options.endpoint
    ? createClients(endpointsFromUrl(options.endpoint), clientSettings(options.clientSettings))
    : createDefaultClients();
  return {
    mode: 'deployed',
    description: `stack ${stackName}${options.endpoint ? ` at ${new URL(options.endpoint).origin}` : ''}`,
    clients,
    outputs,
    close: closeOnce(async () => destroyClients(clients)),
  };
}

async function locateEmbedded(options: LocateStackOptions): Promise<LocatedStack> {
  const { dir } = stateLayout(options.stateDir);
  const marker = existsSync(dir) ? readStateMarker(dir) : undefined;
  if (!marker) throw new NoLocalStateError(dir);
  const stackName = options.localStackName ?? marker.stackName;
  const instanceId = options.instanceId ?? marker.instanceId;

  const holder = liveStateLock(dir);
  if (holder) {
    // A running crawl (or `crawler local`) has the state open: read through its emulators.
    if (!holder.endpoints) throw new StateLockedError(dir, holder);
    return lookupLocal(holder.endpoints, {
      mode: 'attached',
      description: `local state in ${dir} (served by process ${holder.pid})`,
      stackName: holder.stackName ?? stackName,
      instanceId: holder.instanceId ?? instanceId,
      options,
      hint: `process ${holder.pid} holds ${dir}; try again when it has finished starting`,
    });
  }

  if (options.storageOnly && marker.storage && options.template === undefined)
    return openStoredState(dir, marker.storage, options);

  const { startLocalAws } = await import('./local-aws.ts');
  const local = await startLocalAws({
    template: options.template ?? (await stackTemplate()),
    stackName,
    instanceId,
    stateDir: dir,
    ...(options.clientSettings ? { clientSettings: options.clientSettings } : {}),
  });
  return {
    mode: 'embedded',
    description: `local state in ${dir}`,
    clients: local.clients,
    outputs: local.outputs,
    close: closeOnce(() => local.stop()),
  };
}

/**
 * The emulators alone on a state dir, taken with its lock as a crawl takes it (so no process writes
 * it meanwhile), with the storage names its marker recorded when it was provisioned.
 */
async function openStoredState(
  dir: string,
  storage: NonNullable<StateMarker['storage']>,
  options: LocateStackOptions,
): Promise<LocatedStack> {
  const { startEmulators } = await import('./emulators.ts');
  const layout = stateLayout(dir);
  const lock = await acquireStateLock(dir);
  let emulators: Awaited<ReturnType<typeof startEmulators>>;
  try {
    emulators = await startEmulators({
      s3Dir: layout.s3Dir,
      sqsDir: layout.sqsDir,
      dynamodbDir: layout.dynamodbDir,
    });
  } catch (err) {
    await lock.release();
    throw err;
  }
  const clients = createClients(emulators.endpoints, clientSettings(options.clientSettings));
  return {
    mode: 'embedded',
    description: `local state in ${dir}`,
    clients,
    outputs: { ...storage },
    close: closeOnce(async () => {
      destroyClients(clients);
      await emulators.stop();
      await lock.release();
    }),
  };
}

/** The stack's template, synthesized from cdk/ (or its cache): only the ways that provision need it. */
async function stackTemplate(): Promise<TemplateInput> {
  return (await import('./stack-template.ts')).stackTemplate();
}

interface LookupTarget {
  mode: LocatedMode;
  description: string;
  stackName: string;
  /** Undefined: the one tagged on the stack's queues there (`local` when none is). */
  instanceId: string | undefined;
  options: LocateStackOptions;
  hint: string;
}

// Read-only: computes the names provisioning made and checks they exist; creates nothing.
async function lookupLocal(endpoints: Endpoints, target: LookupTarget): Promise<LocatedStack> {
  const settings = clientSettings(target.options.clientSettings);
  const clients = createClients(endpoints, settings);
  const { NotProvisionedError, provisionStack } = await import('./provision.ts');
  let instanceId = target.instanceId;
  try {
    instanceId ??= (await taggedInstanceId(clients.sqs, target.stackName)) ?? LOCAL_INSTANCE_ID;
    const stack = await provisionStack(target.options.template ?? (await stackTemplate()), clients, {
      stackName: target.stackName,
      instanceId,
      region: settings.region,
      mode: 'lookup',
    });
    return {
      mode: target.mode,
      description: target.description,
      clients,
      outputs: stack.outputs,
      close: closeOnce(async () => destroyClients(clients)),
    };
  } catch (err) {
    destroyClients(clients);
    if (err instanceof NotProvisionedError) {
      throw new Error(
        `${target.description}: not provisioned (instance id ${instanceId}): ${err.message}; ${target.hint}`,
        { cause: err },
      );
    }
    throw err;
  }
}

// Names derive from a random instance id (state-dir.ts); provisioning tags each queue with the stack id
// (`arn:...:stack/<stackName>/<instanceId>`). None tagged (state from before): undefined.
async function taggedInstanceId(sqs: SQSClient, stackName: string): Promise<string | undefined> {
  const { ListQueuesCommand, ListQueueTagsCommand } = await import('@aws-sdk/client-sqs');
  const found = new Set<string>();
  const prefix = stackNamePrefix('queue', stackName);
  let NextToken: string | undefined;
  do {
    const page = await sqs.send(
      new ListQueuesCommand({ ...(prefix ? { QueueNamePrefix: prefix } : {}), MaxResults: 1000, NextToken }),
    );
    for (const QueueUrl of page.QueueUrls ?? []) {
      const { Tags } = await sqs.send(new ListQueueTagsCommand({ QueueUrl }));
      const stackId = /:stack\/([^/]+)\/([^/]+)$/.exec(Tags?.[STACK_ID_TAG] ?? '');
      if (stackId?.[1] === stackName && stackId[2]) found.add(stackId[2]);
    }
    NextToken = page.NextToken;
  } while (NextToken);
  if (found.size > 1) {
    throw new Error(`several stacks named ${stackName} there (instance ids ${[...found].join(', ')})`);
  }
  return [...found][0];
}

function closeOnce(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= close();
    return closing;
  };
}
