import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Parser } from 'htmlparser2';
import {
  type Attributes,
  extractMainContent,
  type HtmlHandler,
  HtmlReader,
} from '../../lambdas/core/content/index.ts';

const PAGE = 'https://news.example.com/2024/05/story.html';

const STORY = [
  'The council voted on Tuesday, after a long debate, to rebuild the old harbour bridge by 2027.',
  'Engineers had warned for years that the bridge, built in 1931, could not carry modern traffic safely.',
  'Residents, shop owners and the ferry company all spoke at the meeting, most of them in favour of the plan.',
  'The work will close the bridge for eighteen months, and a temporary ferry will run every ten minutes.',
];

/** A news page as CMS templates make them: chrome around one article. */
const NEWS_PAGE = `<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <title>Harbour bridge to be rebuilt | Example News</title>
  <meta name="description" content="The council approved the rebuild.">
  <meta name="author" content="Jane Doe">
  <meta property="og:title" content="Harbour bridge to be rebuilt">
  <meta property="og:type" content="article">
  <meta property="og:site_name" content="Example News">
  <meta property="article:published_time" content="2024-05-14T09:00:00Z">
  <meta property="article:modified_time" content="2024-05-14T12:30:00Z">
  <link rel="canonical" href="/2024/05/story.html?utm_source=x">
  <script type="application/ld+json">
    {"@context": "https://schema.org", "@graph": [
      {"@type": "NewsArticle", "headline": "Harbour bridge"},
      {"@type": ["WebPage", "ItemPage"]}
    ]}
  </script>
  <style>.secret-style-rule { color: red }</style>
  <script>var SECRET_SCRIPT = "<p>script paragraph</p>";</script>
</head>
<body class="article-page">
  <header class="site-header">
    <a href="/">Example News</a>
    <nav><ul><li><a href="/world">World</a></li><li><a href="/sport">Sport</a></li><li><a href="/weather">Weather</a></li></ul></nav>
  </header>
  <div id="cookie-banner">We use cookies to improve your experience, accept all cookies to continue reading.</div>
  <div class="layout">
    <div class="sidebar">
      <h3>Most read</h3>
      <p>Sidebar teaser text that is long enough, with commas, to look like a paragraph to a naive scorer.</p>
      <ul><li><a href="/a">Another story</a></li><li><a href="/b">Yet another story</a></li></ul>
    </div>
    <article class="story">
      <h1>Harbour bridge to be rebuilt</h1>
      ${STORY.map((p) => `<p>${p}</p>`).join('\n      ')}
      <div class="share-tools"><a href="https://social.example/share">Share on Social</a></div>
    </article>
  </div>
  <section class="comments"><p>Reader comment: this is great news, finally, after all these years of waiting.</p></section>
  <footer><p>Copyright 2024 Example News, all rights reserved, registered in England.</p><a href="/privacy">Privacy</a></footer>
  <noscript><p>NOSCRIPT fallback text</p></noscript>
</body>
</html>`;

describe('extractMainContent: choosing the content', () => {
  test('keeps the article paragraphs and drops nav, footer, cookie banner, sidebar and comments', () => {
    const { markdown, text } = extractMainContent(NEWS_PAGE, PAGE);
    assert.ok(markdown.startsWith('# Harbour bridge to be rebuilt'), markdown);
    for (const paragraph of STORY) {
      assert.ok(text.includes(paragraph), `missing: ${paragraph}`);
      assert.ok(markdown.includes(paragraph), `missing in markdown: ${paragraph}`);
    }
    for (const junk of [
      'Sport',
      'Weather',
      'cookies',
      'Sidebar teaser',
      'Most read',
      'Reader comment',
      'Copyright',
      'Share on',
    ]) {
      assert.ok(!text.includes(junk), `kept ${junk}: ${text}`);
      assert.ok(!markdown.includes(junk), `kept ${junk} in markdown`);
    }
  });

  test('scripts, styles and noscript never reach the output', () => {
    const { markdown, text } = extractMainContent(NEWS_PAGE, PAGE);
    for (const out of [markdown, text]) {
      assert.ok(!out.includes('SECRET_SCRIPT'));
      assert.ok(!out.includes('secret-style-rule'));
      assert.ok(!out.includes('script paragraph'));
      assert.ok(!out.includes('NOSCRIPT'));
    }
    const inline = extractMainContent(
      '<div><p>Visible text of the page.</p><script>alert("x")</script><style>p{}</style><template><p>tpl</p></template><svg><text>svg text</text></svg></div>',
      PAGE,
    );
    assert.equal(inline.text, 'Visible text of the page.');
  });

  test('a page without article structure still yields its text', () => {
    const short = extractMainContent('<html><body><p>Hello, world.</p></body></html>', PAGE);
    assert.equal(short.markdown, 'Hello, world.');
    assert.equal(short.text, 'Hello, world.');
    assert.equal(extractMainContent('Just some text', PAGE).text, 'Just some text');
  });

  test('without <article>, the best-scoring container and its paragraphs are chosen', () => {
    const para = 'This paragraph of the story has commas, clauses, and enough words to be scored as content.';
    const html = `<body>
      <div id="top-menu"><a href="/1">One</a> <a href="/2">Two</a> <a href="/3">Three</a></div>
      <div id="wrapper">
        <div class="entry-content">${`<p>${para}</p>`.repeat(5)}
          <ul class="related-links"><li><a href="/r1">Related one</a></li><li><a href="/r2">Related two</a></li></ul>
        </div>
        <div class="widget-area"><p>Subscribe to our newsletter for weekly updates, offers, and news.</p></div>
      </div>
      <div id="site-footer">Footer links, contact, imprint, and terms.</div>
    </body>`;
    const { text } = extractMainContent(html, PAGE);
    assert.equal(text, Array(5).fill(para).join('\n\n'));
  });

  test('a page wrapped in an unlikely-looking container is not lost', () => {
    const html = `<div class="sidebar-wrap"><div class="content"><p>${STORY[0]}</p><p>${STORY[1]}</p></div></div>`;
    const { text } = extractMainContent(html, PAGE);
    assert.equal(text, `${STORY[0]}\n\n${STORY[1]}`);
  });
});

describe('extractMainContent: markdown', () => {
  test('headings, paragraphs and inline strong, em and code', () => {
    const { markdown, text } = extractMainContent(
      '<main><h2>Setup</h2><p>Run <code>npm ci</code> <b>first</b>, then <em>test</em>.</p><h3>Then</h3><p>Done &amp; dusted.</p></main>',
      PAGE,
    );
    assert.equal(markdown, '## Setup\n\nRun `npm ci` **first**, then *test*.\n\n### Then\n\nDone & dusted.');
    assert.equal(text, 'Setup\n\nRun npm ci first, then test.\n\nThen\n\nDone & dusted.');
  });

  test('lists, nested lists and ordered lists with a start', () => {
    const { markdown, text } = extractMainContent(
      '<main><ul><li>fruit<ul><li>apple</li><li>pear</li></ul></li><li>bread</li></ul><ol start="3"><li>three</li><li>four<ol><li>four a</li></ol></li></ol></main>',
      PAGE,
    );
    assert.equal(markdown, '- fruit\n  - apple\n  - pear\n- bread\n\n3. three\n4. four\n   1. four a');
    assert.equal(text, 'fruit\napple\npear\nbread\n\nthree\nfour\nfour a');
  });

  test('tables become GFM tables with | escaped', () => {
    const { markdown, text } = extractMainContent(
      '<main><table><thead><tr><th>Name</th><th>Value</th></tr></thead><tbody><tr><td>a|b</td><td>1</td></tr><tr><td colspan="2">wide</td></tr></tbody></table></main>',
      PAGE,
    );
    assert.equal(markdown, '| Name | Value |\n| --- | --- |\n| a\\|b | 1 |\n| wide |  |');
    assert.equal(text, 'Name\tValue\na|b\t1\nwide');
  });

  test('pre keeps its whitespace in a fenced block with the language', () => {
    const { markdown, text } = extractMainContent(
      '<main><p>Example:</p><pre><code class="language-ts">if (x) {\n    y(`a`);\n}\n</code></pre></main>',
      PAGE,
    );
    assert.equal(markdown, 'Example:\n\n```ts\nif (x) {\n    y(`a`);\n}\n```');
    assert.equal(text, 'Example:\n\nif (x) {\n    y(`a`);\n}');
    const fenced = extractMainContent('<pre>a\n```\nb</pre>', PAGE).markdown;
    assert.equal(fenced, '````\na\n```\nb\n````');
  });

  test('block quotes, with their paragraphs', () => {
    const { markdown, text } = extractMainContent(
      '<main><blockquote><p>First line.</p><p>Second   line.</p></blockquote></main>',
      PAGE,
    );
    assert.equal(markdown, '> First line.\n>\n> Second line.');
    assert.equal(text, 'First line.\n\nSecond line.');
  });

  test('whitespace collapses outside pre, entities are decoded', () => {
    const { text } = extractMainContent('<p>  a\n\n   b\t&lt;c&gt;&nbsp;d  </p>', PAGE);
    assert.equal(text, 'a b <c>\u00a0d');
  });
});

describe('extractMainContent: links and images', () => {
  test('relative links are made absolute against the page URL', () => {
    const { markdown, text } = extractMainContent(
      '<p>See <a href="../other.html">the other story</a> and <a href="#top">top</a>, not <a href="javascript:void(0)">this</a>.</p>',
      PAGE,
    );
    assert.equal(
      markdown,
      'See [the other story](https://news.example.com/2024/other.html) and [top](https://news.example.com/2024/05/story.html#top), not this.',
    );
    assert.equal(text, 'See the other story and top, not this.');
  });

  test('<base href> sets the base of links and images', () => {
    const html =
      '<head><base href="https://cdn.example.org/docs/"></head><p>Read <a href="guide.html">the guide</a> <img src="img/a.png" alt="A chart"></p>';
    const { markdown } = extractMainContent(html, PAGE, { images: true });
    assert.equal(
      markdown,
      'Read [the guide](https://cdn.example.org/docs/guide.html) ![A chart](https://cdn.example.org/docs/img/a.png)',
    );
  });

  test('images only with images: true', () => {
    const html = '<p>Look: <img src="/pic.jpg" alt="the pic"> nice.</p>';
    assert.equal(extractMainContent(html, PAGE).markdown, 'Look: nice.');
    assert.equal(
      extractMainContent(html, PAGE, { images: true }).markdown,
      'Look: ![the pic](https://news.example.com/pic.jpg) nice.',
    );
  });
});

describe('extractMainContent: metadata', () => {
  test('title, description, author, times, site name, og, canonical, language and JSON-LD types', () => {
    const { metadata } = extractMainContent(NEWS_PAGE, PAGE);
    assert.equal(metadata.title, 'Harbour bridge to be rebuilt | Example News');
    assert.equal(metadata.description, 'The council approved the rebuild.');
    assert.equal(metadata.author, 'Jane Doe');
    assert.equal(metadata.publishedTime, '2024-05-14T09:00:00Z');
    assert.equal(metadata.modifiedTime, '2024-05-14T12:30:00Z');
    assert.equal(metadata.siteName, 'Example News');
    assert.equal(metadata.language, 'en-GB');
    assert.equal(metadata.canonicalUrl, 'https://news.example.com/2024/05/story.html?utm_source=x');
    assert.deepEqual(metadata.og, {
      title: 'Harbour bridge to be rebuilt',
      type: 'article',
      site_name: 'Example News',
    });
    assert.deepEqual(metadata.jsonLdTypes, ['NewsArticle', 'WebPage', 'ItemPage']);
  });

  test('JSON-LD and <time> fill what the meta tags do not say', () => {
    const html = `<html><head>
      <script type="application/ld+json">{"@type": "BlogPosting", "author": [{"@type": "Person", "name": "Ann"}],
        "datePublished": "2023-01-02", "dateModified": "2023-02-03", "publisher": {"name": "Ann's Blog"}}</script>
      <script type="application/ld+json">{ not json</script>
      </head><body><p>Text of the post.</p></body></html>`;
    const { metadata } = extractMainContent(html, PAGE);
    assert.equal(metadata.author, 'Ann');
    assert.equal(metadata.publishedTime, '2023-01-02');
    assert.equal(metadata.modifiedTime, '2023-02-03');
    assert.equal(metadata.siteName, "Ann's Blog");
    assert.deepEqual(metadata.jsonLdTypes, ['BlogPosting']);
    const timed = extractMainContent(
      '<article><time datetime="2022-12-24">Christmas Eve</time><p>Text.</p></article>',
      PAGE,
    );
    assert.equal(timed.metadata.publishedTime, '2022-12-24');
  });

  test('word count is the words of the main content', () => {
    const { metadata, text } = extractMainContent(NEWS_PAGE, PAGE);
    const expected = text.split(/\s+/).filter((w) => w !== '').length;
    assert.equal(metadata.wordCount, expected);
    assert.equal(extractMainContent('<p>one two  three</p>', PAGE).metadata.wordCount, 3);
  });
});

describe('extractMainContent: hostile input', () => {
  test('100,000-deep nesting returns quickly, flattened and truncated', () => {
    const html = `<p>Before the nesting.</p>${'<div>'.repeat(100_000)}deep${'</div>'.repeat(100_000)}`;
    const started = performance.now();
    const result = extractMainContent(html, PAGE);
    assert.ok(performance.now() - started < 2000);
    assert.ok(result.truncated?.includes('nested'), result.truncated);
    assert.ok(result.text.includes('Before the nesting.'));
    const flattened = extractMainContent(
      `${'<div>'.repeat(800)}<p>deep text</p>${'</div>'.repeat(800)}`,
      PAGE,
    );
    assert.equal(flattened.text, 'deep text');
    assert.match(flattened.truncated ?? '', /flattened/);
  });

  test('a 200×200 table stops at the cell cap', () => {
    const row = `<tr>${'<td>cell</td>'.repeat(200)}</tr>`;
    const started = performance.now();
    const result = extractMainContent(`<table>${row.repeat(200)}</table>`, PAGE, { maxTableCells: 1000 });
    assert.ok(performance.now() - started < 2000);
    assert.match(result.truncated ?? '', /1000 table cells/);
    const cells = result.text.split(/\s+/).filter((w) => w === 'cell').length;
    assert.ok(cells <= 1000 && cells >= 800, String(cells));
  });

  test('5 MB of text stops at the text cap', () => {
    const html = `<p>${'lorem ipsum '.repeat((5 * 1024 * 1024) / 12)}</p>`;
    const started = performance.now();
    const result = extractMainContent(html, PAGE, { maxTextChars: 100_000 });
    assert.ok(performance.now() - started < 2000);
    assert.match(result.truncated ?? '', /100000 characters/);
    assert.ok(result.text.length <= 100_000 && result.text.length > 90_000, String(result.text.length));
  });

  test('deeply nested quotes and lists with much text stay fast', () => {
    const text = 'word '.repeat(40_000);
    for (const [open, close] of [
      ['<blockquote>', '</blockquote>'],
      ['<ul><li>', '</li></ul>'],
    ] as const) {
      const started = performance.now();
      const result = extractMainContent(`${open.repeat(499)}${text}${close.repeat(499)}`, PAGE);
      assert.ok(performance.now() - started < 2000);
      assert.ok(result.text.startsWith('word word'));
    }
  });

  test('never throws on broken markup', () => {
    const inputs = [
      '',
      '<',
      '</p></div></table>',
      '<table><td>x',
      '<ul><li>a<li>b',
      '<pre>',
      '<a href="http://[::1">bad url</a>',
      '<base href="::::"><a href="x">x</a>',
      '<script type="application/ld+json">[[[[[[[[[[1]]]]]]]]]]</script>',
      '<h9>x</h9><h1></h1><ol start="-5"><li>n</li></ol>',
      '\u0000<p>\uFFFD</p>',
    ];
    for (const html of inputs) {
      const result = extractMainContent(html, 'not a url');
      assert.equal(typeof result.markdown, 'string');
      assert.equal(typeof result.text, 'string');
    }
    assert.equal(extractMainContent('<ul><li>a<li>b', PAGE).markdown, '- a\n- b');
  });

  test('JSON-LD nested past 64 levels is not parsed; brackets inside its strings do not count', () => {
    const deep = 65;
    const tooDeep = `{"@type": "TooDeep", "x": ${'['.repeat(deep)}${']'.repeat(deep)}}`;
    const bracketsInText = `{"@type": "Article", "headline": "${'[{'.repeat(100)}\\" ]", "author": "Ann"}`;
    const html = (ld: string) => `<script type="application/ld+json">${ld}</script><p>t</p>`;
    assert.deepEqual(extractMainContent(html(tooDeep), PAGE).metadata.jsonLdTypes, []);
    const read = extractMainContent(html(bracketsInText), PAGE).metadata;
    assert.deepEqual(read.jsonLdTypes, ['Article']);
    assert.equal(read.author, 'Ann');
    const within = `{"@type": "Shallow", "x": ${'['.repeat(60)}${']'.repeat(60)}}`;
    assert.deepEqual(extractMainContent(html(within), PAGE).metadata.jsonLdTypes, ['Shallow']);
  });
});

describe('HtmlReader: the element events of htmlparser2 Parser, from its Tokenizer', () => {
  const WANTED = ['class', 'href', 'hidden'];

  /** Parser's events as lines (text pieces joined, names lower-cased: Parser keeps svg's camelCase). */
  function parserEvents(html: string): string[] {
    const out: string[] = [];
    let text = '';
    const flush = (): void => {
      if (text !== '') out.push(`text ${JSON.stringify(text)}`);
      text = '';
    };
    const parser = new Parser(
      {
        onopentag(name, attribs) {
          flush();
          const kept = WANTED.filter((a) => attribs[a] !== undefined).map((a) => `${a}=${attribs[a]}`);
          out.push(`open ${name.toLowerCase()} ${kept.join(' ')}`.trimEnd());
        },
        onclosetag(name) {
          flush();
          out.push(`close ${name.toLowerCase()}`);
        },
        ontext(value) {
          text += value;
        },
      },
      { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
    );
    parser.write(html);
    parser.end();
    flush();
    return out;
  }

  function readerEvents(html: string): string[] {
    const out: string[] = [];
    let text = '';
    const flush = (): void => {
      if (text !== '') out.push(`text ${JSON.stringify(text)}`);
      text = '';
    };
    const handler: HtmlHandler = {
      reading: true,
      onopentagname: () => true,
      onopentag(name: string, attrs: Attributes) {
        flush();
        const kept = WANTED.flatMap((a, i) => {
          const value = attrs.get(i);
          return value === undefined ? [] : [`${a}=${value}`];
        });
        out.push(`open ${name} ${kept.join(' ')}`.trimEnd());
      },
      onclosetag(name: string) {
        flush();
        out.push(`close ${name}`);
      },
      ontext(source: string, start: number, end: number) {
        text += source.slice(start, end);
      },
    };
    new HtmlReader(html, handler, new Map(WANTED.map((a, i) => [a, i]))).run();
    flush();
    return out;
  }

  test('implied end tags, void elements, stray end tags, forms, svg/math and entities as Parser', () => {
    const cases = [
      '<p>one<p>two<div>three</div>four</p>',
      '<ul><li>a<li>b<ul><li>c</ul><li>d</ul>',
      '<table><tr><td>a<td>b<tr><th>c<td>d</table>',
      '<table><thead><tr><td>h<tbody><tr><td>x<tfoot><tr><td>f</table>',
      '<dl><dt>term<dd>def<dt>term 2</dl>',
      '<select><option>a<option>b<optgroup><option>c</select>after',
      '<h1>one<h2>two</h2><p>p<h3>three',
      '<a href="/1">one<a href="/2">two</a>',
      '<p>a<br>b</br>c<img src=x>d<hr>e',
      '</p>x</div>y</span>',
      '<form class="f"><form class="inner"><p>in</form>out</form>end',
      '<svg><style>p { }</style><path/><title>t</title><foreignObject><p>html</p></foreignObject></svg>after',
      '<svg/><p>after self-closed svg</p><math><mi>x<mo/></math>',
      '<svg><![CDATA[cdata text]]></svg><p><![CDATA[not text]]></p>',
      '<IMAGE src=x><Image/><svg><image href=y></svg>',
      '<DIV CLASS="A" class="b" Hidden HREF="/x?a=1&amp;b=2">x &amp; y &lt;z&gt; &nbsp;&#x41;&copy</DIV>',
      '<script>if (a < b) { document.write("</div>") }</script><style>p{}</style><textarea><p>t</textarea>',
      '<title>A &amp; B</title><noscript><p>x</p></noscript><xmp><b></xmp><plaintext><p>rest',
      '<!doctype html><!-- c --><?php x ?><div>text<!-- a -- b --></div>',
      '<ruby>a<rt>b<rp>c</ruby><p>x<address>y</address>',
      '<body><head><link rel=x><script>s</script><body>b',
      '<div><p>unclosed <b>bold <i>both</div>tail',
      '<p>a<input value=1><button>b<select><option>o</select></button>',
      '<div class="x',
      '<p>text at the end &amp',
    ];
    for (const html of cases) assert.deepEqual(readerEvents(html), parserEvents(html), html);
  });

  test('an end tag without an open element is dismissed without scanning the stack', () => {
    const html = `${'<div>'.repeat(1990)}${'</span>'.repeat(300_000)}<p>after</p>`;
    const started = performance.now();
    const result = extractMainContent(html, PAGE);
    assert.ok(performance.now() - started < 1000, `${performance.now() - started} ms`);
    assert.ok(result.text.endsWith('after'), result.text);
  });
});

describe('extractMainContent: implied end tags', () => {
  test('p, li, cells, rows and dt/dd close without their end tags', () => {
    const { markdown } = extractMainContent(
      '<main><p>one<p>two<ul><li>a<li>b</ul><table><tr><th>h1<th>h2<tr><td>c1<td>c2</table><dl><dt>t<dd>d</dl></main>',
      PAGE,
    );
    assert.equal(markdown, 'one\n\ntwo\n\n- a\n- b\n\n| h1 | h2 |\n| --- | --- |\n| c1 | c2 |\n\nt\n\nd');
  });

  test('a block start tag closes an open paragraph; `</p>` alone is an empty p, `</br>` a br', () => {
    const { markdown } = extractMainContent('<main><p>para<div>block</div>after</p>x</br>y</main>', PAGE);
    assert.equal(markdown, 'para\n\nblock\n\nafter\n\nx  \ny');
  });

  test('void elements hold no content; options, svg and a nested form are handled', () => {
    const html = `<main><p>${STORY[0]}<img src="/a.png">${STORY[1]}</p><select><option>opt one<option>opt two</select>
      <p>${STORY[2]}</p><svg><style>svg text</style><path/></svg><image src="/b.png">
      <form><p>Form text.</p><form></form><p>${STORY[3]}</p></main>`;
    assert.equal(extractMainContent(html, PAGE).text, `${STORY[0]}${STORY[1]}\n\n${STORY[2]}\n\n${STORY[3]}`);
    const { markdown } = extractMainContent(html, PAGE, { images: true });
    assert.ok(markdown.includes(`${STORY[0]}![](https://news.example.com/a.png)${STORY[1]}`), markdown);
    assert.ok(markdown.includes('![](https://news.example.com/b.png)'), markdown);
  });
});
