// The page store bucket against the embedded S3 emulator (fauxqs), over the S3 wire protocol:
// `putIfAbsent` (the crawl summary is written once) and `exists`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { clientSettings, s3Config } from '../../local/aws-clients.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';

const BUCKET = 'pages';
let emulators: Emulators;
let s3: S3Client;
const clients: S3Client[] = [];
let keySeq = 0;
const newKey = () => `crawls/c${++keySeq}/summary.json`;
const bytes = (text: string) => new TextEncoder().encode(text);

/** A client of the emulator; `maxAttempts` 1 is the one the aggregate function passes for `putIfAbsent`. */
function newClient(maxAttempts = 3): S3Client {
  const client = new S3Client(s3Config(emulators.endpoints, clientSettings({ maxAttempts })));
  clients.push(client);
  return client;
}
const singleAttemptClient = () => newClient(1);

/** The requests a client sends: method and headers (names lower-cased), in order. */
function recordRequests(client: S3Client): Array<{ method: string; headers: Record<string, string> }> {
  const sent: Array<{ method: string; headers: Record<string, string> }> = [];
  client.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { method?: string; headers?: Record<string, string> };
      const headers = Object.fromEntries(
        Object.entries(request.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
      );
      sent.push({ method: request.method ?? '', headers });
      return next(args);
    },
    { step: 'finalizeRequest', name: 'recordRequests' },
  );
  return sent;
}

/**
 * Makes the client's next `times` calls fail with `error` without sending anything (a stand-in for
 * the server's reply); returns how many calls it failed so far.
 */
function failCalls(client: S3Client, times: number, error: () => Error): { failed: number } {
  const count = { failed: 0 };
  client.middlewareStack.add(
    (next) => async (args) => {
      if (count.failed < times) {
        count.failed++;
        throw error();
      }
      return next(args);
    },
    { step: 'build', name: 'failCalls' },
  );
  return count;
}

function httpError(name: string, status: number): Error {
  return Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });
}

async function read(key: string): Promise<{ text: string; contentType: string | undefined }> {
  const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return { text: (await out.Body?.transformToString()) ?? '', contentType: out.ContentType };
}

before(async () => {
  emulators = await startEmulators();
  s3 = new S3Client(s3Config(emulators.endpoints));
  clients.push(s3);
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
});

after(async () => {
  for (const client of clients) client.destroy();
  await emulators?.stop();
});

describe('S3Blobs.putIfAbsent', () => {
  it('writes once: the second call returns false and does not overwrite', async () => {
    const blobs = new S3Blobs(s3, BUCKET, { singleAttempt: singleAttemptClient() });
    const key = newKey();
    assert.equal(await blobs.putIfAbsent(key, bytes('{"done":1}'), 'application/json'), true);
    assert.equal(await blobs.putIfAbsent(key, bytes('{"done":2}'), 'text/plain'), false);
    assert.deepEqual(await read(key), { text: '{"done":1}', contentType: 'application/json' });
  });

  it('does not overwrite an object written by a plain put either', async () => {
    const blobs = new S3Blobs(s3, BUCKET);
    const key = newKey();
    await blobs.put(key, bytes('first'), 'text/plain');
    assert.equal(await blobs.putIfAbsent(key, bytes('second'), 'text/plain'), false);
    assert.equal((await read(key)).text, 'first');
  });

  it('sends the PUT with If-None-Match: * on the single-attempt client, after a HEAD', async () => {
    const single = singleAttemptClient();
    const puts = recordRequests(single);
    const main = newClient();
    const heads = recordRequests(main);
    const blobs = new S3Blobs(main, BUCKET, { singleAttempt: single });
    const key = newKey();
    assert.equal(await blobs.putIfAbsent(key, bytes('x'), 'application/json'), true);
    assert.deepEqual(
      puts.map((r) => [r.method, r.headers['if-none-match']]),
      [['PUT', '*']],
      'real S3 refuses it (412) if a concurrent writer got there first',
    );
    assert.deepEqual(
      heads.map((r) => r.method),
      ['HEAD'],
    );
    // Nothing at all is sent on the single-attempt client once the object exists.
    assert.equal(await blobs.putIfAbsent(key, bytes('y'), 'application/json'), false);
    assert.equal(puts.length, 1);
  });

  it('a PUT that took effect but lost its answer is not written again', async () => {
    const single = singleAttemptClient();
    const puts = recordRequests(single);
    let lose = true;
    single.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        if (lose) {
          lose = false;
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        }
        return out;
      },
      { step: 'build', name: 'loseAnswer' },
    );
    const blobs = new S3Blobs(s3, BUCKET, { singleAttempt: single });
    const key = newKey();
    // The retry's HEAD finds the object: it already exists, so the call reports nothing written now.
    assert.equal(await blobs.putIfAbsent(key, bytes('once'), 'application/json'), false);
    assert.equal(puts.length, 1, 'one PUT reached S3');
    assert.equal((await read(key)).text, 'once');
  });

  it('a failed PUT that did not take effect is retried', async () => {
    const single = singleAttemptClient();
    const failures = failCalls(single, 2, () => httpError('InternalError', 500));
    const main = newClient();
    const heads = recordRequests(main);
    const blobs = new S3Blobs(main, BUCKET, { singleAttempt: single });
    const key = newKey();
    assert.equal(await blobs.putIfAbsent(key, bytes('after two failures'), 'application/json'), true);
    assert.equal(failures.failed, 2);
    assert.equal(heads.length, 3, 'a HEAD before each attempt');
    assert.equal((await read(key)).text, 'after two failures');
  });

  it('412 (another writer won) means it exists: no retry', async () => {
    const single = singleAttemptClient();
    const failures = failCalls(single, 5, () => httpError('PreconditionFailed', 412));
    const blobs = new S3Blobs(s3, BUCKET, { singleAttempt: single });
    assert.equal(await blobs.putIfAbsent(newKey(), bytes('x'), 'application/json'), false);
    assert.equal(failures.failed, 1);
  });

  // S3 answers 409 ConditionalRequestConflict while another conditional write of the key is in
  // progress, and says to retry: that write may yet fail, and then nothing would be written.
  it('409 (a concurrent conditional write) is retried: written when that write did not happen', async () => {
    const single = singleAttemptClient();
    const failures = failCalls(single, 2, () => httpError('ConditionalRequestConflict', 409));
    const blobs = new S3Blobs(s3, BUCKET, { singleAttempt: single });
    const key = newKey();
    assert.equal(await blobs.putIfAbsent(key, bytes('after two conflicts'), 'application/json'), true);
    assert.equal(failures.failed, 2);
    assert.equal((await read(key)).text, 'after two conflicts');
  });

  it('409 is retried: the retry finds what the concurrent write stored and keeps it', async () => {
    const single = singleAttemptClient();
    const key = newKey();
    single.middlewareStack.add(
      () => async () => {
        // The other writer's PUT lands while ours is refused.
        await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'the other writer' }));
        throw httpError('ConditionalRequestConflict', 409);
      },
      { step: 'build', name: 'conflict' },
    );
    const blobs = new S3Blobs(s3, BUCKET, { singleAttempt: single });
    assert.equal(await blobs.putIfAbsent(key, bytes('ours'), 'application/json'), false);
    assert.equal((await read(key)).text, 'the other writer');
  });

  it('gives up after 5 attempts with the last error', async () => {
    const single = singleAttemptClient();
    const failures = failCalls(single, 10, () => httpError('AccessDenied', 403));
    const blobs = new S3Blobs(s3, BUCKET, { singleAttempt: single });
    const key = newKey();
    await assert.rejects(blobs.putIfAbsent(key, bytes('x'), 'application/json'), /AccessDenied/);
    assert.equal(failures.failed, 5);
    assert.equal(await blobs.exists(key), false);
  });
});

describe('S3Blobs.exists', () => {
  it('is true for a stored object and false for a missing one', async () => {
    const blobs = new S3Blobs(s3, BUCKET);
    const key = newKey();
    assert.equal(await blobs.exists(key), false);
    await blobs.put(key, bytes(''), 'application/json');
    assert.equal(await blobs.exists(key), true, 'an empty object exists too');
    assert.equal(await blobs.exists(`${key}.other`), false);
    assert.equal(await blobs.exists(key.slice(0, -1)), false, 'a key prefix is no object');
  });

  it('throws errors other than a missing object', async () => {
    const client = singleAttemptClient();
    failCalls(client, 1, () => httpError('Forbidden', 403));
    await assert.rejects(new S3Blobs(client, BUCKET).exists(newKey()), /Forbidden/);
  });
});
