import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCrawlConfig } from '../../lambdas/core/crawl-config.ts';
import { admitLinks } from '../../lambdas/core/link-admission.ts';
import { LruSet } from '../../lambdas/core/lru.ts';
import type { AdmittedUrl, FrontierUrl, FrontierWriter } from '../../lambdas/core/ports.ts';
import { normalizeUrl } from '../../lambdas/core/url-normalize.ts';

const config = parseCrawlConfig({ crawlId: 'c1', seeds: ['https://site.test/'] });

function keyOf(url: string): string {
  const normalized = normalizeUrl(url);
  assert.ok(normalized.ok);
  return normalized.key;
}

/** A frontier that admits, as this page's, the URLs in `mine`; every other URL belongs to another page. */
function frontier(mine: readonly string[], asked: string[][] = []): FrontierWriter {
  return {
    admit: async (_crawlId, _parent, candidates: readonly FrontierUrl[]): Promise<AdmittedUrl[]> => {
      asked.push(candidates.map((c) => c.url));
      return candidates.filter((c) => mine.includes(c.url)).map((c) => ({ ...c, fresh: true }));
    },
    reservePages: async (_crawlId, wanted) => wanted,
    claim: async () => ({ status: 'claimed', attempts: 0, relink: false }),
    release: async () => {},
    postpone: async () => {},
    addQueued: async () => {},
  };
}

const page = (links: string[], relink = false) => ({
  config,
  parentKey: 'p',
  parentUrl: 'https://site.test/',
  depth: 0,
  links: links.map((url) => ({ url, nofollow: false })),
  relink,
});

describe('admitLinks', () => {
  it('skips links this container has seen without asking the frontier', async () => {
    const seen = new LruSet(100);
    seen.add(`c1:${keyOf('https://site.test/a')}`);
    const asked: string[][] = [];
    const out = await admitLinks([page(['https://site.test/a', 'https://site.test/b'])], {
      frontier: frontier(['https://site.test/b'], asked),
      seen,
      now: new Date(),
    });
    assert.deepEqual(asked, [['https://site.test/b']]);
    assert.deepEqual(
      out.tasks.map((t) => t.task.url),
      ['https://site.test/b'],
    );
    assert.deepEqual(out.seenKeys, [`c1:${keyOf('https://site.test/b')}`]);
  });

  it('a page whose earlier fetch did not finish asks for every link again: the cache may hold its unsent ones', async () => {
    // /a was admitted by this page's failed batch, then seen here on another page: only a relink finds it.
    const seen = new LruSet(100);
    seen.add(`c1:${keyOf('https://site.test/a')}`);
    const asked: string[][] = [];
    const out = await admitLinks([page(['https://site.test/a'], true)], {
      frontier: frontier(['https://site.test/a'], asked),
      seen,
      now: new Date(),
    });
    assert.deepEqual(asked, [['https://site.test/a']]);
    assert.deepEqual(
      out.tasks.map((t) => t.task.url),
      ['https://site.test/a'],
    );
  });
});
