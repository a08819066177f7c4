/**
 * The completion path's conditional PUT against the embedded S3 behind the strict layer, which
 * answers `If-None-Match: *` with 412 as S3 does: writers that race past their HEADs (both saw no
 * object) still write the crawl summary once, and the loser reports it as existing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { clientSettings, s3Config } from '../../local/aws-clients.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';

const BUCKET = 'pages';
let emulators: Emulators;
const clients: S3Client[] = [];

function newClient(maxAttempts = 3): S3Client {
  const client = new S3Client(s3Config(emulators.endpoints, clientSettings({ maxAttempts })));
  clients.push(client);
  return client;
}

before(async () => {
  emulators = await startEmulators();
  await newClient().send(new CreateBucketCommand({ Bucket: BUCKET }));
});
after(async () => {
  for (const client of clients) client.destroy();
  await emulators?.stop();
});

/** Holds every HEAD's answer until `count` HEADs have been answered: all writers see the key absent. */
function headsMeetAt(client: S3Client, count: number): void {
  let arrived = 0;
  let release: () => void = () => {};
  const all = new Promise<void>((resolve) => {
    release = resolve;
  });
  client.middlewareStack.add(
    (next) => async (args) => {
      const method = (args.request as { method?: string }).method;
      if (method !== 'HEAD') return next(args);
      try {
        return await next(args);
      } finally {
        if (++arrived === count) release();
        await all;
      }
    },
    { step: 'finalizeRequest', name: 'headsMeetAt' },
  );
}

describe('S3Blobs.putIfAbsent when writers race past their HEADs', () => {
  it('exactly one writes; the others get 412 and report the object as existing', async () => {
    const writers = 4;
    const main = newClient();
    headsMeetAt(main, writers);
    const blobs = new S3Blobs(main, BUCKET, { singleAttempt: newClient(1) });
    const key = 'crawls/race/summary.json';
    const written = await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        blobs.putIfAbsent(key, new TextEncoder().encode(`{"writer":${i}}`), 'application/json'),
      ),
    );
    assert.equal(written.filter(Boolean).length, 1, `written: ${written.join()}`);
    const winner = written.indexOf(true);
    const got = await main.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    assert.equal(await got.Body?.transformToString(), `{"writer":${winner}}`, 'the winner is what is stored');
  });
});
