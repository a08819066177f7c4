// A local crawl killed with kill -9 must be resumable: its S3 state on disk is loaded by the next
// start. fauxqs wrote an object's body and metadata in place, so a kill in the middle left a
// truncated metadata file ("Unexpected end of JSON input" on every later start) or a new body
// under old metadata; local/atomic-s3-files.ts stages each write and renames it into place.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { createClients, destroyClients } from '../../local/aws-clients.ts';
import { type FauxqsServer, startFauxqsServer } from '../../local/fauxqs-server.ts';
import { tempDir } from '../fixtures/local-state.ts';

const LOOP = new URL('../fixtures/s3-put-loop.ts', import.meta.url).pathname;

async function withServer<T>(s3Dir: string, use: (server: FauxqsServer) => Promise<T>): Promise<T> {
  const server = await startFauxqsServer({ s3Dir });
  try {
    return await use(server);
  } finally {
    await server.stop();
  }
}

/** Every object in the bucket: its body is one repeated byte, as long as written, under its own ETag. */
async function assertWhole(server: FauxqsServer): Promise<number> {
  const clients = createClients({ sqs: server.url, s3: server.url, dynamodb: server.url });
  try {
    const listed = await clients.s3.send(new ListObjectsV2Command({ Bucket: 'killed', MaxKeys: 1000 }));
    for (const { Key } of listed.Contents ?? []) {
      const object = await clients.s3.send(new GetObjectCommand({ Bucket: 'killed', Key }));
      const body = Buffer.from((await object.Body?.transformToByteArray()) ?? []);
      assert.equal(body.length, 2 * 1024 * 1024, `${Key}: ${body.length} bytes`);
      assert.ok(
        body.every((byte) => byte === body[0]),
        `${Key}: a body mixed from two writes`,
      );
      assert.equal(object.ETag, `"${createHash('md5').update(body).digest('hex')}"`, `${Key}: its ETag`);
    }
    return listed.KeyCount ?? 0;
  } finally {
    destroyClients(clients);
  }
}

describe('local S3 files after a kill -9 in the middle of a PUT', () => {
  it('loads on the next start, each object its old version or its new one', async (t) => {
    const s3Dir = await tempDir(t, 'local-s3-kill-');
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, [LOOP, s3Dir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      // Round 0 may be killed during the first PUT; the later ones once an object is written, so
      // that one must survive (on a loaded machine no PUT may have ended in a fixed time).
      const awaited = round === 0 ? 'ready' : 'written';
      let stdout = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes(awaited)) resolve();
        });
        child.once('exit', (code) =>
          reject(new Error(`the writer exited (${code}) before "${awaited}": ${stderr}`)),
        );
      });
      // Part way into the writes, at a different point each round.
      await new Promise((resolve) => setTimeout(resolve, 30 + round * 37));
      child.kill('SIGKILL');
      await exited;
      const objects = await withServer(s3Dir, assertWhole);
      assert.ok(objects > 0 || round === 0, `round ${round}: no object survived`);
    }
  });

  it('finishes a write killed between its two renames, and drops one killed before them', async (t) => {
    const s3Dir = await tempDir(t, 'local-s3-staged-');
    await withServer(s3Dir, async (server) => {
      const clients = createClients({ sqs: server.url, s3: server.url, dynamodb: server.url });
      try {
        await clients.s3.send(new CreateBucketCommand({ Bucket: 'killed' }));
        for (const [Key, byte] of [
          ['old', 1],
          ['moved', 2],
          ['new', 3],
        ] as const) {
          const Body = Buffer.alloc(2 * 1024 * 1024, byte);
          await clients.s3.send(new PutObjectCommand({ Bucket: 'killed', Key, Body }));
        }
      } finally {
        destroyClients(clients);
      }
    });
    const objects = join(s3Dir, 'buckets', 'killed', 'objects');
    const staged = join(s3Dir, '_staging', 'killed', 'objects');
    mkdirSync(staged, { recursive: true });
    // "old" killed while its metadata was being written: a new body and cut metadata, both staged.
    writeFileSync(join(staged, 'old.data'), Buffer.alloc(2 * 1024 * 1024, 9));
    writeFileSync(join(staged, 'old.meta.json'), '{"key":"old","cont');
    // "moved" killed between the renames: the new body ("new"'s) in place, its metadata staged.
    const meta = JSON.parse(readFileSync(join(objects, 'new.meta.json'), 'utf8')) as { key: string };
    writeFileSync(join(staged, 'moved.meta.json'), JSON.stringify({ ...meta, key: 'moved' }));
    renameSync(join(objects, 'moved.data'), join(s3Dir, 'moved.old'));
    writeFileSync(join(objects, 'moved.data'), Buffer.alloc(2 * 1024 * 1024, 3));
    await withServer(s3Dir, async (server) => {
      assert.equal(await assertWhole(server), 3);
      const clients = createClients({ sqs: server.url, s3: server.url, dynamodb: server.url });
      try {
        for (const [Key, byte] of [
          ['old', 1],
          ['moved', 3],
          ['new', 3],
        ] as const) {
          const object = await clients.s3.send(new GetObjectCommand({ Bucket: 'killed', Key }));
          const body = await object.Body?.transformToByteArray();
          assert.equal(body?.[0], byte, `${Key}: the version it holds`);
        }
      } finally {
        destroyClients(clients);
      }
    });
    assert.deepEqual(readdirSync(s3Dir).sort(), ['_multipart', 'buckets', 'moved.old']);
  });
});
