/**
 * PDFs in a crawl (issue 27, point 4): `crawler crawl` of a loopback site whose page links to a
 * generated PDF, a Flate bomb dressed as a PDF, and a file that only says it is one. The document's
 * text comes out as Markdown with its headings and paragraphs, with its title, author and pages; the
 * bomb's record is empty and names the bound; the crawl ends, every page stored.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { htmlPage, type LoopbackHost, startLoopbackHost } from '../fixtures/loopback-host.ts';
import { buildPdf, flateBombPdf, flow, garbage } from '../fixtures/pdf-builder.ts';
import { type CrawlRun, runCrawl } from '../fixtures/run-cli.ts';

const REPORT = buildPdf({
  compress: true,
  info: { Title: 'Annual Report 2026', Author: 'Ada Lovelace' },
  pages: [
    {
      runs: flow([
        { size: 24, lines: ['Annual Report'] },
        { lines: ['The year was reviewed closely by the board and its', 'auditors, who found it sound.'] },
        { size: 18, lines: ['Results'] },
        { lines: ['Revenue grew by a tenth, and costs fell.'] },
      ]),
    },
    { runs: flow([{ lines: ['The second page closes the report.'] }]) },
  ],
});

interface PageLine {
  url: string;
  kind?: string;
  markdown?: string;
  title?: string;
  author?: string;
  pages?: number;
  pagesRead?: number;
  truncated?: string;
}

describe('crawler crawl: PDF documents', () => {
  let site: LoopbackHost;
  let crawl: CrawlRun;
  let pages: PageLine[];

  before(async () => {
    const bomb = Buffer.from(flateBombPdf(256 * 1024 * 1024));
    const fake = Buffer.from(garbage(4096, true));
    site = await startLoopbackHost('127.0.0.2', (req) => {
      const pdf = (bytes: Uint8Array) => [200, { 'content-type': 'application/pdf' }, bytes] as const;
      if (req.url === '/robots.txt') return [404, {}, ''];
      if (req.url === '/report.pdf') return [...pdf(REPORT)];
      if (req.url === '/bomb.pdf') return [...pdf(bomb)];
      if (req.url === '/fake.pdf') return [...pdf(fake)];
      return [200, {}, htmlPage('documents', ['/report.pdf', '/bomb.pdf', '/fake.pdf'])];
    });
    crawl = await runCrawl([`${site.origin}/`], ['--allow-private', '--delay', '0', '--quiet']);
    pages = (await readFile(join(crawl.outDir, 'pages.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as PageLine);
  });
  after(() => site?.close());

  const pdf = (name: string) => pages.find((page) => page.url.endsWith(`/${name}`));

  it('stores every document and ends the crawl', () => {
    const stored = crawl.results.filter((line) => line.url.endsWith('.pdf'));
    assert.deepEqual(stored.map((line) => [new URL(line.url).pathname, line.status, line.outcome]).sort(), [
      ['/bomb.pdf', 200, 'fetched'],
      ['/fake.pdf', 200, 'fetched'],
      ['/report.pdf', 200, 'fetched'],
    ]);
  });

  it("gives a PDF's text as Markdown, with its headings, paragraphs and metadata", () => {
    const report = pdf('report.pdf');
    assert.equal(report?.kind, 'pdf');
    assert.equal(report?.title, 'Annual Report 2026');
    assert.equal(report?.author, 'Ada Lovelace');
    assert.equal(report?.pages, 2);
    assert.equal(report?.pagesRead, 2);
    assert.equal(report?.truncated, undefined);
    assert.match(
      report?.markdown ?? '',
      /^# Annual Report\n\nThe year was reviewed closely by the board and its auditors, who found it sound\.\n\n## Results\n\nRevenue grew by a tenth, and costs fell\.\n\nThe second page closes the report\.$/,
    );
  });

  it('refuses a bomb and a fake one, each naming why, with no text', () => {
    assert.equal(pdf('bomb.pdf')?.truncated, "the PDF's streams decode past 64 MiB");
    assert.equal(pdf('bomb.pdf')?.markdown, '');
    assert.match(pdf('fake.pdf')?.truncated ?? '', /^the PDF could not be read: /);
  });
});
