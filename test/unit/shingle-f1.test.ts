import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { htmlToText, overlap, shingleScore, shingles, tokenize } from '../../bench/shingle-f1.ts';

const close = (actual: number, expected: number, what: string): void =>
  assert.ok(Math.abs(actual - expected) < 1e-12, `${what}: ${actual} != ${expected}`);

describe('tokenize', () => {
  test('lowercases and splits on everything that is not a Unicode letter or digit', () => {
    assert.deepEqual(tokenize('Hello, WORLD! Ünïcode—naïve 42x  café\n\tl’été'), [
      'hello',
      'world',
      'ünïcode',
      'naïve',
      '42x',
      'café',
      'l',
      'été',
    ]);
  });

  test('keeps decomposed letters whole (NFC) and non-Latin scripts', () => {
    assert.deepEqual(tokenize('cafe\u0301 Москва 東京'), ['café', 'москва', '東京']);
  });

  test('punctuation-only and empty text have no tokens', () => {
    assert.deepEqual(tokenize(''), []);
    assert.deepEqual(tokenize(' !!! --- … '), []);
  });
});

describe('shingles', () => {
  test('token 4-grams as a multiset', () => {
    const bag = shingles(tokenize('a b c d a b c d'));
    assert.equal(bag.size, 4);
    assert.equal(bag.get(['a', 'b', 'c', 'd'].join('\u0001')), 2);
    assert.equal(bag.get(['b', 'c', 'd', 'a'].join('\u0001')), 1);
  });

  test('fewer tokens than n gives no shingles; n must be a positive integer', () => {
    assert.equal(shingles(['a', 'b', 'c']).size, 0);
    assert.throws(() => shingles(['a'], 0), RangeError);
  });

  test('overlap is the multiset intersection size', () => {
    const a = new Map([
      ['x', 3],
      ['y', 1],
    ]);
    const b = new Map([
      ['x', 2],
      ['z', 5],
    ]);
    assert.equal(overlap(a, b), 2);
    assert.equal(overlap(b, a), 2);
  });
});

describe('shingleScore', () => {
  test('identical texts score 1, whatever the case, punctuation and whitespace', () => {
    const s = shingleScore(
      'The quick brown fox jumps over the lazy dog.',
      'the QUICK brown\nfox — jumps over the lazy dog',
    );
    assert.deepEqual([s.precision, s.recall, s.f1, s.n], [1, 1, 1, 4]);
    assert.equal(s.matched, 6);
  });

  test('disjoint texts score 0', () => {
    const s = shingleScore('alpha beta gamma delta epsilon', 'one two three four five six');
    assert.deepEqual([s.precision, s.recall, s.f1], [0, 0, 0]);
  });

  test('partial overlap, by hand: 2 of 3 shingles shared on each side gives 2/3', () => {
    // extracted: abcd bcde cdef; expected: abcd bcde cdex.
    const s = shingleScore('a b c d e f', 'a b c d e x');
    assert.equal(s.matched, 2);
    close(s.precision, 2 / 3, 'precision');
    close(s.recall, 2 / 3, 'recall');
    close(s.f1, 2 / 3, 'f1');
  });

  test('partial overlap, by hand: a prefix has precision 1 and recall 2/5, F1 4/7', () => {
    // extracted w1..w5: 2 shingles; expected w1..w8: 5 shingles; the 2 are shared.
    const s = shingleScore('w1 w2 w3 w4 w5', 'w1 w2 w3 w4 w5 w6 w7 w8');
    assert.deepEqual([s.extractedShingles, s.expectedShingles, s.matched], [2, 5, 2]);
    close(s.precision, 1, 'precision');
    close(s.recall, 2 / 5, 'recall');
    close(s.f1, 4 / 7, 'f1');
  });

  test('counts multisets: text extracted twice loses precision, not recall', () => {
    // extracted: abcd x2, bcda, cdab, dabc (5); expected: abcd (1); matched min(2,1) = 1.
    const s = shingleScore('a b c d a b c d', 'a b c d');
    assert.deepEqual([s.extractedShingles, s.expectedShingles, s.matched], [5, 1, 1]);
    close(s.precision, 1 / 5, 'precision');
    close(s.recall, 1, 'recall');
    close(s.f1, 1 / 3, 'f1');
    // The other way round: a repeated passage extracted once loses recall.
    const r = shingleScore('a b c d', 'a b c d a b c d');
    close(r.precision, 1, 'precision');
    close(r.recall, 1 / 5, 'recall');
  });

  test('fewer than 4 tokens on either side falls back to unigrams', () => {
    const s = shingleScore('hello world', 'Hello world, again friend');
    assert.equal(s.n, 1);
    close(s.precision, 1, 'precision');
    close(s.recall, 1 / 2, 'recall');
    close(s.f1, 2 / 3, 'f1');
    assert.equal(shingleScore('Lorem ipsum', 'lorem IPSUM').f1, 1);
  });

  test('empty cases: both empty is 1, exactly one empty is 0', () => {
    assert.equal(shingleScore('', '').f1, 1);
    assert.equal(shingleScore('  ...  ', '').f1, 1);
    const missed = shingleScore('', 'a b c d e');
    assert.deepEqual([missed.precision, missed.recall, missed.f1], [0, 0, 0]);
    const spurious = shingleScore('a b c d e', '');
    assert.deepEqual([spurious.precision, spurious.recall, spurious.f1], [0, 0, 0]);
  });
});

describe('htmlToText', () => {
  test('decodes entities, breaks lines at blocks and <br>, drops scripts and styles', () => {
    const html =
      '<div id="readability-page-1"><h1>Title&nbsp;here</h1><p>One &amp; two&#8217;s</p><p>three<br>four</p>' +
      '<script>var x = 1;</script><style>p{}</style><ul><li>five</li><li>  six   seven </li></ul>' +
      '<p>inline <a href="#">link</a> <em>text</em>.</p></div>';
    assert.equal(
      htmlToText(html),
      'Title here\nOne & two’s\nthree\nfour\nfive\nsix seven\ninline link text.',
    );
  });

  test('adjacent blocks never glue words together', () => {
    assert.deepEqual(tokenize(htmlToText('<p>end</p><p>start</p><td>a</td><td>b</td>')), [
      'end',
      'start',
      'a',
      'b',
    ]);
  });

  test('empty and text-free markup give empty text', () => {
    assert.equal(htmlToText(''), '');
    assert.equal(htmlToText('<div><p> </p><br><img src="x.png"></div>'), '');
  });
});
