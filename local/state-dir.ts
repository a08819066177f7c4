// Where the embedded AWS keeps its state between processes, and what lives in it.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Default state directory, relative to the current working directory. */
export const DEFAULT_STATE_DIR = '.crawler';
/** Env var that overrides DEFAULT_STATE_DIR. */
export const STATE_DIR_ENV = 'CRAWLER_STATE_DIR';
/**
 * Instance id of the persistent local stack: physical names derive from it, so every process that
 * opens the same state (or talks to `crawler local`) computes the same queue, bucket and table names.
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
  };
}

export interface StateMarker {
  format: 1;
  stackName: string;
  instanceId: string;
  createdAt: string;
}

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
  return parsed as StateMarker;
}

export class NoLocalStateError extends Error {
  readonly stateDir: string;
  constructor(stateDir: string) {
    super(`no local crawl state in ${stateDir}; run \`crawler crawl\` first or pass --endpoint/--stack`);
    this.name = 'NoLocalStateError';
    this.stateDir = stateDir;
  }
}
