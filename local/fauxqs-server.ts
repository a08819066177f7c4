// fauxqs (SQS + S3 on one port), bound to 127.0.0.1; optionally persistent (S3 as files, SQS in SQLite).
//
// We do not use startFauxqs(): it always listens on 0.0.0.0, and its queue URLs use the host
// `sqs.<region>.localhost`, which getaddrinfo does not resolve here. An SDK client configured only
// through AWS_ENDPOINT_URL_SQS sends requests to the QueueUrl's host (useQueueUrlAsEndpoint), so
// those URLs break handlers. We build the stores ourselves (host unset -> queue URLs use the request
// host, e.g. http://127.0.0.1:PORT/000000000000/name) and listen on loopback.
import type { Server } from 'node:http';
import { buildApp } from 'fauxqs';
import { isFileS3Persistence, makeS3WritesAtomic } from './atomic-s3-files.ts';
import { guardServer } from './request-guard.ts';
import {
  installStrictLimits,
  repairSqsPersistence,
  type SqsPersistenceLike as StrictSqsPersistence,
  type StrictStores,
} from './strict-fauxqs.ts';

export interface RunningServer {
  url: string;
  /** The listening server: in-process-http.ts hands requests to its listeners without a socket. */
  server: Server;
  stop(): Promise<void>;
}

type Stores = NonNullable<NonNullable<Parameters<typeof buildApp>[0]>['stores']>;
type Constructor = new (...args: unknown[]) => object;

interface FileS3PersistenceLike {
  loadS3(store: object): void;
  close(): void;
}

interface SqsPersistenceLike extends StrictSqsPersistence {
  db: StrictSqsPersistence['db'] & { exec(sql: string): void };
  loadSqsAndSns(sqsStore: object, snsStore: object): void;
  close(): void;
}

export interface FauxqsOptions {
  /** S3 objects as plain files under this directory (fauxqs FileS3Persistence); in-memory otherwise. */
  s3Dir?: string;
  /** Queues and their messages in SQLite under this directory (fauxqs PersistenceManager); in-memory otherwise. */
  sqsDir?: string;
}

export interface FauxqsServer extends RunningServer {
  /**
   * Points every queue's URL at `origin` (the endpoint clients use). Queue URLs are made from the
   * request host when a queue is created, so queues loaded from disk carry the port of an earlier
   * run; SDK clients send to the QueueUrl's host, so those must be rewritten before use.
   */
  rehostQueues(origin: string): void;
}

export async function startFauxqsServer(options: FauxqsOptions = {}): Promise<FauxqsServer> {
  const { stores, closers, sqsStore } = await createStores(options);
  const app = buildApp({ logger: false, stores });
  // AWS's limits where fauxqs is lenient (strict-fauxqs.ts): always on, so local runs fail where AWS would.
  installStrictLimits(app, strictStores(stores));
  app.addHook('preClose', () => {
    for (const close of closers) close();
  });
  // A web page can port-scan loopback too. Any port in Host: the router and proxies in front keep theirs.
  guardServer(app.server, { port: 'any' });
  let address: string;
  try {
    address = await app.listen({ port: 0, host: '127.0.0.1' });
  } catch (err) {
    for (const close of closers) close();
    throw err;
  }
  const url = new URL(address).origin;
  const server: FauxqsServer = {
    url,
    server: app.server,
    rehostQueues: (origin) => rehostQueues(sqsStore, origin),
    stop: () => app.close(),
  };
  server.rehostQueues(url);
  return server;
}

interface QueueLike {
  url: string;
}

interface SqsStoreLike {
  queues: Map<string, QueueLike>;
}

function rehostQueues(store: SqsStoreLike, origin: string): void {
  for (const [url, queue] of [...store.queues]) {
    const rehosted = new URL(new URL(url).pathname, origin).href;
    if (rehosted === url) continue;
    // Only the in-memory URL changes: re-persisting the queue row would cascade-delete its messages.
    store.queues.delete(url);
    queue.url = rehosted;
    store.queues.set(rehosted, queue);
  }
}

// The store classes are not in fauxqs' export map; we load them by file URL next to the resolved
// entry point, which yields the very module instances buildApp uses.
async function createStores(
  options: FauxqsOptions,
): Promise<{ stores: Stores; closers: Array<() => void>; sqsStore: SqsStoreLike }> {
  const entry = import.meta.resolve('fauxqs');
  const SqsStore = await loadClass(entry, './sqs/sqsStore.js', 'SqsStore');
  const SnsStore = await loadClass(entry, './sns/snsStore.js', 'SnsStore');
  const S3Store = await loadClass(entry, './s3/s3Store.js', 'S3Store');
  const sqsStore = new SqsStore();
  if (Reflect.get(sqsStore, 'host') === undefined) throw internalsMoved('SqsStore.host');
  if (!(Reflect.get(sqsStore, 'queues') instanceof Map)) throw internalsMoved('SqsStore.queues');
  Object.assign(sqsStore, { host: '' });
  const snsStore = new SnsStore();
  const s3Store = new S3Store();
  const stores = { sqsStore, snsStore, s3Store } as unknown as Stores;
  const closers: Array<() => void> = [];
  try {
    if (options.sqsDir) {
      const PersistenceManager = await loadClass(entry, './persistence.js', 'PersistenceManager');
      const persistence = new PersistenceManager(options.sqsDir);
      if (!isSqsPersistence(persistence)) throw internalsMoved('PersistenceManager');
      closers.push(() => persistence.close());
      repairSqsPersistence(persistence);
      // Every message operation writes through; WAL without an fsync per commit keeps that cheap
      // (a crash of the machine may lose the last moments, a crash of the process loses nothing).
      persistence.db.exec('PRAGMA synchronous = NORMAL');
      // Whoever opens the SQLite holds the state dir's lock, so a message still in flight here was
      // received by a process that is gone (Ctrl-C, kill -9): it is visible again at once, rather
      // than after its visibility timeout (minutes), so a resumed crawl goes on without waiting.
      persistence.db.exec(
        'UPDATE sqs_messages SET receipt_handle = NULL, visibility_deadline = NULL WHERE receipt_handle IS NOT NULL',
      );
      // Same order as startFauxqs: load first (with no persistence attached), then write through.
      persistence.loadSqsAndSns(sqsStore, snsStore);
      Object.assign(sqsStore, { persistence });
      Object.assign(snsStore, { persistence });
      for (const queue of (sqsStore as unknown as SqsStoreLike).queues.values()) {
        Object.assign(queue, { persistence });
      }
    }
    if (options.s3Dir) {
      const FileS3Persistence = await loadClass(entry, './s3/fileS3Persistence.js', 'FileS3Persistence');
      const persistence = new FileS3Persistence(options.s3Dir);
      if (!isS3Persistence(persistence) || !isFileS3Persistence(persistence)) {
        throw internalsMoved('FileS3Persistence');
      }
      closers.push(() => persistence.close());
      makeS3WritesAtomic(persistence);
      persistence.loadS3(s3Store);
      Object.assign(s3Store, { persistence });
    }
  } catch (err) {
    for (const close of closers) close();
    throw err;
  }
  return { stores, closers, sqsStore: sqsStore as unknown as SqsStoreLike };
}

async function loadClass(entry: string, relative: string, name: string): Promise<Constructor> {
  const mod: unknown = await import(new URL(relative, entry).href);
  const value = typeof mod === 'object' && mod !== null ? Reflect.get(mod, name) : undefined;
  if (typeof value !== 'function') throw internalsMoved(`${relative} ${name}`);
  return value as Constructor;
}

function isS3Persistence(value: object): value is FileS3PersistenceLike {
  return (
    typeof Reflect.get(value, 'loadS3') === 'function' && typeof Reflect.get(value, 'close') === 'function'
  );
}

function isSqsPersistence(value: object): value is SqsPersistenceLike {
  const db: unknown = Reflect.get(value, 'db');
  return (
    typeof Reflect.get(value, 'loadSqsAndSns') === 'function' &&
    typeof Reflect.get(value, 'close') === 'function' &&
    typeof Reflect.get(value, 'updateMessageReady') === 'function' &&
    typeof db === 'object' &&
    db !== null &&
    typeof Reflect.get(db, 'exec') === 'function' &&
    typeof Reflect.get(db, 'prepare') === 'function'
  );
}

function strictStores(stores: Stores): StrictStores {
  const sqs: unknown = Reflect.get(stores, 'sqsStore');
  const s3: unknown = Reflect.get(stores, 's3Store');
  if (typeof sqs !== 'object' || sqs === null || typeof Reflect.get(sqs, 'getQueue') !== 'function')
    throw internalsMoved('SqsStore.getQueue');
  if (typeof s3 !== 'object' || s3 === null || !(Reflect.get(s3, 'buckets') instanceof Map))
    throw internalsMoved('S3Store.buckets');
  return { sqs, s3 } as StrictStores;
}

function internalsMoved(what: string): Error {
  return new Error(`fauxqs internals changed (${what}); local/fauxqs-server.ts needs updating`);
}
