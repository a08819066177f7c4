// One process at a time per state directory: `<stateDir>/lock` holds the owner's pid (JSON). A lock
// whose process is gone (crash, kill -9, Ctrl-C before cleanup) is stale and taken over.
//
// The lock file only ever appears complete: it is written under a temporary name and hard-linked
// into place (link fails with EEXIST atomically), and updated by rename. A stale lock is moved aside
// under a unique name and checked to be the one judged stale, so two processes taking over the same
// stale lock cannot both win.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { Endpoints } from './aws-clients.ts';
import { stateLayout } from './state-dir.ts';

export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
  /** Unique per acquisition: tells our lock from a later one of the same pid. */
  token: string;
  /** Published once the holder's emulators listen: other processes can read through them. */
  endpoints?: Endpoints;
  stackName?: string;
  instanceId?: string;
}

export interface StateLock {
  file: string;
  holder(): LockHolder;
  /** Adds details (endpoints, stack) to the lock file for other processes to find. */
  publish(details: Pick<LockHolder, 'endpoints' | 'stackName' | 'instanceId'>): Promise<void>;
  /** Removes the lock file if it is still ours; idempotent. */
  release(): Promise<void>;
}

export class StateLockedError extends Error {
  readonly stateDir: string;
  readonly holder: LockHolder;
  constructor(stateDir: string, holder: LockHolder) {
    const who =
      holder.pid === process.pid && holder.host === hostname()
        ? `this process (pid ${holder.pid})`
        : `process ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}`;
    super(
      `local crawl state in ${stateDir} is in use by ${who} since ${holder.startedAt}; ` +
        `wait for it to finish, stop it, or use another state dir (--state-dir / CRAWLER_STATE_DIR)`,
    );
    this.name = 'StateLockedError';
    this.stateDir = stateDir;
    this.holder = holder;
  }
}

const MAX_ATTEMPTS = 5;

export interface AcquireOptions {
  /** Told, in one line, when a stale lock (its process gone) is taken over. */
  onStaleLock?: (message: string) => void;
}

export async function acquireStateLock(dir: string, options: AcquireOptions = {}): Promise<StateLock> {
  const { dir: stateDir, lockFile } = stateLayout(dir);
  await mkdir(stateDir, { recursive: true });
  let mine: LockHolder = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    token: randomUUID(),
  };
  const scratch = (what: string) => `${lockFile}.${what}.${process.pid}.${mine.token}`;

  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const tmp = scratch('new');
    await writeFile(tmp, serialize(mine));
    try {
      await link(tmp, lockFile);
      await unlink(tmp);
      return lockHandle();
    } catch (err) {
      await unlink(tmp).catch(() => {});
      if (errorCode(err) !== 'EEXIST') throw err;
    }
    const existing = await readFile(lockFile, 'utf8').catch(ignoreMissing);
    if (existing === undefined) continue; // released meanwhile: try again
    const holder = parseLock(existing);
    if (holder && isHolderAlive(holder)) throw new StateLockedError(stateDir, holder);
    options.onStaleLock?.(
      holder
        ? `local crawl state in ${stateDir} was locked by process ${holder.pid} (since ${holder.startedAt}), which is gone: taking the lock over`
        : `local crawl state in ${stateDir} had an unreadable lock file: taking the lock over`,
    );
    // Stale: move it aside, then make sure what we moved is what we judged stale.
    const aside = scratch('stale');
    try {
      await rename(lockFile, aside);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') continue;
      throw err;
    }
    const moved = await readFile(aside, 'utf8').catch(ignoreMissing);
    if (moved !== undefined && moved !== existing) {
      // Another process took the stale lock over between our read and rename: give it back.
      await link(aside, lockFile).catch(() => {});
    }
    await unlink(aside).catch(() => {});
  }
  throw new Error(`could not take the lock ${lockFile} after ${MAX_ATTEMPTS} attempts`);

  function lockHandle(): StateLock {
    let released = false;
    return {
      file: lockFile,
      holder: () => mine,
      async publish(details) {
        if (released) throw new Error(`lock ${lockFile} already released`);
        const next: LockHolder = { ...mine, ...details };
        const tmp = scratch('update');
        await writeFile(tmp, serialize(next));
        await rename(tmp, lockFile);
        mine = next;
      },
      async release() {
        if (released) return;
        released = true;
        const current = parseLock((await readFile(lockFile, 'utf8').catch(ignoreMissing)) ?? '');
        if (current?.token === mine.token) await unlink(lockFile).catch(ignoreMissing);
      },
    };
  }
}

/** The current holder of a state directory's lock, whether alive or not; undefined if unlocked. */
export function readStateLock(dir: string): LockHolder | undefined {
  const { lockFile } = stateLayout(dir);
  try {
    return parseLock(readFileSync(lockFile, 'utf8'));
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** A live holder of the state directory's lock, or undefined (unlocked or stale). */
export function liveStateLock(dir: string): LockHolder | undefined {
  const holder = readStateLock(dir);
  return holder && isHolderAlive(holder) ? holder : undefined;
}

/** Whether a lock holder still runs. On another host we cannot tell, so it counts as alive. */
export function isHolderAlive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true;
  return isProcessAlive(holder.pid);
}

export function isProcessAlive(pid: number): boolean {
  // pid 0 / negative would signal process groups: never a valid lock owner.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === 'EPERM'; // exists, owned by someone else
  }
}

function serialize(holder: LockHolder): string {
  return `${JSON.stringify(holder)}\n`;
}

/** JSON lock (ours), or a bare pid (a hand-made or foreign lock); undefined when unreadable. */
function parseLock(text: string): LockHolder | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) {
    return { pid: Number(trimmed), host: hostname(), startedAt: 'an unknown time', token: '' };
  }
  try {
    const value: unknown = JSON.parse(trimmed);
    if (typeof value !== 'object' || value === null) return undefined;
    const pid = Reflect.get(value, 'pid');
    if (typeof pid !== 'number') return undefined;
    const field = (name: string) => {
      const v = Reflect.get(value, name);
      return typeof v === 'string' ? v : undefined;
    };
    const holder: LockHolder = {
      pid,
      host: field('host') ?? hostname(),
      startedAt: field('startedAt') ?? 'an unknown time',
      token: field('token') ?? '',
    };
    const endpoints = Reflect.get(value, 'endpoints');
    if (isEndpoints(endpoints)) holder.endpoints = endpoints;
    const stackName = field('stackName');
    if (stackName) holder.stackName = stackName;
    const instanceId = field('instanceId');
    if (instanceId) holder.instanceId = instanceId;
    return holder;
  } catch {
    return undefined;
  }
}

function isEndpoints(value: unknown): value is Endpoints {
  return (
    typeof value === 'object' &&
    value !== null &&
    ['sqs', 's3', 'dynamodb'].every((key) => typeof Reflect.get(value, key) === 'string')
  );
}

function errorCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? Reflect.get(err, 'code') : undefined;
  return typeof code === 'string' ? code : undefined;
}

function ignoreMissing(err: unknown): undefined {
  if (errorCode(err) === 'ENOENT') return undefined;
  throw err;
}
