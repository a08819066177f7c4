import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brotliCompressSync, deflateRawSync, gzipSync, zstdCompressSync } from 'node:zlib';
import {
  contentCodings,
  decodeContent as decodeKeepingPrefix,
  MAX_CONTENT_CODINGS,
} from '../../lambdas/core/base/index.ts';
import { decodeContent as decodePage } from '../../lambdas/core/crawl/index.ts';

test('a Content-Encoding list is undone last-applied first; identity and case do not matter', () => {
  assert.deepEqual(contentCodings('gzip, BR'), { ok: true, codings: ['br', 'gzip'] });
  assert.deepEqual(contentCodings('identity, x-gzip'), { ok: true, codings: ['gzip'] });
  assert.deepEqual(contentCodings(undefined), { ok: true, codings: [] });
  assert.deepEqual(contentCodings('compress'), {
    ok: false,
    reason: 'unsupported content-encoding compress',
  });
  assert.equal(
    contentCodings(
      Array(MAX_CONTENT_CODINGS + 1)
        .fill('gzip')
        .join(','),
    ).ok,
    false,
  );
});

const text = 'User-agent: *\nDisallow: /private/\n'.repeat(200);
const encoders: Record<string, (bytes: Buffer) => Buffer> = {
  gzip: gzipSync,
  deflate: deflateRawSync,
  br: brotliCompressSync,
  zstd: zstdCompressSync,
};

for (const [coding, encode] of Object.entries(encoders)) {
  test(`${coding}: pages and robots.txt/sitemaps decode the same coding table`, async () => {
    const body = encode(Buffer.from(text));
    const page = decodePage(body, coding, 1 << 20);
    assert.ok(page.ok);
    assert.equal(Buffer.from(page.bytes).toString(), text);
    const kept = await decodeKeepingPrefix(body, coding, 1 << 20);
    assert.equal(kept.error, undefined);
    assert.equal(Buffer.from(kept.bytes).toString(), text);
  });
}

test('past the cap a page is refused, a robots.txt keeps its first bytes', async () => {
  const body = zstdCompressSync(Buffer.from(text));
  const page = decodePage(body, 'zstd', 100, { ratioFloorBytes: 0, maxRatio: 1_000 });
  assert.deepEqual(page.ok ? 'decoded' : page.code, 'decoded-too-large');
  const kept = await decodeKeepingPrefix(body, 'zstd', 100);
  assert.equal(kept.truncated, true);
  assert.equal(Buffer.from(kept.bytes).toString(), text.slice(0, 100));
});
