/**
 * The Markdown we write is safe to render (issue 22): rendered by a real CommonMark parser
 * (markdown-it, raw HTML enabled and every link scheme let through, so that whatever the Markdown
 * says shows), page text comes out as text: no link, image or HTML that the page wrote as text, no
 * `javascript:`, `vbscript:` or `data:` link from an href, and ordinary text full of Markdown
 * characters reads back the same. The same for llms.txt and the `.md` files' front matter (which a
 * YAML parser reads back exactly).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import MarkdownIt from 'markdown-it';
import { parse as parseYaml } from 'yaml';
import { llmsEntry, llmsFullSection, llmsTxt } from '../../cli/llms-txt.ts';
import { markdownDocument } from '../../cli/markdown-files.ts';
import { escapeMarkdownText } from '../../lambdas/core/base/index.ts';
import { extractMainContent } from '../../lambdas/core/content/index.ts';
import type { ContentRecord } from '../../lambdas/core/results/index.ts';

const PAGE = 'https://site.example/dir/page.html';

const md = new MarkdownIt({ html: true, linkify: false });
// let every link and image through: the test is what the Markdown says, not markdown-it's filter
md.validateLink = () => true;

function render(markdown: string): string {
  return md.render(markdown);
}

/** The text a reader sees in rendered HTML: tags dropped, entities decoded, white space collapsed. */
function visibleText(html: string): string {
  return html
    .replace(/<[^>]*>/g, ' ')
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&amp;', '&')
    .replace(/\s+/g, ' ')
    .trim();
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Tags in rendered HTML other than the ones the extractor's own constructs make. */
function foreignTags(html: string, allowed: readonly string[]): string[] {
  const tags = [...html.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9]*)/g)].map((m) => m[1]!.toLowerCase());
  return tags.filter((tag) => !allowed.includes(tag));
}

function extract(body: string, options?: { images?: boolean }) {
  return extractMainContent(`<html><body><article>${body}</article></body></html>`, PAGE, options);
}

describe('page text is text in the Markdown', () => {
  test('a Markdown link written as text is not a link', () => {
    const out = extract('<p>[x](javascript:alert(document.cookie))</p>');
    const html = render(out.markdown);
    assert.ok(!html.includes('<a'), html);
    assert.equal(visibleText(html), '[x](javascript:alert(document.cookie))');
  });

  test('escaped HTML in the page stays text, not raw HTML', () => {
    const out = extract(
      '<p>&lt;img src=x onerror=alert(1)&gt; and &lt;script&gt;alert(1)&lt;/script&gt;</p>',
    );
    const html = render(out.markdown);
    assert.deepEqual(foreignTags(html, ['p']), [], html);
    assert.equal(visibleText(html), '<img src=x onerror=alert(1)> and <script>alert(1)</script>');
  });

  test('link text cannot break out of its link', () => {
    const out = extract('<p><a href="/ok">](javascript:alert(1)) [click</a> here</p>');
    const html = render(out.markdown);
    const links = [...html.matchAll(/<a href="([^"]*)">/g)].map((m) => m[1]);
    assert.deepEqual(links, ['https://site.example/ok'], html);
    assert.match(html, /<a href="https:\/\/site\.example\/ok">\]\(javascript:alert\(1\)\) \[click<\/a> here/);
  });

  test('an image written as text is not an image', () => {
    const out = extract('<p>![img](http://evil/track.png) and <img src="http://evil/real.png" alt="a"></p>');
    const html = render(out.markdown);
    assert.ok(!html.includes('<img'), html);
    assert.equal(visibleText(html), '![img](http://evil/track.png) and');
  });

  test('entities, autolinks and HTML comments written as text stay text', () => {
    const text = '&amp;copy; &#106;avascript <https://evil.example/> <!-- c --> <?php x ?> <![CDATA[x]]>';
    const out = extract(`<p>${text.replaceAll('&', '&amp;').replaceAll('<', '&lt;')}</p>`);
    const html = render(out.markdown);
    assert.deepEqual(foreignTags(html, ['p']), [], html);
    assert.equal(visibleText(html), text);
  });

  test('text full of *, _, #, |, ` and ~ reads back as the same text, in every context', () => {
    const texts = [
      '2 * 3 * 4 = 24, **not bold**, *not em*, snake_case_name and _private_ and __dunder__',
      '# not a heading, C# and F#, issue #42 ends with # and ##',
      'a | b | c, || and a|b, `not code`, ``two``, ~~not struck~~ ~tilde~',
      'back\\slash \\* and \\_ [brackets] and ![bang] (parens) & ampersand &amp',
    ];
    for (const text of texts) {
      const escaped = text.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
      for (const [context, body, tags] of [
        ['paragraph', `<p>${escaped}</p>`, ['p']],
        ['heading', `<h2>${escaped}</h2>`, ['h2']],
        ['list item', `<ul><li>${escaped}</li></ul>`, ['ul', 'li']],
        ['quote', `<blockquote><p>${escaped}</p></blockquote>`, ['blockquote', 'p']],
        ['link', `<p><a href="/x">${escaped}</a></p>`, ['p', 'a']],
        ['emphasis', `<p><strong>${escaped}</strong></p>`, ['p', 'strong']],
      ] as const) {
        const out = extract(body);
        const html = render(out.markdown);
        assert.deepEqual(foreignTags(html, tags), [], `${context}: ${out.markdown} -> ${html}`);
        assert.equal(visibleText(html), text, `${context}: ${out.markdown}`);
      }
      const table = extract(
        `<table><tr><th>h</th><th>k</th></tr><tr><td>${escaped}</td><td>x</td></tr></table>`,
      );
      const html = render(table.markdown);
      assert.equal((html.match(/<td>/g) ?? []).length, 2, `table: ${table.markdown} -> ${html}`);
      assert.equal(visibleText(html), `h k ${text} x`);
    }
  });

  test('text that would start a block at a line start stays in its paragraph', () => {
    const lines = [
      '- item',
      '+ item',
      '* item',
      '1. one',
      '2) two',
      '# title',
      '> quote',
      '---',
      '===',
      '    code',
      '```',
      '<div>',
    ];
    const escaped = lines.map((line) => line.replaceAll('<', '&lt;'));
    for (const body of [`<p>${escaped.join('<br>')}</p>`, ...escaped.map((line) => `<p>${line}</p>`)]) {
      const out = extract(body);
      const html = render(out.markdown);
      assert.deepEqual(foreignTags(html, ['p', 'br']), [], `${out.markdown} -> ${html}`);
    }
    const out = extract(`<ul><li>${escaped.join('<br>')}</li></ul>`);
    assert.deepEqual(foreignTags(render(out.markdown), ['ul', 'li', 'br']), [], out.markdown);
  });

  test('no javascript:, vbscript: or data: link or image comes from an href or src', () => {
    const hrefs = [
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      ' \tjavascript:alert(1)',
      '&#106;avascript:alert(1)',
      'java&#x09;script:alert(1)',
      'vbscript:msgbox(1)',
      'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
    ];
    for (const href of hrefs) {
      const out = extract(`<p><a href="${href}">click</a> <img src="${href}" alt="i"></p>`, { images: true });
      const html = render(out.markdown);
      assert.ok(!/(href|src)="(?!https?:)/i.test(html), `${href}: ${html}`);
      assert.equal(visibleText(html), 'click', href);
    }
  });

  test('URLs with parentheses, spaces, backticks and pipes keep their links whole', () => {
    const out = extract(
      '<table><tr><th>a</th><th>b</th></tr><tr><td><a href="/a(b)c d`e?x=|y\\z">l</a> <code>p|q</code></td><td>2</td></tr></table>',
    );
    const html = render(out.markdown);
    assert.equal((html.match(/<td>/g) ?? []).length, 2, `${out.markdown} -> ${html}`);
    // markdown-it writes the destination's `|` as %7C
    assert.match(html, /<a href="https:\/\/site\.example\/a%28b%29c%20d%60e\?x=(\||%7C)y%5Cz">l<\/a>/);
    assert.match(html, /<code>p\|q<\/code>/);
  });

  test('code keeps its backticks: spans and fences are longer than any run inside', () => {
    const code = extract('<p>see <code>a``b`c</code> and <code>`edge`</code></p>');
    const html = render(code.markdown);
    assert.match(html, /<code>a``b`c<\/code>/, code.markdown);
    assert.match(html, /<code>`edge`<\/code>/, code.markdown);
    const body = '```\n</code></pre><script>alert(1)</script>\n`````\nx';
    const pre = extract(`<pre>${body.replaceAll('<', '&lt;')}</pre>`);
    const preHtml = render(pre.markdown);
    assert.deepEqual(foreignTags(preHtml, ['pre', 'code']), [], preHtml);
    assert.equal(visibleText(preHtml), collapse(body));
  });

  test('an image alt cannot break out of the image', () => {
    const out = extract('<p><img src="/i.png" alt="](javascript:alert(1)) <b>x</b>"></p>', { images: true });
    const html = render(out.markdown);
    assert.match(
      html,
      /<img src="https:\/\/site\.example\/i\.png" alt="\]\(javascript:alert\(1\)\) &lt;b&gt;x&lt;\/b&gt;">/,
    );
  });

  test('escaping is linear and adds at most one backslash per character', () => {
    const text = '\\`*_[]<>&|~#-+=1.'.repeat(10_000);
    const escaped = escapeMarkdownText(text, true);
    assert.ok(escaped.length <= 2 * text.length);
    assert.equal(visibleText(render(escaped)), text);
  });
});

function record(url: string, extra: Partial<ContentRecord> = {}): ContentRecord {
  return {
    v: 1,
    crawlId: 'c1',
    key: url,
    url,
    fetchedAt: '2026-12-02T00:00:00.000Z',
    mime: 'text/html',
    kind: 'html',
    wordCount: 1,
    ...extra,
  };
}

const HOSTILE = {
  title: '<img src=x onerror=alert(1)> [x](javascript:alert(1))',
  description: '](javascript:alert(1)) <script>alert(2)</script> ![t](http://evil/t.png)',
  siteName: '<b>Site</b> [home](javascript:alert(3))',
};

describe('llms.txt', () => {
  test('titles, descriptions and the site name are text', () => {
    const records = [
      record('https://site.example/', HOSTILE),
      record('https://site.example/a', { title: HOSTILE.description, description: HOSTILE.title }),
    ];
    const html = render(llmsTxt(records.map(llmsEntry), records[0], ['https://site.example/']));
    assert.deepEqual(foreignTags(html, ['h1', 'h2', 'blockquote', 'p', 'ul', 'li', 'a']), [], html);
    const links = [...html.matchAll(/<a href="([^"]*)">/g)].map((m) => m[1]);
    assert.deepEqual(links, ['https://site.example/', 'https://site.example/a'], html);
  });

  test('llms-full.txt titles are text, and a text record is text', () => {
    const html = render(
      llmsFullSection(record('https://site.example/t', { title: HOSTILE.title, text: HOSTILE.description })),
    );
    assert.deepEqual(foreignTags(html, ['h1', 'p']), [], html);
    assert.ok(!html.includes('<a'), html);
  });
});

describe('front matter of the .md files', () => {
  const nasty =
    'a\n---\n<script>alert(1)</script>\u2028b\u0085c\u007f\ud800 "q" \\ [x](javascript:alert(1)) # not: a: key';
  const doc = markdownDocument(
    record('https://site.example/f', {
      title: nasty,
      description: '',
      og: { [`k${nasty}`]: nasty, type: 'article' },
      jsonLdTypes: [nasty, 'Thing'],
      markdown: 'Body text.',
    }),
  );

  test('a YAML parser reads every value back exactly (1.1 and 1.2)', () => {
    const front = doc.slice(4, doc.indexOf('\n---\n', 4));
    assert.ok(!front.includes('\n---'), 'the front matter ends where it should');
    const well = nasty.toWellFormed();
    for (const version of ['1.1', '1.2'] as const) {
      const data = parseYaml(front, { version });
      assert.equal(data.title, well, version);
      assert.equal(data.description, '');
      assert.deepEqual(data.og, { [`k${well}`]: well, type: 'article' });
      assert.deepEqual(data.jsonLdTypes, [well, 'Thing']);
      assert.equal(data.url, 'https://site.example/f');
      assert.equal(data.wordCount, 1);
    }
    assert.ok(doc.endsWith('---\n\nBody text.\n'));
  });

  test('rendered as Markdown by a renderer that knows no front matter, it holds no HTML and no link', () => {
    const html = render(doc);
    assert.deepEqual(foreignTags(html, ['hr', 'h2', 'p']), [], html);
    assert.ok(!html.includes('<a'), html);
  });
});
