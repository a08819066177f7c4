// dynalite (DynamoDB) on a free 127.0.0.1 port: in-memory, or LevelDB under `path`.
import { mkdir } from 'node:fs/promises';
import dynalite from 'dynalite';
import { cacheDynaliteExpressions } from './dynalite-expression-cache.ts';
import type { RunningServer } from './fauxqs-server.ts';
import { listenOnLoopback } from './loopback-listen.ts';
import { guardServer } from './request-guard.ts';
import {
  patchDynaliteItemSize,
  type ThrottleOptions,
  throttleFromEnv,
  throttleServer,
} from './strict-dynamodb.ts';

export interface DynaliteOptions {
  /** LevelDB under this directory; in-memory otherwise. */
  path?: string;
  /** Throttle a hot partition (strict-dynamodb.ts); default: CRAWLER_LOCAL_DYNAMODB_THROTTLE, else none. */
  throttle?: ThrottleOptions;
}

export async function startDynaliteServer(options: DynaliteOptions = {}): Promise<RunningServer> {
  if (options.path) await mkdir(options.path, { recursive: true });
  // Item sizes as DynamoDB counts them (UTF-8 bytes): always on, so local runs fail where AWS would.
  patchDynaliteItemSize();
  // Parsing expressions was most of dynalite's CPU (dynalite-expression-cache.ts).
  cacheDynaliteExpressions();
  const throttle = options.throttle ?? throttleFromEnv(process.env);
  // 0 ms table state transitions: CreateTable is ACTIVE at once, as provisioning expects.
  const server = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(options.path ? { path: options.path } : {}),
  });
  if (throttle) throttleServer(server, throttle);
  // A web page can port-scan loopback too. Any port in Host: the router and proxies in front keep theirs.
  guardServer(server, { port: 'any' });
  return listenOnLoopback(server);
}
