/**
 * Listing pages (issue 24): a section index, docs index, product grid or search results page keeps
 * its main region's items as a Markdown list of links, while navigation and footers stay out and
 * articles are rendered as before.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  loadListingPages,
  oursLinks,
  scoreListingPages,
  summariseListing,
} from '../../bench/listing-recall.ts';
import { CONTENT_LIMITS } from '../../lambdas/core/base/index.ts';
import { extractMainContent } from '../../lambdas/core/content/index.ts';

const PAGE = 'https://kitchen.example/cooking/';

const CHROME_TOP = `<header><a href="/">Kitchen</a><nav><ul><li><a href="/cooking/">Cooking</a></li>
<li><a href="/baking/">Baking</a></li><li><a href="/drinks/">Drinks</a></li></ul></nav></header>`;
const CHROME_BOTTOM = `<footer><ul><li><a href="/privacy/">Privacy</a></li><li><a href="/terms/">Terms</a></li>
<li><a href="/contact/">Contact</a></li></ul></footer>`;

function sectionPage(n: number): string {
  const items: string[] = [];
  for (let i = 1; i <= n; i++) items.push(`<li><a href="/cooking/recipe-${i}/">Recipe number ${i}</a></li>`);
  return `<html><head><title>Cooking</title></head><body>${CHROME_TOP}
<main><h1>Cooking</h1><p>All our Cooking articles.</p><ul>${items.join('\n')}</ul></main>
${CHROME_BOTTOM}</body></html>`;
}

describe('a listing page keeps its items', () => {
  test('a section page of an intro and 20 links is the intro and a list of the 20 links (the page of issue 24)', () => {
    const out = extractMainContent(sectionPage(20), PAGE);
    const lines = out.markdown.split('\n');
    assert.deepEqual(lines.slice(0, 4), ['# Cooking', '', 'All our Cooking articles.', '']);
    assert.equal(lines.length, 24);
    assert.equal(lines[4], '- [Recipe number 1](https://kitchen.example/cooking/recipe-1/)');
    assert.equal(lines[23], '- [Recipe number 20](https://kitchen.example/cooking/recipe-20/)');
    assert.ok(out.metadata.wordCount > 60, `word count ${out.metadata.wordCount}`);
  });

  test('navigation and footer links stay out', () => {
    const out = extractMainContent(sectionPage(20), PAGE);
    for (const path of ['/baking/', '/drinks/', '/privacy/', '/terms/', '/contact/']) {
      assert.ok(!out.markdown.includes(`https://kitchen.example${path})`), path);
    }
  });

  test('cards become `- [Title](url) — description`: the linked heading is the title, the rest of the card its description', () => {
    const card = (slug: string, title: string, about: string) =>
      `<div class="card"><a href="/p/${slug}"><img src="/i/${slug}.jpg" alt=""></a>` +
      `<h3><a href="/p/${slug}">${title}</a></h3><p>${about}</p><span class="price">$10</span></div>`;
    const html = `<body>${CHROME_TOP}<div class="grid">${card('a', 'Tent A', 'Light, for one.')}${card(
      'b',
      'Tent B',
      'Roomy, for two.',
    )}${card('c', 'Tent C', 'Tall, for four.')}</div>${CHROME_BOTTOM}</body>`;
    const out = extractMainContent(html, PAGE);
    assert.equal(
      out.markdown,
      [
        '- [Tent A](https://kitchen.example/p/a) — Light, for one. $10',
        '- [Tent B](https://kitchen.example/p/b) — Roomy, for two. $10',
        '- [Tent C](https://kitchen.example/p/c) — Tall, for four. $10',
      ].join('\n'),
    );
    assert.equal(
      out.text,
      'Tent A — Light, for one. $10\nTent B — Roomy, for two. $10\nTent C — Tall, for four. $10',
    );
  });

  test('page text in titles stays text, and only http(s) links are made', () => {
    const html = `<main><ul>
      <li><a href="/a">x](javascript:alert(1)) \`code\` <b>&lt;img src=x&gt;</b></a></li>
      <li><a href="javascript:alert(2)">Not a link</a> — said the page</li>
      <li><a href="mailto:someone@example.com">Mail</a></li>
      <li><a href="/d">[Plain](https://evil.example)</a></li>
    </ul></main>`;
    const out = extractMainContent(html, PAGE);
    assert.equal(
      out.markdown,
      [
        '- [x\\](javascript:alert(1)) \\`code\\` \\<img src=x>](https://kitchen.example/a)',
        '- Not a link — — said the page',
        '- Mail',
        '- [\\[Plain\\](https://evil.example)](https://kitchen.example/d)',
      ].join('\n'),
    );
  });

  test('a description is cut at CONTENT_LIMITS.itemDescriptionChars', () => {
    const long = 'word '.repeat(1_000);
    const items = [1, 2, 3].map((i) => `<li><a href="/r${i}">Title ${i}</a> ${long}</li>`).join('');
    const out = extractMainContent(`<main><ul>${items}</ul></main>`, PAGE);
    const lines = out.markdown.split('\n');
    assert.equal(lines.length, 3);
    for (const line of lines) {
      const about = line.slice(line.indexOf(' — ') + 3);
      assert.ok(about.endsWith('…'), about.slice(-20));
      assert.ok(about.length <= CONTENT_LIMITS.itemDescriptionChars + 1, `${about.length} characters`);
    }
  });
});

describe('an article stays an article', () => {
  test('a "related articles" box after the story does not turn the page into a listing', () => {
    const story = [
      'The council voted on Tuesday, after a long debate, to rebuild the old harbour bridge by 2027.',
      'Engineers had warned for years that the bridge, built in 1931, could not carry modern traffic safely.',
      'Residents, shop owners and the ferry company all spoke at the meeting, most of them in favour.',
      'The work will close the bridge for eighteen months, and a temporary ferry will run every ten minutes.',
      'The ferry company said it would add two boats at rush hour, and keep its fares as they are now.',
    ];
    // more text than the story: only its being a story, chosen apart from the box, keeps it one
    const related = Array.from(
      { length: 12 },
      (_, i) =>
        `<li><a href="/news/other-${i + 1}.html">Another story about the town and its harbour number ${i + 1}</a></li>`,
    ).join('');
    const html = `<body>${CHROME_TOP}<div class="story"><h1>Bridge to be rebuilt</h1>${story
      .map((p) => `<p>${p}</p>`)
      .join('')}<h3>Read more</h3><ul>${related}</ul></div>${CHROME_BOTTOM}</body>`;
    const out = extractMainContent(html, 'https://news.example/2024/bridge.html');
    assert.ok(!out.markdown.includes('other-1.html'), out.markdown);
    assert.ok(!out.markdown.includes('\n- '), out.markdown);
    for (const p of story) assert.ok(out.text.includes(p), p);
  });
});

describe('the listing pages of test/data/listing-pages', () => {
  test('dev split: recall of the main region items is at least 0.95', () => {
    const dev = loadListingPages().filter((page) => page.split === 'dev');
    assert.ok(dev.length >= 24, `${dev.length} pages`);
    const [score] = summariseListing(scoreListingPages(oursLinks, dev));
    assert.equal(score?.split, 'dev');
    assert.ok((score?.recall ?? 0) >= 0.95, `recall ${score?.recall}`);
  });
});
