// The names of --markdown-dir files (cli/markdown-names.ts): readable names for ordinary URLs, and for
// any set of URLs (a property test over thousands of seeded adversarial sets) names that are unique
// as case-insensitive file systems compare them, valid on Linux, macOS and Windows, and inside the
// directory; the cost of naming stays linear in the URLs, colliding ones included.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { MarkdownNames, markdownPath } from '../../cli/markdown-names.ts';
import { MARKDOWN_NAME_LIMITS } from '../../lambdas/core/base/index.ts';
import { prng, urlSet } from '../fixtures/adversarial-urls.ts';

const hex = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 8);
const bytes = (text: string) => Buffer.byteLength(text);

describe('markdownPath', () => {
  it('names a file from the URL: host and port, path, index for a directory, page extensions dropped', () => {
    assert.equal(markdownPath('http://example.com/'), 'example.com/index.md');
    assert.equal(markdownPath('http://example.com'), 'example.com/index.md');
    assert.equal(markdownPath('http://127.0.0.1:8080/docs/'), '127.0.0.1_8080/docs/index.md');
    assert.equal(markdownPath('https://example.com/docs/intro.html'), 'example.com/docs/intro.md');
    assert.equal(markdownPath('https://example.com/a/b'), 'example.com/a/b.md');
    assert.equal(markdownPath('https://example.com/report.pdf'), 'example.com/report.pdf.md');
    assert.equal(markdownPath('https://example.com/caf%C3%A9/'), 'example.com/café/index.md');
  });

  it('keeps queries apart and stays inside the directory whatever the URL holds', () => {
    const a = markdownPath('https://example.com/list?page=1');
    const b = markdownPath('https://example.com/list?page=2');
    assert.match(a, /^example\.com\/list_[0-9a-f]{8}\.md$/);
    assert.notEqual(a, b);
    assert.equal(markdownPath('https://example.com/a/..%2f..%2fetc'), 'example.com/a/.._.._etc.md');
    assert.equal(markdownPath('https://example.com/a%2Fb%5Cc:d'), 'example.com/a_b_c_d.md');
    assert.equal(markdownPath('https://example.com/%2e%2e/x'), 'example.com/x.md');
    assert.equal(markdownPath('https://example.com/a/%2e%2e%2e/x'), 'example.com/a/.._/x.md');
  });

  it('never names a directory as a file is named: directories never end in .md', () => {
    assert.equal(markdownPath('https://example.com/a'), 'example.com/a.md');
    assert.equal(markdownPath('https://example.com/a.md/x'), 'example.com/a.md_/x.md');
    assert.equal(markdownPath('https://example.com/A.MD/x'), 'example.com/A.MD_/x.md');
    assert.equal(markdownPath('https://x.md/'), 'x.md_/index.md');
  });

  it('makes names Windows takes: no device names, forbidden characters or trailing dot or space', () => {
    assert.equal(markdownPath('https://example.com/CON'), 'example.com/_CON.md');
    assert.equal(markdownPath('https://example.com/nul.txt'), 'example.com/_nul.txt.md');
    assert.equal(markdownPath('https://example.com/com1/lpt9.html'), 'example.com/_com1/_lpt9.md');
    assert.equal(markdownPath('https://example.com/aux%20.x/'), 'example.com/_aux .x/index.md');
    assert.equal(markdownPath('https://con/'), '_con/index.md');
    assert.equal(markdownPath('https://example.com/console'), 'example.com/console.md');
    assert.equal(markdownPath('https://example.com/a./b%20/c'), 'example.com/a_/b_/c.md');
    assert.equal(markdownPath('https://example.com/%3C%3E%22%7C%3F%2A%01%7F'), 'example.com/________.md');
  });

  it('cuts a long name to its byte cap, whatever its characters take in UTF-8', () => {
    for (const char of ['x', 'é', '€', '😀']) {
      const path = markdownPath(`https://example.com/${encodeURIComponent(char.repeat(300))}`);
      const file = path.split('/')[1]!;
      assert.ok(bytes(file) <= 255, `${char}: ${bytes(file)} bytes`);
      assert.match(file, /_[0-9a-f]{8}\.md$/);
      assert.ok(file.startsWith(char.repeat(10)), file);
    }
    // 100 three-byte characters: 300 bytes, over the 255 every file system allows.
    const euro = markdownPath(`https://example.com/${'€'.repeat(100)}`).split('/')[1]!;
    assert.ok(bytes(euro) <= 255, `${bytes(euro)} bytes`);
  });

  it('folds directories past the path cap into one hashed directory', () => {
    const deep = `https://example.com/${'abcdefghij/'.repeat(100)}page`;
    const path = markdownPath(deep);
    assert.ok(bytes(path) <= MARKDOWN_NAME_LIMITS.pathBytes, `${bytes(path)} bytes`);
    assert.match(path, /^example\.com\/(abcdefghij\/)+_[0-9a-f]{8}\/page\.md$/);
    assert.notEqual(markdownPath(`${deep.slice(0, -5)}x/page`), path);
  });
});

describe('MarkdownNames', () => {
  it('gives each URL its own name, checking suffixes against every name already taken', () => {
    const names = new MarkdownNames();
    const page = 'https://example.com/b.html';
    const taken = [
      names.claim(`https://example.com/b_${hex(page)}`),
      names.claim('https://example.com/b'),
      names.claim(page),
      names.claim('https://example.com/B'),
      names.claim('https://example.com/a'),
      names.claim('https://example.com/a.md/x'),
      names.claim('https://example.com/a.md'),
    ];
    assert.equal(taken[0], `example.com/b_${hex(page)}.md`);
    assert.equal(taken[1], 'example.com/b.md');
    assert.equal(new Set(taken.map((name) => name.toLowerCase())).size, taken.length, taken.join(' '));
  });

  it('treats names that differ only in case or Unicode normalization as one', () => {
    const names = new MarkdownNames();
    const nfc = names.claim('https://example.com/caf%C3%A9'); // é
    const nfd = names.claim('https://example.com/cafe%CC%81'); // e + combining acute
    const upper = names.claim('https://example.com/CAF%C3%89');
    assert.equal(nfc, 'example.com/café.md');
    assert.match(nfd, /^example\.com\/cafe\u0301_[0-9a-f]{8}\.md$/);
    assert.match(upper, /^example\.com\/CAFÉ_[0-9a-f]{8}\.md$/);
  });

  it('throws for a record whose URL is not a URL (the writer reports it)', () => {
    assert.throws(() => new MarkdownNames().claim('not a url'), /Invalid URL/);
  });
});

const DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)$/i;

/** Why `name` is not a valid name on Linux, macOS or Windows, or undefined. */
function invalidName(name: string): string | undefined {
  if (name === '' || name === '.' || name === '..') return 'empty or a dot segment';
  if (bytes(name) > 255) return `${bytes(name)} UTF-8 bytes`;
  if (name.normalize('NFD').length > 255) return 'over 255 UTF-16 units in NFD';
  for (const char of name) {
    const code = char.codePointAt(0)!;
    if (code < 0x20 || '<>:"/\\|?*'.includes(char)) return `has ${JSON.stringify(char)}`;
    if (code >= 0xd800 && code <= 0xdfff) return 'has a lone surrogate';
  }
  if (/[. ]$/.test(name)) return 'ends in a dot or space';
  if (DEVICE.test(name.split('.')[0]!.trimEnd())) return 'a Windows device name';
  return undefined;
}

/** What the property asserts of one set's names; the message names the URLs at fault. */
function checkNames(urls: string[], names: string[]): void {
  const root = resolve('/md-root');
  const files = new Map<string, string>();
  const directories = new Set<string>();
  // Case-insensitive file systems differ in how they fold: two foldings, both must keep names apart.
  const folds = [
    (p: string) => p.normalize('NFC').toLowerCase(),
    (p: string) => p.normalize('NFD').toUpperCase(),
  ];
  for (const [i, name] of names.entries()) {
    const url = urls[i]!;
    assert.ok(name.endsWith('.md'), `${url} -> ${name}`);
    assert.ok(bytes(name) <= MARKDOWN_NAME_LIMITS.pathBytes, `${url} -> ${bytes(name)} bytes`);
    const parts = name.split('/');
    for (const part of parts) {
      const invalid = invalidName(part);
      assert.equal(invalid, undefined, `${url} -> ${JSON.stringify(part)}: ${invalid}`);
    }
    assert.ok(resolve(root, ...parts).startsWith(`${root}${sep}`), `${url} -> ${name} leaves the directory`);
    for (const fold of folds) {
      const key = `${fold.name}:${fold(name)}`;
      const other = files.get(key);
      assert.equal(other, undefined, `${url} and ${other} share ${name}`);
      files.set(key, url);
      for (let end = 1; end < parts.length; end++)
        directories.add(`${fold.name}:${fold(parts.slice(0, end).join('/'))}`);
    }
  }
  for (const key of files.keys()) assert.ok(!directories.has(key), `${key} is a file and a directory`);
}

describe('MarkdownNames on adversarial URL sets (property)', () => {
  it('names every page of 2,000 seeded sets uniquely, validly and inside the directory', () => {
    let urls = 0;
    for (let seed = 1; seed <= 2000; seed++) {
      const set = urlSet(prng(seed));
      const names = new MarkdownNames();
      try {
        checkNames(
          set,
          set.map((url) => names.claim(url)),
        );
      } catch (error) {
        throw new Error(`seed ${seed}: ${error instanceof Error ? error.message : error}`);
      }
      urls += set.length;
    }
    assert.ok(urls > 30_000, `${urls} URLs`);
  });
});

describe('the cost of naming', () => {
  /**
   * How much longer the work on 4n takes than on n: the fastest of five runs of each, taken in turns
   * so that a burst of load on the machine slows both alike.
   */
  function ratio(small: () => void, large: () => void): number {
    let bestSmall = Number.POSITIVE_INFINITY;
    let bestLarge = Number.POSITIVE_INFINITY;
    for (let run = 0; run < 5; run++) {
      for (const [work, record] of [
        [small, (ms: number) => (bestSmall = Math.min(bestSmall, ms))],
        [large, (ms: number) => (bestLarge = Math.min(bestLarge, ms))],
      ] as const) {
        const start = performance.now();
        work();
        record(performance.now() - start);
      }
    }
    return bestLarge / bestSmall;
  }

  /** n URLs that all want one name, each one's first suffix taken by another URL before it. */
  function colliding(n: number): string[] {
    const urls: string[] = [];
    for (let i = 0; i < n; i++) {
      // Case variants of one word: a different URL, one name on a case-insensitive file system.
      const word = [...i.toString(2).padStart(20, '0')]
        .map((bit, j) => (bit === '1' ? 'ABCDEFGHIJKLMNOPQRST'[j] : 'abcdefghijklmnopqrst'[j]))
        .join('');
      const url = `http://h.test/${word}`;
      urls.push(`http://h.test/abcdefghijklmnopqrst_${hex(url)}`, url);
    }
    return urls;
  }

  it('grows linearly with colliding URLs (n against 4n in one run)', (t) => {
    const n = 2_500;
    const small = colliding(n);
    const large = colliding(4 * n);
    const claimAll = (urls: string[]) => () => {
      const names = new MarkdownNames();
      for (const url of urls) names.claim(url);
    };
    const grown = ratio(claimAll(small), claimAll(large));
    t.diagnostic(`4x the URLs: ${grown.toFixed(2)}x the time`);
    // Linear is 4; one round per earlier name (quadratic) would be 16.
    assert.ok(grown < 8, `4x the URLs took ${grown.toFixed(1)}x the time`);
  });

  it('grows linearly with a segment’s length (n against 4n in one run)', (t) => {
    // n = 100,000 characters: a 400,000-character URL, and 1.6 million at 4n.
    const n = 99_999;
    const name = (length: number) => {
      const url = `http://h.test/${'%E2%82%AC'.repeat(length / 3)}/${'x'.repeat(length)}`;
      return () => {
        for (let i = 0; i < 10; i++) markdownPath(url);
      };
    };
    const grown = ratio(name(n), name(4 * n));
    t.diagnostic(`4x the length: ${grown.toFixed(2)}x the time`);
    assert.ok(grown < 8, `4x the length took ${grown.toFixed(1)}x the time`);
  });
});
