// Where the embedded AWS keeps its state between processes, and what lives in it.
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';

/** Default state directory, relative to the current working directory. */
export const DEFAULT_STATE_DIR = '.crawler';
/** Env var that overrides DEFAULT_STATE_DIR. */
export const STATE_DIR_ENV = 'CRAWLER_STATE_DIR';
/**
 * The instance id state dirs had before each got a random one (`stateInstanceId`), kept by those
 * dirs; and what an endpoint lookup assumes when no queue there names its instance.
 */
export const LOCAL_INSTANCE_ID = 'local';

/** Absolute state directory: an explicit value (e.g. `--state-dir`), else $CRAWLER_STATE_DIR, else `.crawler`. */
export function resolveStateDir(
  explicit?: string,
  env: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd(),
): string {
  const chosen = explicit || env[STATE_DIR_ENV] || DEFAULT_STATE_DIR;
  return resolve(cwd, chosen);
}

export interface StateLayout {
  dir: string;
  /** fauxqs S3 objects as plain files (`buckets/<bucket>/objects/<key>.data`). */
  s3Dir: string;
  /** dynalite's LevelDB. */
  dynamodbDir: string;
  /** fauxqs SQLite (queues and their messages, DLQs included). */
  sqsDir: string;
  /** `{ pid, ... }` of the process that has the state open. */
  lockFile: string;
  /** Written once the stack is provisioned: which stack and instance the names belong to. */
  markerFile: string;
  /** The random instance id drawn for this dir, kept from before its first provisioning. */
  instanceIdFile: string;
}

export function stateLayout(dir: string): StateLayout {
  const root = resolve(dir);
  return {
    dir: root,
    s3Dir: join(root, 's3'),
    dynamodbDir: join(root, 'dynamodb'),
    sqsDir: join(root, 'sqs'),
    lockFile: join(root, 'lock'),
    markerFile: join(root, 'state.json'),
    instanceIdFile: join(root, 'instance-id'),
  };
}

/**
 * The instance id the physical names of this state dir derive from: the marker's once provisioned,
 * else one drawn at random and kept in `instance-id` (so a first run cut short is resumed under the
 * same names). Random so that no web page can guess a queue or bucket name (see request-guard.ts).
 * Call with the state lock held.
 */
export async function stateInstanceId(dir: string): Promise<string> {
  const marker = readStateMarker(dir);
  if (marker) return marker.instanceId;
  const { instanceIdFile } = stateLayout(dir);
  const kept = await readFile(instanceIdFile, 'utf8').then(
    (text) => text.trim(),
    (err: unknown) => {
      if (err instanceof Error && Reflect.get(err, 'code') === 'ENOENT') return '';
      throw err;
    },
  );
  if (kept !== '') return kept;
  const drawn = randomUUID();
  await writeFile(instanceIdFile, `${drawn}\n`);
  return drawn;
}

export interface StateMarker {
  format: 1;
  stackName: string;
  instanceId: string;
  createdAt: string;
  /**
   * The stack's storage outputs as provisioned here (STORAGE_OUTPUTS: the page bucket's and the
   * frontier table's names, which do not depend on the emulators' port): a read command opens the
   * state with them, without the template or provisioning. Absent in a state from before them.
   */
  storage?: Record<string, string>;
}

/** The outputs a read of the stored pages and frontier needs (StateMarker.storage). */
export const STORAGE_OUTPUTS = [OUTPUTS.pageBucketName, OUTPUTS.frontierTableName] as const;

/** The marker of a provisioned state directory; undefined when there is none (no state yet). */
export function readStateMarker(dir: string): StateMarker | undefined {
  const { markerFile } = stateLayout(dir);
  if (!existsSync(markerFile)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(markerFile, 'utf8'));
  } catch (err) {
    throw new Error(
      `${markerFile} is not valid JSON (${(err as Error).message}); delete ${dir} to start over`,
    );
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    Reflect.get(parsed, 'format') !== 1 ||
    typeof Reflect.get(parsed, 'stackName') !== 'string' ||
    typeof Reflect.get(parsed, 'instanceId') !== 'string'
  ) {
    throw new Error(`${markerFile} is not a crawler state marker; delete ${dir} to start over`);
  }
  const marker = parsed as StateMarker;
  // Anything else than names for every storage output: as if absent (the state is provisioned again).
  const storage: unknown = marker.storage;
  const complete =
    typeof storage === 'object' &&
    storage !== null &&
    STORAGE_OUTPUTS.every((name) => typeof Reflect.get(storage, name) === 'string');
  if (!complete) delete marker.storage;
  return marker;
}

export class NoLocalStateError extends Error {
  readonly stateDir: string;
  constructor(stateDir: string) {
    super(`no local crawl state in ${stateDir}; run \`crawler crawl\` first or pass --endpoint/--stack`);
    this.name = 'NoLocalStateError';
    this.stateDir = stateDir;
  }
}
