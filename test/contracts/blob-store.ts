/**
 * What the WARC writer and the aggregate function rely on from the page store (BlobWriter,
 * ResultStore), run against the in-memory fake (test/fakes/blobs.ts) and S3Blobs on the embedded S3
 * (test/integration/port-contracts.test.ts).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { ResultStore } from '../../lambdas/core/crawl/index.ts';

export interface BlobStoreUnderTest {
  store: ResultStore;
  /** The object's bytes as stored (outside the port: S3 GetObject, or the fake's map). */
  read(key: string): Promise<Uint8Array | undefined>;
}

const bytes = (text: string) => new TextEncoder().encode(text);

async function collect(keys: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const key of keys) out.push(key);
  return out;
}

export function blobStoreContract(name: string, make: () => BlobStoreUnderTest): void {
  const prefix = () => `contract/${randomUUID().slice(0, 8)}`;

  describe(`ResultStore contract: ${name}`, () => {
    it('put then read gives back the same bytes, binary and empty alike', async () => {
      const { store, read } = make();
      const at = prefix();
      const binary = new Uint8Array(randomBytes(70_000));
      await store.put(`${at}/a.warc.gz`, binary, 'application/warc');
      await store.put(`${at}/empty`, new Uint8Array(), 'application/octet-stream');
      assert.deepEqual(Buffer.from((await read(`${at}/a.warc.gz`)) ?? []), Buffer.from(binary));
      assert.equal((await read(`${at}/empty`))?.byteLength, 0);
    });

    it('put replaces an object', async () => {
      const { store, read } = make();
      const key = `${prefix()}/part.jsonl.gz`;
      await store.put(key, bytes('first'), 'application/gzip');
      await store.put(key, bytes('second'), 'application/gzip');
      assert.equal(Buffer.from((await read(key)) ?? []).toString(), 'second');
    });

    it('exists: false before a put, true after, and only for that very key', async () => {
      const { store } = make();
      const key = `${prefix()}/part.jsonl.gz`;
      assert.equal(await store.exists(key), false);
      await store.put(key, bytes('x'), 'application/gzip');
      assert.equal(await store.exists(key), true);
      assert.equal(await store.exists(key.slice(0, -3)), false, 'a prefix of a key is no object');
      assert.equal(await store.exists(`${key}.tmp`), false, 'nor is a longer key');
    });

    it('putIfAbsent writes an absent key and says so; on an existing one it says false and leaves it as it was', async () => {
      const { store, read } = make();
      const key = `${prefix()}/summary.json`;
      assert.equal(await store.putIfAbsent(key, bytes('{"n":1}'), 'application/json'), true);
      assert.equal(await store.putIfAbsent(key, bytes('{"n":2}'), 'application/json'), false);
      assert.equal(Buffer.from((await read(key)) ?? []).toString(), '{"n":1}');
      const put = `${prefix()}/put-first.json`;
      await store.put(put, bytes('put'), 'application/json');
      assert.equal(await store.putIfAbsent(put, bytes('again'), 'application/json'), false);
      assert.equal(Buffer.from((await read(put)) ?? []).toString(), 'put');
    });

    it('of concurrent putIfAbsent writers of one key exactly one wins, and its bytes are stored', async () => {
      const { store, read } = make();
      const key = `${prefix()}/summary.json`;
      const won = await Promise.all(
        Array.from({ length: 5 }, (_, i) => store.putIfAbsent(key, bytes(`writer ${i}`), 'application/json')),
      );
      assert.equal(won.filter(Boolean).length, 1, `won: ${won.join()}`);
      assert.equal(Buffer.from((await read(key)) ?? []).toString(), `writer ${won.indexOf(true)}`);
    });

    it('list yields each key under the prefix once, in key order, and none of a sibling prefix', async () => {
      const { store } = make();
      const at = prefix();
      const keys = [`${at}/c1/b`, `${at}/c1/a`, `${at}/c1/sub/z`, `${at}/c10/a`, `${at}/c1`];
      for (const key of keys) await store.put(key, bytes(key), 'text/plain');
      assert.deepEqual(await collect(store.list(`${at}/c1/`)), [
        `${at}/c1/a`,
        `${at}/c1/b`,
        `${at}/c1/sub/z`,
      ]);
      assert.deepEqual(await collect(store.list(`${at}/none/`)), []);
    });

    it('list goes on past one S3 page (1000 keys)', async () => {
      const { store } = make();
      const at = prefix();
      const keys = Array.from({ length: 1003 }, (_, i) => `${at}/${String(i).padStart(5, '0')}`);
      for (let i = 0; i < keys.length; i += 50)
        await Promise.all(keys.slice(i, i + 50).map((key) => store.put(key, bytes('.'), 'text/plain')));
      assert.deepEqual(await collect(store.list(`${at}/`)), keys);
    });
  });
}
