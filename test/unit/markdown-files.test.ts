import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { MarkdownDirWriter, markdownDocument } from '../../cli/markdown-files.ts';
import type { ContentRecord } from '../../lambdas/core/results/index.ts';
import { prng, urlSet } from '../fixtures/adversarial-urls.ts';

function record(url: string, extra: Partial<ContentRecord> = {}): ContentRecord {
  return {
    v: 1,
    crawlId: 'c1',
    key: 'k',
    url,
    fetchedAt: '2026-12-02T00:00:00.000Z',
    mime: 'text/html',
    kind: 'html',
    wordCount: 2,
    markdown: '# Hi\n\nthere',
    text: 'Hi\n\nthere',
    ...extra,
  };
}

describe('markdownDocument', () => {
  it('puts the metadata in YAML front matter as JSON scalars, then the Markdown', () => {
    const doc = markdownDocument(
      record('https://example.com/', {
        title: 'A "quoted"\ntitle',
        og: { type: 'article' },
        jsonLdTypes: ['Article'],
      }),
    );
    const [empty, front, body] = doc.split(/^---$/m);
    assert.equal(empty, '');
    const fields = Object.fromEntries(
      (front ?? '')
        .trim()
        .split('\n')
        .map((line) => {
          const colon = line.indexOf(': ');
          return [line.slice(0, colon), JSON.parse(line.slice(colon + 2))];
        }),
    );
    assert.deepEqual(fields, {
      url: 'https://example.com/',
      fetchedAt: '2026-12-02T00:00:00.000Z',
      mime: 'text/html',
      title: 'A "quoted"\ntitle',
      og: { type: 'article' },
      jsonLdTypes: ['Article'],
      wordCount: 2,
    });
    assert.equal(body, '\n\n# Hi\n\nthere\n');
  });
});

describe('MarkdownDirWriter', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'md-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** The page each file under `dir` holds: its Markdown, `page <url>`, says which. */
  async function pagesOnDisk(): Promise<string[]> {
    const pages: string[] = [];
    for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const text = await readFile(join(entry.parentPath, entry.name), 'utf8');
      pages.push(/\npage (.*)\n$/.exec(text)?.[1] ?? `(no page in ${entry.name})`);
    }
    return pages.sort();
  }

  /** Writes a record per URL, its Markdown naming it, and asserts that each page has a file of its own. */
  async function writeAll(urls: string[]): Promise<void> {
    const writer = new MarkdownDirWriter(dir);
    for (const url of urls)
      assert.equal(await writer.write(record(url, { markdown: `page ${url}` })), undefined, url);
    assert.equal(writer.files, urls.length);
    assert.deepEqual(await pagesOnDisk(), [...urls].sort(), 'one file per page, none overwritten');
  }

  it('writes pages with Markdown, and keeps two URLs that map to one name apart', async () => {
    const writer = new MarkdownDirWriter(dir);
    await writer.write(record('https://example.com/a', { markdown: 'A' }));
    await writer.write(record('https://example.com/a.html', { markdown: 'A HTML' }));
    await writer.write(record('https://example.com/data.json', { kind: 'text', markdown: undefined }));
    assert.equal(writer.files, 2);
    assert.match(await readFile(join(dir, 'example.com', 'a.md'), 'utf8'), /\nA\n$/);
    const names = (await readdir(join(dir, 'example.com'))).sort();
    assert.equal(names.length, 2);
    assert.match(names[1] ?? '', /^a_[0-9a-f]{8}\.md$/);
  });

  it('writes a page and a directory of the same name, in either order', async () => {
    await writeAll(['https://example.com/a', 'https://example.com/a.md/x', 'https://example.com/a.md']);
    await rm(dir, { recursive: true });
    await writeAll(['https://example.com/b.md/x', 'https://example.com/b', 'https://example.com/B.MD']);
  });

  it('writes a page whose name is 100 three-byte characters', async () => {
    await writeAll([`https://example.com/${'€'.repeat(100)}`, `https://example.com/${'€'.repeat(100)}/x`]);
  });

  it('never gives a page a collision suffix another page already has', async () => {
    const page = 'https://example.com/b.html';
    const suffix = createHash('sha256').update(page).digest('hex').slice(0, 8);
    await writeAll([`https://example.com/b_${suffix}`, 'https://example.com/b', page]);
  });

  it('writes every page of seeded adversarial URL sets to a file of its own', async () => {
    for (let seed = 1; seed <= 25; seed++) {
      const urls = [...new Set(urlSet(prng(seed)))];
      await writeAll(urls);
      await rm(dir, { recursive: true });
    }
  });

  it('hands back a page it cannot write, with its URL and why, and writes the others', async () => {
    // Something in the way of one page's file: a directory the writer did not make.
    await mkdir(join(dir, 'example.com', 'blocked.md'), { recursive: true });
    const writer = new MarkdownDirWriter(dir);
    assert.equal(await writer.write(record('https://example.com/before')), undefined);
    const blocked = await writer.write(record('https://example.com/blocked'));
    assert.equal(blocked?.url, 'https://example.com/blocked');
    assert.match(blocked?.reason ?? '', /^EISDIR: .*blocked\.md/);
    const notUrl = await writer.write(record('not a url'));
    assert.deepEqual(notUrl, { url: 'not a url', reason: 'Invalid URL' });
    assert.equal(await writer.write(record('https://example.com/after')), undefined);
    assert.equal(writer.files, 2);
    assert.deepEqual((await readdir(join(dir, 'example.com'))).sort(), [
      'after.md',
      'before.md',
      'blocked.md',
    ]);
  });
});
