// fauxqs (SQS + S3 on one port), bound to 127.0.0.1.
//
// We do not use startFauxqs(): it always listens on 0.0.0.0, and its queue URLs use the host
// `sqs.<region>.localhost`, which getaddrinfo does not resolve here. An SDK client configured only
// through AWS_ENDPOINT_URL_SQS sends requests to the QueueUrl's host (useQueueUrlAsEndpoint), so
// those URLs break handlers. We build the stores ourselves (host unset -> queue URLs use the request
// host, e.g. http://127.0.0.1:PORT/000000000000/name) and listen on loopback.
import { buildApp } from 'fauxqs';

export interface RunningServer {
  url: string;
  stop(): Promise<void>;
}

type Stores = NonNullable<NonNullable<Parameters<typeof buildApp>[0]>['stores']>;
type Constructor = new (...args: unknown[]) => object;

interface FileS3PersistenceLike {
  loadS3(store: object): void;
  close(): void;
}

export async function startFauxqsServer(options: { s3Dir?: string } = {}): Promise<RunningServer> {
  const { stores, persistence } = await createStores(options.s3Dir);
  const app = buildApp({ logger: false, stores });
  if (persistence) app.addHook('preClose', () => persistence.close());
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: new URL(address).origin,
    stop: () => app.close(),
  };
}

// The store classes are not in fauxqs' export map; we load them by file URL next to the resolved
// entry point, which yields the very module instances buildApp uses.
async function createStores(
  s3Dir?: string,
): Promise<{ stores: Stores; persistence?: FileS3PersistenceLike }> {
  const entry = import.meta.resolve('fauxqs');
  const SqsStore = await loadClass(entry, './sqs/sqsStore.js', 'SqsStore');
  const SnsStore = await loadClass(entry, './sns/snsStore.js', 'SnsStore');
  const S3Store = await loadClass(entry, './s3/s3Store.js', 'S3Store');
  const sqsStore = new SqsStore();
  if (Reflect.get(sqsStore, 'host') === undefined) throw internalsMoved('SqsStore.host');
  Object.assign(sqsStore, { host: '' });
  const s3Store = new S3Store();
  const stores = { sqsStore, snsStore: new SnsStore(), s3Store } as unknown as Stores;
  if (!s3Dir) return { stores };
  const FileS3Persistence = await loadClass(entry, './s3/fileS3Persistence.js', 'FileS3Persistence');
  const persistence = new FileS3Persistence(s3Dir);
  if (!isPersistence(persistence)) throw internalsMoved('FileS3Persistence');
  // Same order as startFauxqs: load existing files first, then write through.
  persistence.loadS3(s3Store);
  Object.assign(s3Store, { persistence });
  return { stores, persistence };
}

async function loadClass(entry: string, relative: string, name: string): Promise<Constructor> {
  const mod: unknown = await import(new URL(relative, entry).href);
  const value = typeof mod === 'object' && mod !== null ? Reflect.get(mod, name) : undefined;
  if (typeof value !== 'function') throw internalsMoved(`${relative} ${name}`);
  return value as Constructor;
}

function isPersistence(value: object): value is FileS3PersistenceLike {
  return (
    typeof Reflect.get(value, 'loadS3') === 'function' && typeof Reflect.get(value, 'close') === 'function'
  );
}

function internalsMoved(what: string): Error {
  return new Error(`fauxqs internals changed (${what}); local/fauxqs-server.ts needs updating`);
}
