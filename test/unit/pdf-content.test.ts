/**
 * PDF responses to content records (lambdas/core/content/pdf-content.ts, pdf-streams.ts), on documents the
 * test writes (test/fixtures/pdf-builder.ts): the headings, paragraphs and metadata recovered; the
 * document's text kept as text in the Markdown (rendered by markdown-it); hostile files ending with
 * `truncated` naming the bound, quickly and without holding what a bomb decodes to; and the cost
 * growing linearly with the input (the fastest of a few runs at n and 4n, as content-adversarial).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deflateSync, inflateSync, constants as zlibConstants } from 'node:zlib';
import MarkdownIt from 'markdown-it';
import {
  extractPdf,
  PDF_BOUNDS,
  type PdfExtraction,
  scanPdfStreams,
} from '../../lambdas/core/content/index.ts';
import {
  ascii85,
  buildPdf,
  encryptedPdf,
  flateBomb,
  flateBombPdf,
  flow,
  formFanOutPdf,
  garbage,
  lenientFlate,
  manyPagesPdf,
  operatorFloodPdf,
  streamObject,
  truncatedPdf,
  writePdf,
} from '../fixtures/pdf-builder.ts';

const MiB = 1024 * 1024;
const BOMB_REASON = "the PDF's streams decode past 64 MiB";

/** A one-page document of `content` (operators) compressed as `data` by the caller. */
function contentPdf(data: Uint8Array, dict = '/Filter /FlateDecode'): Uint8Array {
  return writePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [4 0 R] /Count 1 >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>',
    streamObject(data, dict),
  ]);
}

async function timed(run: () => Promise<PdfExtraction>): Promise<[PdfExtraction, number]> {
  const start = performance.now();
  const out = await run();
  return [out, performance.now() - start];
}

function assertOneLine(reason: string | undefined): asserts reason is string {
  assert.ok(reason !== undefined && reason !== '', 'a reason');
  assert.ok(!/[\r\n]/.test(reason) && reason.length <= 300, reason);
}

describe('PDF text: headings, paragraphs and metadata', () => {
  const report = (compress: boolean) =>
    buildPdf({
      compress,
      info: { Title: 'Annual Report 2024', Author: 'Ada Lovelace', Subject: 'Results', Keywords: 'a, b' },
      lang: 'en-GB',
      pages: [
        {
          runs: flow([
            { size: 24, lines: ['Annual Report'] },
            {
              lines: ['The results of the year were exam-', 'ined closely by the board and its', 'auditors.'],
            },
            { size: 18, lines: ['Results'] },
            { lines: ['Revenue grew by a tenth.'] },
            { size: 16, lines: ['By region'] },
            { lines: ['North and south grew alike.'] },
          ]),
        },
        {
          runs: flow([
            { size: 15, lines: ['Small print'] },
            { lines: ['Figures are unaudited.'] },
            { size: 18, lines: ['Outlook'] },
            { lines: ['More of the same, we hope.'] },
          ]),
        },
      ],
    });

  for (const compress of [false, true]) {
    test(`the exact Markdown and text of a small report (${compress ? 'compressed' : 'plain'} content)`, async () => {
      const out = await extractPdf(report(compress));
      assert.equal(
        out.markdown,
        [
          '# Annual Report',
          'The results of the year were examined closely by the board and its auditors.',
          '## Results',
          'Revenue grew by a tenth.',
          '### By region',
          'North and south grew alike.',
          '### Small print',
          'Figures are unaudited.',
          '## Outlook',
          'More of the same, we hope.',
        ].join('\n\n'),
      );
      assert.equal(out.text, out.markdown.replace(/^#+ /gm, ''));
      assert.deepEqual(
        { ...out, markdown: undefined, text: undefined },
        {
          markdown: undefined,
          text: undefined,
          title: 'Annual Report 2024',
          author: 'Ada Lovelace',
          subject: 'Results',
          keywords: 'a, b',
          language: 'en-GB',
          pages: 2,
          pagesRead: 2,
          wordCount: 41,
        },
      );
    });
  }

  test('a hyphen at a line end joins only a word cut there; text runs on a line are joined', async () => {
    const pdf = buildPdf({
      pages: [
        {
          runs: [
            { text: 'A well-', y: 700 },
            { text: 'Known name, a half-', y: 685.6 },
            { text: 'way point', y: 671.2 },
            { text: 'Left', x: 72, y: 600 },
            { text: 'right', x: 120, y: 600 },
          ],
        },
      ],
    });
    const out = await extractPdf(pdf);
    assert.equal(out.text, 'A well- Known name, a halfway point\n\nLeft right');
  });

  test("the caller's bytes are left whole (pdf.js detaches the buffer it is given)", async () => {
    const pdf = buildPdf({ pages: [{ runs: [{ text: 'Kept.', y: 700 }] }] });
    for (const bytes of [Buffer.from(pdf), new Uint8Array(pdf)]) {
      assert.equal((await extractPdf(bytes)).text, 'Kept.');
      assert.deepEqual(new Uint8Array(bytes), pdf);
    }
  });

  test('metadata strings lose control characters and are cut to the cap; a bad /Lang is dropped', async () => {
    const long = 'T'.repeat(5_000);
    const pdf = buildPdf({
      pages: [{ runs: [{ text: 'x', y: 700 }] }],
      info: { Title: `Bell\u0007 and\nline ${long}`, Author: '\u0000\u0001' },
      lang: 'en US; drop table',
    });
    const out = await extractPdf(pdf);
    assert.equal(out.title?.length, PDF_BOUNDS.metadataChars);
    assert.ok(out.title?.startsWith('Bell and line TTT'), out.title?.slice(0, 20));
    assert.equal(out.author, undefined);
    assert.equal(out.language, undefined);
  });
});

describe('PDF text is text in the Markdown', () => {
  const md = new MarkdownIt({ html: true, linkify: false });
  md.validateLink = () => true;

  test('links, HTML, headings, lists, tables and rules written as body text come out inert', async () => {
    const hostile = [
      '[click](javascript:alert(1))',
      '<script>alert(1)</script>',
      '# not a heading',
      '* not an item',
      '1. not a list',
      '| a | b |',
      '---',
      '![img](http://x/y.png) &amp; `code` _em_ \\',
    ];
    const pdf = buildPdf({ pages: [{ runs: flow(hostile.map((line) => ({ lines: [line] }))) }] });
    const out = await extractPdf(pdf);
    assert.equal(out.text, hostile.join('\n\n'));
    const html = md.render(out.markdown);
    const tags = [...html.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9]*)/g)].map((m) => m[1]);
    assert.deepEqual([...new Set(tags)], ['p'], html);
    const visible = html
      .replace(/<[^>]*>/g, '\n')
      .replaceAll('&lt;', '<')
      .replaceAll('&gt;', '>')
      .replaceAll('&quot;', '"')
      .replaceAll('&amp;', '&');
    assert.deepEqual(
      visible.split('\n').filter((line) => line.trim() !== ''),
      hostile,
    );
  });
});

describe('PDF text: hostile files', () => {
  test('a Flate bomb of 256 MiB of zeros ends at the decoded-bytes bound, fast and without its output in memory', async () => {
    const pdf = flateBombPdf(256 * MiB);
    assert.ok(pdf.length < 1 * MiB, `${pdf.length} bytes`);
    const before = process.memoryUsage();
    const [out, ms] = await timed(() => extractPdf(pdf));
    const after = process.memoryUsage();
    assert.equal(out.truncated, BOMB_REASON);
    assert.equal(out.text, '');
    assert.ok(ms < 2_000, `${ms} ms`);
    assert.ok(
      after.arrayBuffers - before.arrayBuffers < 16 * MiB,
      `${after.arrayBuffers - before.arrayBuffers}`,
    );
    assert.ok(after.rss - before.rss < 64 * MiB, `${after.rss - before.rss}`);
  });

  test('a bomb zlib rejects at its first code (pdf.js reads past it) is counted as pdf.js reads it', async () => {
    const readable = lenientFlate(4, 'BT /F1 12 Tf 72 700 Td (Past the error) Tj ET');
    assert.throws(() => inflateSync(readable), /too far back/);
    assert.equal((await extractPdf(contentPdf(readable))).text, 'Past the error');
    const bomb = lenientFlate(Math.ceil((128 * MiB) / 258));
    assert.equal((await extractPdf(contentPdf(bomb))).truncated, BOMB_REASON);
  });

  test('a bomb behind an ASCII85 filter, an indirect /Filter and /Length, or a false endstream is counted', async () => {
    const bomb = flateBomb(128 * MiB);
    assert.equal(
      (await extractPdf(contentPdf(new TextEncoder().encode(ascii85(bomb)), '/Filter [/A85 /Fl]'))).truncated,
      BOMB_REASON,
    );
    // the bomb's data holds `endstream` early, in a stored block; its length is object 3, its filter object 4
    const fake = new TextEncoder().encode('\nendstream\n');
    const stored = [0, fake.length, 0, ~fake.length & 0xff, 0xff];
    const data = new Uint8Array([...bomb.subarray(0, 2), ...stored, ...fake, ...bomb.subarray(2)]);
    const pdf = writePdf([
      '<< /Type /Catalog >>',
      `<< /Length 3 0 R /Filter 4 0 R >>\nstream\n${Buffer.from(data).toString('latin1')}\nendstream`,
      String(data.length),
      '/FlateDecode',
    ]);
    const scan = scanPdfStreams(pdf);
    assert.deepEqual(scan, { ok: false, reason: BOMB_REASON });
  });

  test('the pre-scan counts what zlib inflates, stream by stream (its decoder is pdf.js’s)', () => {
    let seed = 11;
    const random = () => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed / 2 ** 32;
    };
    for (let i = 0; i < 40; i++) {
      const data = new Uint8Array(Math.floor(random() ** 2 * 200_000));
      for (let j = 0; j < data.length; j++)
        data[j] = i % 2 === 0 ? 97 + Math.floor(random() ** 3 * 26) : (j * 7) & 0xff;
      const compressed = deflateSync(data, {
        level: [1, 6, 9][i % 3]!,
        strategy: [zlibConstants.Z_DEFAULT_STRATEGY, zlibConstants.Z_FIXED, zlibConstants.Z_RLE][i % 3]!,
      });
      const scan = scanPdfStreams(writePdf(['<<>>', streamObject(compressed, '/Filter /FlateDecode')]));
      assert.deepEqual(scan, {
        ok: true,
        decodedBytes: Math.max(data.length, compressed.length + 1),
        streams: 1,
      });
    }
  });

  test('references in a loop, or to a list of references, are followed one level', () => {
    const pdf = writePdf([
      '<< /Type /Catalog >>',
      '<< /Length 3 0 R /Filter [4 0 R 4 0 R] >>\nstream\nabc\nendstream',
      '3 0 R',
      '[4 0 R /FlateDecode]',
    ]);
    assert.deepEqual(scanPdfStreams(pdf), { ok: true, decodedBytes: 4, streams: 1 });
  });

  test('an encrypted document is refused before pdf.js reads it', async () => {
    const out = await extractPdf(encryptedPdf());
    assert.deepEqual(out, {
      markdown: '',
      text: '',
      pages: 0,
      pagesRead: 0,
      wordCount: 0,
      truncated: 'the PDF is encrypted; its text is not extracted',
    });
  });

  test('not a PDF, garbage and a cut file never throw: empty text and a one-line reason', async () => {
    const html = new TextEncoder().encode('<!doctype html><title>A page</title><p>Not a document.</p>');
    const padded = new Uint8Array(2_000);
    padded.set(new TextEncoder().encode('%PDF-1.4'), 1_500);
    for (const bytes of [new Uint8Array(0), html, garbage(10_000, false), padded]) {
      assert.equal((await extractPdf(bytes)).truncated, 'not a PDF: no %PDF- header');
    }
    const whole = buildPdf({ pages: [{ runs: flow([{ lines: ['Some text.'] }]) }], compress: true });
    for (const bytes of [garbage(10_000, true), garbage(64, true, 3), truncatedPdf(whole)]) {
      const out = await extractPdf(bytes);
      assertOneLine(out.truncated);
      assert.ok(out.truncated.startsWith('the PDF could not be read: '), out.truncated);
      assert.equal(out.text, '');
    }
  });

  test('pages past the page bound are not read', async () => {
    const pdf = manyPagesPdf(5_000);
    const out = await extractPdf(pdf);
    assert.equal(out.truncated, `read ${PDF_BOUNDS.maxPages} of 5000 pages (the page bound)`);
    assert.equal(out.pages, 5_000);
    assert.equal(out.pagesRead, PDF_BOUNDS.maxPages);
    assert.ok(out.text.endsWith('Page 200 text.'), out.text.slice(-40));
    assert.equal(
      (await extractPdf(pdf, { maxPages: 3 })).text,
      'Page 1 text.\n\nPage 2 text.\n\nPage 3 text.',
    );
  });

  test('a page of very many text operators ends at the time budget, keeping what was read', async () => {
    const pdf = operatorFloodPdf(400_000);
    // 1 s, not less: on a loaded machine pdf.js's opening alone took 100 ms and nothing was read (CI).
    const [out, ms] = await timed(() => extractPdf(pdf, { timeBudgetMs: 1_000 }));
    assert.match(out.truncated ?? '', /^time: stopped after \d+ ms at page 1$/);
    assert.ok(ms < 6_000, `${ms} ms`);
    assert.ok(out.text.startsWith('w0 w1 w2'), out.text.slice(0, 20));
    assert.equal(out.pagesRead, 0);
  });

  test('a page of forms drawing forms (10^8 words from 2.5 KB) ends at the time budget', async () => {
    const [out, ms] = await timed(() => extractPdf(formFanOutPdf(8, 10), { timeBudgetMs: 200 }));
    assert.match(out.truncated ?? '', /^time: stopped after \d+ ms at page 1$/);
    // The whole page would take hours; the bound leaves room for one chunk on a loaded machine.
    assert.ok(ms < 6_000, `${ms} ms`);
  });

  test('the text stops at the character bound', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => `Line ${i} of a page with some words on it.`);
    const pdf = buildPdf({ pages: Array.from({ length: 5 }, () => ({ runs: flow([{ lines }]) })) });
    const out = await extractPdf(pdf, { maxChars: 3_000 });
    assert.match(out.truncated ?? '', /^text cut at 3000 characters at page 2$/);
    assert.equal(out.text.length, 3_000);
    assert.ok(out.markdown.length <= 3_000);
    assert.equal(out.pagesRead, 1);
  });
});

describe('PDF text: cost is linear', () => {
  /** The fastest of 3 runs at n and at 4n, after a warm-up at each: linear is ~4, quadratic 16. */
  async function growth(make: (n: number) => Uint8Array, n: number, run: (pdf: Uint8Array) => unknown) {
    const [small, large] = [make(n), make(4 * n)];
    const time = async (pdf: Uint8Array) => {
      const start = performance.now();
      await run(pdf);
      return performance.now() - start;
    };
    await time(small);
    await time(large);
    let [tSmall, tLarge] = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
    for (let i = 0; i < 3; i++) {
      tSmall = Math.min(tSmall, await time(small));
      tLarge = Math.min(tLarge, await time(large));
    }
    assert.ok(tLarge / tSmall < 10, `n ${tSmall.toFixed(1)} ms, 4n ${tLarge.toFixed(1)} ms`);
  }

  test('text operators on a page', async () => {
    await growth(operatorFloodPdf, 10_000, (pdf) => extractPdf(pdf, { timeBudgetMs: 60_000 }));
  });

  test('pages', async () => {
    await growth(manyPagesPdf, 40, (pdf) => extractPdf(pdf, { timeBudgetMs: 60_000 }));
  });

  test('the pre-scan: many streams, and hostile runs of keywords, names and references', async () => {
    const text = (body: string) => new TextEncoder().encode(`%PDF-1.7\n${body}`);
    const shapes: Array<[(n: number) => Uint8Array, number]> = [
      [
        (n) =>
          writePdf(Array.from({ length: n }, (_, i) => streamObject(deflateSync(`q ${i} Q`), '/Filter /Fl'))),
        2_000,
      ],
      [(n) => text('>>stream '.repeat(n)), 50_000],
      [(n) => text('>>\nstream\n'.repeat(n)), 50_000],
      [(n) => text(`${'/F [/Fl '.repeat(n)}>>\nstream\n${'x'.repeat(n)}`), 20_000],
      [(n) => text(`${'1 0 obj /Length 1 0 R '.repeat(n)}>>\nstream\n`), 20_000],
    ];
    for (const [shape, n] of shapes) await growth(shape, n, (pdf) => scanPdfStreams(pdf));
  });
});
