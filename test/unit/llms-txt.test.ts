import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { betterHome, llmsEntry, llmsFullSection, llmsTxt } from '../../cli/llms-txt.ts';
import type { ContentRecord } from '../../lambdas/core/results/index.ts';

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
    markdown: `# ${url}`,
    text: url,
    ...extra,
  };
}

describe('llmsTxt', () => {
  it('names the site from the seed, quotes its summary, lists each page with its description, seed first', () => {
    const seeds = ['https://docs.example/'];
    const records = [
      record('https://docs.example/z', { title: 'Zeta [beta]', description: 'Last\nletter.' }),
      record('https://docs.example/', { title: 'Docs', siteName: 'Example Docs', description: 'All of it.' }),
      record('https://docs.example/a', { title: 'Alpha' }),
    ];
    let home: ContentRecord | undefined;
    for (const r of records) home = betterHome(home, r, seeds);
    assert.equal(
      llmsTxt(records.map(llmsEntry), home, seeds),
      [
        '# Example Docs',
        '',
        '> All of it.',
        '',
        '## Pages',
        '',
        '- [Docs](https://docs.example/): All of it.',
        '- [Alpha](https://docs.example/a)',
        '- [Zeta \\[beta\\]](https://docs.example/z): Last letter.',
        '',
      ].join('\n'),
    );
  });

  it('gives each host a section, and a page without a title its URL', () => {
    const entries = [record('https://a.example/x'), record('https://b.example/(y)')].map(llmsEntry);
    const text = llmsTxt(entries, undefined, []);
    assert.match(
      text,
      /^# a\.example\n\n## a\.example\n\n- \[https:\/\/a\.example\/x\]\(https:\/\/a\.example\/x\)\n\n## b\.example\n/,
    );
    assert.ok(text.includes('(https://b.example/%28y%29)'), text);
  });
});

describe('llmsFullSection', () => {
  it('is the page under its title and source URL', () => {
    assert.equal(
      llmsFullSection(record('https://a.example/', { title: 'A', markdown: '## Body\n' })),
      '# A\n\nSource: https://a.example/\n\n## Body\n\n',
    );
  });
});
