import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MarkdownDirWriter, markdownDocument, markdownPath } from '../../cli/markdown-files.ts';
import type { ContentRecord } from '../../lambdas/core/content-record.ts';

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

describe('markdownPath', () => {
  it('names a file from the URL: host and port, path, index for a directory, page extensions dropped', () => {
    assert.equal(markdownPath('http://example.com/'), 'example.com/index.md');
    assert.equal(markdownPath('http://example.com'), 'example.com/index.md');
    assert.equal(markdownPath('http://127.0.0.1:8080/docs/'), '127.0.0.1_8080/docs/index.md');
    assert.equal(markdownPath('https://example.com/docs/intro.html'), 'example.com/docs/intro.md');
    assert.equal(markdownPath('https://example.com/a/b'), 'example.com/a/b.md');
    assert.equal(markdownPath('https://example.com/report.pdf'), 'example.com/report.pdf.md');
  });

  it('keeps queries apart and stays inside the directory whatever the URL holds', () => {
    const a = markdownPath('https://example.com/list?page=1');
    const b = markdownPath('https://example.com/list?page=2');
    assert.match(a, /^example\.com\/list_[0-9a-f]{8}\.md$/);
    assert.notEqual(a, b);
    assert.equal(markdownPath('https://example.com/a/..%2f..%2fetc'), 'example.com/a/.._.._etc.md');
    assert.equal(markdownPath('https://example.com/a%2Fb%5Cc:d'), 'example.com/a_b_c_d.md');
    const long = markdownPath(`https://example.com/${'x'.repeat(500)}`);
    assert.ok(
      long.split('/').every((segment) => segment.length <= 123),
      long,
    );
  });
});

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
  it('writes pages with Markdown, and keeps two URLs that map to one name apart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'md-'));
    try {
      const writer = new MarkdownDirWriter(dir);
      await writer.write(record('https://example.com/a', { markdown: 'A' }));
      await writer.write(record('https://example.com/a.html', { markdown: 'A HTML' }));
      await writer.write(record('https://example.com/data.json', { kind: 'text', markdown: undefined }));
      assert.equal(writer.files, 2);
      assert.match(await readFile(join(dir, 'example.com', 'a.md'), 'utf8'), /\nA\n$/);
      const { readdir } = await import('node:fs/promises');
      const names = (await readdir(join(dir, 'example.com'))).sort();
      assert.equal(names.length, 2);
      assert.match(names[1] ?? '', /^a_[0-9a-f]{8}\.md$/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
