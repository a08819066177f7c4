import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCrawlConfig } from '../../lambdas/core/crawl-config.ts';
import { admitLinks } from '../../lambdas/core/link-admission.ts';
import { LruSet } from '../../lambdas/core/lru.ts';
import type { AdmitResult, FrontierUrl, FrontierWriter } from '../../lambdas/core/ports.ts';
import { normalizeUrl } from '../../lambdas/core/url-normalize.ts';

const config = parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/'] });

function keyOf(url: string): string {
  const normalized = normalizeUrl(url);
  assert.ok(normalized.ok);
  return normalized.key;
}

/** A frontier that answers each admit from a table: admitted by this page, taken elsewhere, or neither. */
function frontier(answer: Record<string, 'mine' | 'taken' | 'pending-elsewhere'>): FrontierWriter {
  return {
    admit: async (_crawlId, _parent, candidates: readonly FrontierUrl[]): Promise<AdmitResult> => ({
      admitted: candidates.filter((c) => answer[c.url] === 'mine').map((c) => ({ ...c, fresh: true })),
      taken: candidates.filter((c) => answer[c.url] === 'taken').map((c) => c.key),
    }),
    reservePages: async (_crawlId, wanted) => wanted,
    claim: async () => ({ status: 'claimed', attempts: 0 }),
    release: async () => {},
    postpone: async () => {},
    addQueued: async () => {},
  };
}

describe('admitLinks', () => {
  it("marks seen what this page admitted and what has a task elsewhere, not another page's unfetched link", async () => {
    const links = ['https://site.test/mine', 'https://site.test/taken', 'https://site.test/pending'];
    const out = await admitLinks(
      [
        {
          config,
          parentKey: 'p',
          parentUrl: 'https://site.test/',
          depth: 0,
          links: links.map((url) => ({ url, nofollow: false })),
        },
      ],
      {
        frontier: frontier({
          'https://site.test/mine': 'mine',
          'https://site.test/taken': 'taken',
          'https://site.test/pending': 'pending-elsewhere',
        }),
        seen: new LruSet(100),
        now: new Date(),
      },
    );
    assert.deepEqual(
      out.tasks.map((t) => t.task.url),
      ['https://site.test/mine'],
    );
    // The page that admitted /pending may fail and be retried here: it must find the link again.
    assert.deepEqual(
      out.seenKeys.sort(),
      [`c1:${keyOf('https://site.test/mine')}`, `c1:${keyOf('https://site.test/taken')}`].sort(),
    );
  });

  it('skips links this container has seen without asking the frontier', async () => {
    const seen = new LruSet(100);
    seen.add(`c1:${keyOf('https://site.test/a')}`);
    let asked: string[] = [];
    const writer = frontier({ 'https://site.test/b': 'mine' });
    const out = await admitLinks(
      [
        {
          config,
          parentKey: 'p',
          parentUrl: 'https://site.test/',
          depth: 0,
          links: [
            { url: 'https://site.test/a', nofollow: false },
            { url: 'https://site.test/b', nofollow: false },
          ],
        },
      ],
      {
        frontier: {
          ...writer,
          admit: (crawlId, parent, candidates) => {
            asked = candidates.map((c) => c.url);
            return writer.admit(crawlId, parent, candidates);
          },
        },
        seen,
        now: new Date(),
      },
    );
    assert.deepEqual(asked, ['https://site.test/b']);
    assert.deepEqual(
      out.tasks.map((t) => t.task.url),
      ['https://site.test/b'],
    );
  });
});
