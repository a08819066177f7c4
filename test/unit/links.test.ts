import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createLinkExtractor,
  extractLinks,
  type LinkExtractionResult,
} from '../../lambdas/core/content/index.ts';

const PAGE = 'https://shop.example.com/catalog/shoes/index.html?page=2#reviews';

function urls(result: LinkExtractionResult): string[] {
  return result.links.map((l) => l.url);
}

/** A page in the style of a real CMS template, with the usual sloppiness. */
const REALISTIC = `<!DOCTYPE html>
<HTML lang="en">
<HEAD>
  <META charset="utf-8">
  <TITLE>Shoes &amp; boots — <a href="/not-a-link-title">Shop</a></TITLE>
  <LINK REL="stylesheet" HREF="/static/site.css">
  <link rel="Canonical" href="/catalog/shoes/?utm_source=feed#top">
  <link rel="alternate" hreflang="de" href="https://shop.example.de/katalog/schuhe/">
  <script type="text/javascript">
    var tpl = '<a href="/not-a-link-script">x</a>';
    document.write("<a href='/not-a-link-write'>");
  </script>
  <style>a[href="/not-a-link-style"] { color: red }</style>
  <!-- <a href="/not-a-link-comment">old nav</a> -->
</HEAD>
<BODY class=catalog>
  <nav>
    <A HREF="/">Home</A> |
    <a href=/catalog/>Catalog</a> |
    <a href='/catalog/shoes/'>Shoes</a> |
    <a href="../boots/">Boots</a>
    <a href="//cdn.example.net/lookbook.pdf">Lookbook</a>
  </nav>
  <main>
    <ul class="products">
      <li><a href="item-42.html?color=red&amp;size=9&utm_campaign=spring">Red runner</a>
      <li><a href="item-43.html" title="unclosed li above">Blue runner
      <li><a href="https://Shop.Example.com:443/catalog/shoes/item-42.html?color=red&size=9#photos">Red runner again</a>
    </ul>
    <p>Questions? <a href="mailto:help@example.com">Mail us</a>, <a href="tel:+15555550100">call</a>
       or <a href="javascript:openChat()">chat</a>. <a href="data:text/plain,hi">data</a></p>
    <a href="#reviews">Jump to reviews</a>
    <a href="?page=3">Next page</a>
    <a href="   /catalog/sale/   ">Sale</a>
    <a rel="NoFollow UGC" href="https://forum.example.org/t/123">Forum post</a>
    <a rel="sponsored nofollow" href="https://ads.example.net/click?id=9">Ad</a>
    <a rel="nofollowing" href="/catalog/rel-not-nofollow">not nofollow</a>
    <a name="anchor-only">no href</a>
    <img src="/map.png" usemap="#m"><map name="m"><AREA SHAPE=rect COORDS="0,0,10,10" HREF="/catalog/area-link"></map>
    <template><a href="/not-a-link-template">tpl</a></template>
    <textarea><a href="/not-a-link-textarea"></textarea>
    <noscript><a href="/catalog/noscript-link">no JS</a></noscript>
  </main>
  <footer><a href="/about" >About</a><a href=/about>About (again)</a></footer>
</BODY>
</HTML>`;

describe('extractLinks on a realistic page', () => {
  const result = extractLinks(REALISTIC, PAGE);

  test('returns the followable links, resolved and normalized, in document order, once each', () => {
    assert.deepEqual(urls(result), [
      'https://shop.example.com/',
      'https://shop.example.com/catalog/',
      'https://shop.example.com/catalog/shoes/',
      'https://shop.example.com/catalog/boots/',
      'https://cdn.example.net/lookbook.pdf',
      'https://shop.example.com/catalog/shoes/item-42.html?color=red&size=9',
      'https://shop.example.com/catalog/shoes/item-43.html',
      'https://shop.example.com/catalog/shoes/index.html?page=2',
      'https://shop.example.com/catalog/shoes/index.html?page=3',
      'https://shop.example.com/catalog/sale/',
      'https://forum.example.org/t/123',
      'https://ads.example.net/click?id=9',
      'https://shop.example.com/catalog/rel-not-nofollow',
      'https://shop.example.com/catalog/area-link',
      'https://shop.example.com/catalog/noscript-link',
      'https://shop.example.com/about',
    ]);
  });

  test('never extracts hrefs from title, script, style, comments, template or textarea', () => {
    assert.ok(!urls(result).some((u) => u.includes('not-a-link')), urls(result).join('\n'));
  });

  test('marks rel=nofollow links, case-insensitively, by whole token', () => {
    const nofollow = result.links.filter((l) => l.nofollow).map((l) => l.url);
    assert.deepEqual(nofollow, ['https://forum.example.org/t/123', 'https://ads.example.net/click?id=9']);
  });

  test('tags area links as area', () => {
    assert.deepEqual(
      result.links.filter((l) => l.tag === 'area').map((l) => l.url),
      ['https://shop.example.com/catalog/area-link'],
    );
  });

  test('records the canonical, resolved and normalized', () => {
    assert.equal(result.canonical, 'https://shop.example.com/catalog/shoes/');
  });

  test('counts the mailto:, tel:, javascript: and data: links as dropped', () => {
    assert.equal(result.dropped, 4);
    assert.deepEqual(result.droppedByCode, { 'invalid-url': 0, 'unsupported-scheme': 4, 'url-too-long': 0 });
  });

  test('reports no base and no meta robots when the page has none', () => {
    assert.equal(result.base, undefined);
    assert.deepEqual(result.metaRobots, { noindex: false, nofollow: false });
  });
});

describe('resolution', () => {
  test('relative, absolute, protocol-relative, query-only and fragment-only links', () => {
    const html = `<a href="a">1</a><a href="./b/../c">2</a><a href="/root">3</a><a href="//other.example/x">4</a>
      <a href="http://abs.example/y">5</a><a href="?q=1">6</a><a href="#frag">7</a><a href="">8</a><a href="../../up">9</a>`;
    assert.deepEqual(urls(extractLinks(html, 'http://example.com/dir/page.html?old=1')), [
      'http://example.com/dir/a',
      'http://example.com/dir/c',
      'http://example.com/root',
      'http://other.example/x',
      'http://abs.example/y',
      'http://example.com/dir/page.html?q=1',
      'http://example.com/dir/page.html?old=1',
      'http://example.com/up',
    ]);
  });

  test('protocol-relative links take the page scheme', () => {
    assert.deepEqual(urls(extractLinks('<a href="//cdn.example/x">', 'https://example.com/')), [
      'https://cdn.example/x',
    ]);
  });

  test('decodes entities in href (but not legacy entities before = in attributes, like browsers)', () => {
    const html = `<a href="/s?a=1&amp;b=2&#38;c=3&#x26;d=4">1</a><a href="/caf&eacute;">2</a><a href="/p?x=1&copy=2">3</a>`;
    assert.deepEqual(urls(extractLinks(html, 'http://example.com/')), [
      'http://example.com/s?a=1&b=2&c=3&d=4',
      'http://example.com/caf%C3%A9',
      'http://example.com/p?x=1&copy=2',
    ]);
  });

  test('trims whitespace and removes tabs and newlines inside href', () => {
    const html = '<a href="\n\t  /a\n/b\t  \r\n">x</a>';
    assert.deepEqual(urls(extractLinks(html, 'http://example.com/')), ['http://example.com/a/b']);
  });

  test('drops links that do not resolve, counting them', () => {
    const html = '<a href="http://[::1">1</a><a href="http://exa mple.com/">2</a><a href="/ok">3</a>';
    const result = extractLinks(html, 'http://example.com/');
    assert.deepEqual(urls(result), ['http://example.com/ok']);
    assert.equal(result.dropped, 2);
    assert.equal(result.droppedByCode['invalid-url'], 2);
  });

  test('drops links longer than the URL cap, counting them', () => {
    const html = `<a href="/${'x'.repeat(3000)}">long</a><a href="/short">short</a>`;
    const result = extractLinks(html, 'http://example.com/');
    assert.deepEqual(urls(result), ['http://example.com/short']);
    assert.equal(result.droppedByCode['url-too-long'], 1);
    const custom = extractLinks(html, 'http://example.com/', { normalize: { maxUrlLength: 10_000 } });
    assert.equal(custom.links.length, 2);
  });

  test('throws on a page URL that is not absolute (a programming error, not page content)', () => {
    assert.throws(() => extractLinks('<a href="/x">', '/relative'), TypeError);
  });
});

describe('<base href>', () => {
  test('resolves links against the first base, itself resolved against the page URL', () => {
    const html = `<head><base href="/static/v2/"><base href="https://ignored.example/"></head>
      <body><a href="img/a.html">a</a><a href="/root">b</a><a href="#top">c</a></body>`;
    const result = extractLinks(html, 'https://example.com/articles/1');
    assert.equal(result.base, 'https://example.com/static/v2/');
    assert.deepEqual(urls(result), [
      'https://example.com/static/v2/img/a.html',
      'https://example.com/root',
      'https://example.com/static/v2/',
    ]);
  });

  test('applies to links that come before it, as in browsers', () => {
    const html = '<a href="early">e</a><base href="http://mirror.example/sub/"><a href="late">l</a>';
    assert.deepEqual(urls(extractLinks(html, 'http://example.com/')), [
      'http://mirror.example/sub/early',
      'http://mirror.example/sub/late',
    ]);
  });

  test('skips a base without href and ignores a base that is not http(s)', () => {
    const html = '<base target="_blank"><base href="javascript:void(0)"><base href="/b/"><a href="x">x</a>';
    const result = extractLinks(html, 'http://example.com/a/');
    // The first base WITH href is the javascript: one; it is unusable, so the page URL is the base.
    assert.equal(result.base, undefined);
    assert.deepEqual(urls(result), ['http://example.com/a/x']);
  });
});

describe('nofollow', () => {
  test('dedup keeps the first position and is followable if any occurrence is', () => {
    const html = `<a rel="nofollow" href="/a">1</a><a href="/b">2</a><a href="/a#x">3</a><a rel=nofollow href="/b">4</a>`;
    assert.deepEqual(extractLinks(html, 'http://example.com/').links, [
      { url: 'http://example.com/a', nofollow: false, tag: 'a' },
      { url: 'http://example.com/b', nofollow: false, tag: 'a' },
    ]);
  });

  test('meta robots nofollow marks every link, wherever the meta is', () => {
    const html = `<a href="/before">b</a><META NAME="Robots" CONTENT="NOINDEX, NOFOLLOW"><a href="/after">a</a>`;
    const result = extractLinks(html, 'http://example.com/');
    assert.deepEqual(result.metaRobots, { noindex: true, nofollow: true });
    assert.ok(result.links.length === 2 && result.links.every((l) => l.nofollow));
  });

  test('meta robots "none" means noindex and nofollow; "noindex" alone keeps links followable', () => {
    assert.deepEqual(extractLinks('<meta name="robots" content="none">', 'http://e.com/').metaRobots, {
      noindex: true,
      nofollow: true,
    });
    const noindex = extractLinks('<meta name=robots content=noindex><a href=/x>x</a>', 'http://e.com/');
    assert.deepEqual(noindex.metaRobots, { noindex: true, nofollow: false });
    assert.equal(noindex.links[0]?.nofollow, false);
  });

  test('only the generic robots meta is read', () => {
    const result = extractLinks('<meta name="googlebot" content="nofollow"><a href="/x">', 'http://e.com/');
    assert.deepEqual(result.metaRobots, { noindex: false, nofollow: false });
  });

  test('followNofollow ignores the hints for links but still reports meta robots', () => {
    const html = '<meta name="robots" content="nofollow"><a rel="nofollow" href="/a">a</a><a href="/b">b</a>';
    const result = extractLinks(html, 'http://example.com/', { followNofollow: true });
    assert.deepEqual(result.metaRobots, { noindex: false, nofollow: true });
    assert.ok(result.links.every((l) => !l.nofollow));
    assert.equal(result.links.length, 2);
  });
});

describe('canonical', () => {
  test('takes the first rel=canonical (token list), resolved against the base', () => {
    const html = `<base href="https://example.com/en/"><link rel="alternate canonical" href="page?utm_medium=x">
      <link rel="canonical" href="/second">`;
    assert.equal(extractLinks(html, 'https://example.com/x').canonical, 'https://example.com/en/page');
  });

  test('is absent when missing or not http(s)', () => {
    assert.equal(extractLinks('<a href="/x">', 'https://example.com/').canonical, undefined);
    assert.equal(
      extractLinks('<link rel=canonical href="javascript:x">', 'https://example.com/').canonical,
      undefined,
    );
  });
});

describe('malformed markup', () => {
  test('survives unclosed tags, unquoted and valueless attributes, stray < and nested anchors', () => {
    const html = `<div><p>text < more <a href=/one class=x>one<a href="/two" download>two</p>
      <a href = "/three" >three</a><a HREF='/four'TITLE=x>four</a><a href=/five/>five</a>
      <a href>empty value</a><a  href="/six"<b>six</b></a><A hReF="/Seven">7</A>`;
    assert.deepEqual(urls(extractLinks(html, 'http://example.com/')), [
      'http://example.com/one',
      'http://example.com/two',
      'http://example.com/three',
      'http://example.com/four',
      'http://example.com/five/',
      'http://example.com/',
      'http://example.com/six',
      'http://example.com/Seven',
    ]);
  });

  test('the first of duplicate href attributes wins, as in browsers', () => {
    assert.deepEqual(urls(extractLinks('<a href="/first" href="/second">x</a>', 'http://example.com/')), [
      'http://example.com/first',
    ]);
  });

  test('an unterminated script hides the rest of the page, as in browsers', () => {
    const html = '<a href="/before">b</a><script>var x = 1; <a href="/inside">';
    assert.deepEqual(urls(extractLinks(html, 'http://example.com/')), ['http://example.com/before']);
  });

  test('nested templates are skipped up to their matching end tag', () => {
    const html =
      '<a href="/a">a</a><template><template></template><a href="/hidden"></template><a href="/b">';
    assert.deepEqual(urls(extractLinks(html, 'http://example.com/')), [
      'http://example.com/a',
      'http://example.com/b',
    ]);
  });
});

function bigPage(): { html: string; items: number } {
  const parts = ['<!doctype html><html><head><title>Big</title></head><body>'];
  let length = parts[0]?.length ?? 0;
  let items = 0;
  while (length < 1_048_576) {
    const piece = `<div class="row"><a href="/item/${items}?ref=list&amp;utm_source=feed">Item ${items}</a> <a href="/nav/home">Home</a>
      <p>Lorem ipsum dolor sit amet, <b>consectetur</b> adipiscing elit &mdash; sed do eiusmod.</p><!-- row ${items} --></div>\n`;
    parts.push(piece);
    length += piece.length;
    items++;
  }
  parts.push('</body></html>');
  return { html: parts.join(''), items };
}

describe('large pages and chunked input', () => {
  const { html, items } = bigPage();

  test('a 1 MB page gives every link, correctly and fast', () => {
    assert.ok(html.length >= 1_048_576);
    const started = performance.now();
    const result = extractLinks(html, 'https://example.com/list');
    const ms = performance.now() - started;
    assert.equal(result.links.length, items + 1);
    assert.equal(result.links[0]?.url, 'https://example.com/item/0?ref=list');
    assert.equal(result.links[1]?.url, 'https://example.com/nav/home');
    assert.equal(result.links.at(-1)?.url, `https://example.com/item/${items - 1}?ref=list`);
    assert.equal(result.dropped, 0);
    // Around 0.1 s on a laptop; the bound only catches accidental quadratic behaviour.
    assert.ok(ms < 3000, `took ${ms.toFixed(0)} ms`);
  });

  test('the 1 MB page fed in odd-sized chunks gives the same result', () => {
    const whole = extractLinks(html, 'https://example.com/list');
    const extractor = createLinkExtractor('https://example.com/list');
    let offset = 0;
    let size = 1;
    while (offset < html.length) {
      extractor.write(html.slice(offset, offset + size));
      offset += size;
      size = (size * 7 + 3) % 4099; // 1, 10, 73, 514, ... varied sizes that split tags anywhere
      if (size === 0) size = 1;
    }
    assert.deepEqual(extractor.end(), whole);
  });

  test('splitting the realistic page at every position gives the same result', () => {
    const whole = extractLinks(REALISTIC, PAGE);
    for (let cut = 0; cut <= REALISTIC.length; cut++) {
      const extractor = createLinkExtractor(PAGE);
      extractor.write(REALISTIC.slice(0, cut));
      extractor.write(REALISTIC.slice(cut));
      assert.deepEqual(extractor.end(), whole, `differs when cut at ${cut}`);
    }
  });

  test('one character at a time gives the same result, entities and all', () => {
    const whole = extractLinks(REALISTIC, PAGE);
    const extractor = createLinkExtractor(PAGE);
    for (const ch of REALISTIC) extractor.write(ch);
    assert.deepEqual(extractor.end(), whole);
  });

  test('an extractor is single use', () => {
    const extractor = createLinkExtractor('http://example.com/');
    extractor.write('<a href="/x">');
    extractor.end();
    assert.throws(() => extractor.write('<a href="/y">'), /after end/);
    assert.throws(() => extractor.end(), /twice/);
  });
});

describe('extractLinks reads as the incremental (Parser) extractor does', () => {
  const PAGES = [
    '<template><a href="/in-template"></a></template><a href="/after">x</a>',
    '<svg><a href="/svg-link"/><image href="/img.png"/></svg><a href=/plain>p</a>',
    '<form><form><a href="/in-nested-form"></form></form><p><a href="/p1"><p><a href="/p2">',
    '<noscript><a href="/noscript"></a></noscript><script>"<a href=/script>"</script><textarea><a href=/ta></textarea>',
    '<base href="/sub/"><A HREF="rel"></A><area href=area.html><link rel="Canonical Alternate" href="/canon">',
    '<meta name=ROBOTS content="noindex, nofollow"><a href="x&amp;y=1&lt;">e</a><a href="&#x2F;hex">h</a>',
    '<a href="/unclosed"><table><tr><td><a href="/cell"></td><td><a href=/cell2></table><a rel="NoFollow" href=/nf>',
  ];
  for (const [i, html] of PAGES.entries()) {
    test(`tricky page ${i + 1}`, () => {
      const extractor = createLinkExtractor('https://example.com/dir/page');
      extractor.write(html);
      assert.deepEqual(extractLinks(html, 'https://example.com/dir/page'), extractor.end());
    });
  }
});
