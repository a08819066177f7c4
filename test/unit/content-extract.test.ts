import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { htmlContentRecord, textContentRecord } from '../../lambdas/core/content/index.ts';
import { ContentRecordSchema, contentKind, MAX_TEXT_RECORD_CHARS } from '../../lambdas/core/results/index.ts';

const SOURCE = {
  crawlId: 'c1',
  key: 'k1',
  url: 'http://site.example/a',
  finalUrl: 'http://site.example/b/',
  fetchedAt: '2026-12-02T00:00:00.000Z',
  mime: 'text/html',
};

const PAGE = `<html lang="de"><head><title>Der Titel</title><meta name="description" content="Kurz.">
<link rel="canonical" href="/b/kanon"><meta property="og:type" content="article">
<script type="application/ld+json">{"@type":"NewsArticle"}</script></head>
<body><nav>MENU</nav><article><h1>Überschrift</h1><p>Ein Absatz mit genug Text, damit er als Inhalt zählt, und einem <a href="x">Link</a>.</p></article></body></html>`;

describe('contentKind', () => {
  it('sends HTML to the HTML path, PDF to the PDF path, text, JSON and XML to the text path, nothing else anywhere', () => {
    assert.equal(contentKind('text/html'), 'html');
    assert.equal(contentKind('application/pdf'), 'pdf');
    assert.equal(contentKind('application/xhtml+xml'), 'html');
    for (const mime of [
      'text/plain',
      'text/csv',
      'text/markdown',
      'application/json',
      'application/ld+json',
      'application/xml',
      'text/xml',
      'application/rss+xml',
    ])
      assert.equal(contentKind(mime), 'text', mime);
    for (const mime of ['image/png', 'application/octet-stream', 'video/mp4', undefined])
      assert.equal(contentKind(mime), undefined, String(mime));
  });
});

describe('htmlContentRecord', () => {
  it('holds the main content as Markdown, with the metadata, links resolved against the final URL', () => {
    const record = ContentRecordSchema.parse(htmlContentRecord(SOURCE, PAGE, SOURCE.finalUrl, 'markdown'));
    assert.equal(record.kind, 'html');
    assert.equal(record.finalUrl, 'http://site.example/b/');
    assert.equal(record.title, 'Der Titel');
    assert.equal(record.description, 'Kurz.');
    assert.equal(record.language, 'de');
    assert.equal(record.canonicalUrl, 'http://site.example/b/kanon');
    assert.deepEqual(record.og, { type: 'article' });
    assert.deepEqual(record.jsonLdTypes, ['NewsArticle']);
    assert.match(record.markdown ?? '', /^# Überschrift$/m);
    assert.ok(record.markdown?.includes('[Link](http://site.example/b/x)'), record.markdown);
    assert.ok(!record.markdown?.includes('MENU'));
    assert.equal(record.text, undefined, 'one form per record: Markdown');
    assert.equal(record.wordCount, 14, 'the words of the main content');
  });

  it('holds plain text instead with content: text', () => {
    const record = htmlContentRecord(SOURCE, PAGE, SOURCE.finalUrl, 'text');
    assert.equal(record.markdown, undefined);
    assert.match(record.text ?? '', /^Überschrift$/m);
    assert.match(record.text ?? '', /Ein Absatz/);
    assert.ok(!record.text?.includes('http://site.example/b/x'), 'links are text, not Markdown links');
  });

  it('ends hostile HTML bounded, saying why', () => {
    const deep = `<html><body>${'<div>'.repeat(20_000)}deep${'</div>'.repeat(20_000)}</body></html>`;
    const record = htmlContentRecord(SOURCE, deep, SOURCE.url, 'markdown');
    assert.match(record.truncated ?? '', /\S/);
  });
});

describe('textContentRecord', () => {
  it('keeps the text of a JSON body whole, with no Markdown', () => {
    const record = textContentRecord({ ...SOURCE, mime: 'application/json' }, '{"a": [1, 2]}');
    assert.deepEqual(
      { kind: record.kind, text: record.text, markdown: record.markdown, words: record.wordCount },
      { kind: 'text', text: '{"a": [1, 2]}', markdown: undefined, words: 3 },
    );
  });

  it('cuts a text longer than MAX_TEXT_RECORD_CHARS and says so', () => {
    const record = textContentRecord(
      { ...SOURCE, mime: 'text/plain' },
      'x'.repeat(MAX_TEXT_RECORD_CHARS + 5),
    );
    assert.equal(record.text?.length, MAX_TEXT_RECORD_CHARS);
    assert.match(record.truncated ?? '', /cut at 2000000 characters \(the body has 2000005\)/);
  });
});
