// Where the local AWS runs, opened before anything is provisioned in it: the embedded emulators,
// kept in a state directory under its lock or in memory, or an endpoint already running. Apart from
// local-aws.ts because a state dir has its own care (made one level at a time, kept out of git, a
// lock taken over from a killed holder, its marker written once the stack exists).
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { type Endpoints, endpointsFromUrl } from './aws-clients.ts';
import { type Emulators, startEmulators } from './emulators.ts';
import type { ProvisionedStack } from './stack-model.ts';
import {
  readStateMarker,
  STORAGE_OUTPUTS,
  type StateLayout,
  type StateMarker,
  stateInstanceId,
  stateLayout,
} from './state-dir.ts';
import { acquireStateLock, type StateLock } from './state-lock.ts';

/** What of `LocalAwsOptions` says where the AWS runs (local-aws.ts documents each). */
export interface BackendOptions {
  endpoint?: string | Endpoints;
  s3Dir?: string;
  stateDir?: string;
  port?: number;
  instanceId?: string;
  inProcessAws?: boolean;
  onStaleLock?: (message: string) => void;
}

export interface Backend {
  endpoints: Endpoints;
  /** Absent with an endpoint. */
  emulators?: Emulators;
  /** With a state dir: its layout and the lock this process holds on it. */
  layout?: StateLayout;
  lock?: StateLock;
  /** When this process took the state dir over from a killed one: older claims have no sender left. */
  takenOverAt?: number;
  /** With a state dir: its own random id (state-dir.ts), read once the lock is held; else as given. */
  instanceId?: string;
}

/** Opens the AWS the options name; with a state dir, its lock is held until `lock.release()`. */
export async function openBackend(options: BackendOptions): Promise<Backend> {
  const layout = options.stateDir ? stateLayout(options.stateDir) : undefined;
  if (layout && options.endpoint !== undefined) {
    throw new Error('stateDir applies to the embedded emulators only, not with an endpoint');
  }
  if (layout && options.s3Dir) throw new Error('give stateDir or s3Dir, not both');
  if (options.inProcessAws && options.endpoint !== undefined) {
    throw new Error('inProcessAws applies to the embedded emulators only, not with an endpoint');
  }
  if (layout) return openStateDir(layout, options);
  if (options.endpoint === undefined) {
    const emulators = await startEmulators({
      ...(options.s3Dir ? { s3Dir: options.s3Dir } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
    });
    return { endpoints: emulators.endpoints, emulators, instanceId: options.instanceId };
  }
  return {
    endpoints: typeof options.endpoint === 'string' ? endpointsFromUrl(options.endpoint) : options.endpoint,
    instanceId: options.instanceId,
  };
}

/** The embedded emulators kept in the state dir, under its lock (released again if they fail to start). */
async function openStateDir(layout: StateLayout, options: BackendOptions): Promise<Backend> {
  await makeStateDir(layout.dir);
  let stale = false;
  const lock = await acquireStateLock(layout.dir, {
    onStaleLock: (line) => {
      stale = true;
      options.onStaleLock?.(line);
    },
  });
  // Its holder was killed (a clean stop releases the lock): it may have left claims with no sender.
  const takenOverAt = stale ? Date.now() : undefined;
  try {
    await ignoreInGit(layout.dir);
    const instanceId = options.instanceId ?? (await stateInstanceId(layout.dir));
    const emulators = await startEmulators({
      s3Dir: layout.s3Dir,
      sqsDir: layout.sqsDir,
      dynamodbDir: layout.dynamodbDir,
      ...(options.port !== undefined ? { port: options.port } : {}),
    });
    return { endpoints: emulators.endpoints, emulators, layout, lock, takenOverAt, instanceId };
  } catch (err) {
    await lock.release();
    throw err;
  }
}

/** With a state dir: the stack provisioned in it recorded, and published to other processes. */
export async function recordStack(backend: Backend, stack: ProvisionedStack): Promise<void> {
  const { layout, lock } = backend;
  if (!layout || !lock) return;
  await writeStateMarker(layout.dir, stack);
  // Other processes (read-only CLI commands) can now read through our emulators.
  await lock.publish({
    endpoints: backend.endpoints,
    stackName: stack.stackName,
    instanceId: stack.instanceId,
  });
}

/** A state directory that cannot be made (a path under /proc, a file in the way, no permission). */
export class StateDirError extends Error {
  constructor(dir: string, why: string) {
    super(
      `${dir} cannot be made the state directory (${why}); give a directory that can be created and written`,
    );
    this.name = 'StateDirError';
  }
}

/**
 * `mkdir -p` one level at a time: Node's recursive mkdir never settles on a path it cannot create
 * under /proc (it retries the parent, which exists, forever), so it would hang the start.
 */
async function makeStateDir(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    const info = await stat(at).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw new StateDirError(dir, `${at}: ${error.code ?? error.message}`);
    });
    if (info) {
      if (!info.isDirectory()) throw new StateDirError(dir, `${at} is not a directory`);
      break;
    }
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const at of missing) {
    await mkdir(at).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw new StateDirError(dir, `${at}: ${error.code ?? error.message}`);
    });
  }
}

async function writeStateMarker(dir: string, stack: ProvisionedStack): Promise<void> {
  const previous = readStateMarker(dir);
  const storage = Object.fromEntries(STORAGE_OUTPUTS.map((name) => [name, stack.outputs[name] ?? '']));
  if (
    previous?.stackName === stack.stackName &&
    previous.instanceId === stack.instanceId &&
    JSON.stringify(previous.storage) === JSON.stringify(storage)
  )
    return;
  const marker: StateMarker = {
    format: 1,
    stackName: stack.stackName,
    instanceId: stack.instanceId,
    createdAt: previous?.createdAt ?? new Date().toISOString(),
    storage,
  };
  const file = stateLayout(dir).markerFile;
  await writeFile(`${file}.tmp`, `${JSON.stringify(marker, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
}

// A state dir inside a repository (the default `.crawler` in cwd) should not show up in git status.
async function ignoreInGit(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, '.gitignore'), '*\n', { flag: 'wx' }).catch((err: unknown) => {
    if (!(err instanceof Error && Reflect.get(err, 'code') === 'EEXIST')) throw err;
  });
}
