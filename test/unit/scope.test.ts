import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import {
  compileScope,
  compileScopeKeys,
  inScope,
  type Scope,
  type ScopeRules,
  seedScopeKey,
} from '../../lambdas/core/urls/index.ts';

function rules(scope: Scope, seeds: string[], extra?: Partial<ScopeRules>): ScopeRules {
  return { scope, seeds, include: [], exclude: [], ...extra };
}

function yes(url: string, r: ScopeRules): void {
  const decision = inScope(new URL(url), r);
  assert.deepEqual(decision, { ok: true }, `${url} should be in ${r.scope} scope of ${r.seeds.join(' ')}`);
}

function no(url: string, r: ScopeRules, reason: 'scope' | 'exclude' | 'include'): void {
  const decision = inScope(new URL(url), r);
  assert.equal(decision.ok, false, `${url} should be out of ${r.scope} scope of ${r.seeds.join(' ')}`);
  if (!decision.ok) assert.equal(decision.reason, reason, `${url}: ${decision.detail}`);
}

describe('host scope', () => {
  const r = rules('host', ['https://Example.com/start']);

  test('takes any page of the seed host, over http or https', () => {
    yes('https://example.com/', r);
    yes('https://example.com/deep/page?x=1', r);
    yes('http://example.com/other', r);
    yes('https://EXAMPLE.com./x', r);
    yes('https://example.com:443/x', r);
  });

  test('leaves out other hosts, including www. and subdomains (www. is not stripped)', () => {
    no('https://www.example.com/', r, 'scope');
    no('https://blog.example.com/', r, 'scope');
    no('https://example.org/', r, 'scope');
    no('https://notexample.com/', r, 'scope');
  });

  test('treats an explicit non-default port as part of the host', () => {
    no('https://example.com:8443/', r, 'scope');
    const local = rules('host', ['http://127.0.0.1:8080/']);
    yes('http://127.0.0.1:8080/a', local);
    no('http://127.0.0.1:9090/a', local, 'scope');
    no('http://localhost:8080/a', local, 'scope');
  });

  test('accepts any of several seeds, including IDN hosts in either form', () => {
    const multi = rules('host', ['https://a.example/', 'http://bücher.de/']);
    yes('https://a.example/x', multi);
    yes('https://xn--bcher-kva.de/x', multi);
    yes('https://BÜCHER.de/x', multi);
    no('https://b.example/', multi, 'scope');
  });

  test('never takes non-http(s) URLs', () => {
    no('ftp://example.com/file', r, 'scope');
  });
});

describe('domain scope', () => {
  const r = rules('domain', ['https://www.example.co.uk/']);

  test('takes every host of the registrable domain', () => {
    yes('https://example.co.uk/', r);
    yes('http://shop.example.co.uk:8080/cart', r);
    yes('https://a.b.example.co.uk/', r);
  });

  test('does not join different registrable domains under one public suffix', () => {
    no('https://other.co.uk/', r, 'scope');
    no('https://example.com/', r, 'scope');
    // Private suffixes count: two github.io sites are two domains.
    const gh = rules('domain', ['https://alice.github.io/']);
    yes('https://alice.github.io/repo/', gh);
    no('https://bob.github.io/', gh, 'scope');
  });

  test('a seed without a registrable domain compares as under host scope: port included', () => {
    const ip = rules('domain', ['http://127.0.0.1:8080/']);
    yes('http://127.0.0.1:8080/a', ip);
    yes('https://127.0.0.1:8080/y', ip);
    no('http://127.0.0.1:9090/x', ip, 'scope');
    no('http://127.0.0.1/', ip, 'scope');
    no('http://127.0.0.2:8080/', ip, 'scope');
    no('http://localhost:8080/', ip, 'scope');

    const local = rules('domain', ['http://localhost:3000/']);
    yes('http://LOCALHOST:3000/x', local);
    no('http://localhost:4000/', local, 'scope');
    no('http://localhost/', local, 'scope');
    no('http://127.0.0.1:3000/', local, 'scope');
    no('http://a.localhost:3000/', local, 'scope');

    const v6 = rules('domain', ['http://[::1]:3000/']);
    yes('http://[0::1]:3000/x', v6);
    no('http://[::1]/x', v6, 'scope');
    no('http://[::1]:3001/x', v6, 'scope');
    no('http://[::2]:3000/x', v6, 'scope');

    const single = rules('domain', ['http://intranet:8000/']);
    yes('http://intranet:8000/x', single);
    no('http://intranet:8001/x', single, 'scope');
  });

  test('default ports are "no port" for a host without a registrable domain, over http and https', () => {
    const ip = rules('domain', ['http://127.0.0.1/']);
    yes('http://127.0.0.1:80/a', ip);
    yes('https://127.0.0.1/a', ip);
    yes('https://127.0.0.1:443/a', ip);
    no('https://127.0.0.1:80/a', ip, 'scope');
    no('http://127.0.0.1:8080/a', ip, 'scope');
  });

  test('says which host was expected when an IP port is out of scope', () => {
    const decision = inScope(new URL('http://127.0.0.1:9090/x'), rules('domain', ['http://127.0.0.1:8080/']));
    assert.equal(decision.ok, false);
    if (!decision.ok)
      assert.match(decision.detail, /127\.0\.0\.1:9090 .*expected one of: .*127\.0\.0\.1:8080/);
  });

  test('a real domain still joins its subdomains and every port, beside an IP seed', () => {
    const mixed = rules('domain', ['http://127.0.0.1:8080/', 'https://www.example.com/']);
    yes('http://example.com:8080/x', mixed);
    yes('https://shop.example.com:9443/', mixed);
    yes('http://127.0.0.1:8080/', mixed);
    no('http://127.0.0.1:8081/', mixed, 'scope');
    no('https://example.org/', mixed, 'scope');
  });
});

describe('prefix scope', () => {
  test('cuts the seed after the last / of its path', () => {
    const r = rules('prefix', ['https://example.com/docs/intro.html?lang=en#top']);
    yes('https://example.com/docs/', r);
    yes('https://example.com/docs/intro.html', r);
    yes('https://example.com/docs/api/v2/x?y=1', r);
    no('https://example.com/docs', r, 'scope');
    no('https://example.com/blog/', r, 'scope');
    no('http://example.com/docs/a', r, 'scope');
    no('https://www.example.com/docs/a', r, 'scope');
  });

  test('a seed without a trailing slash scopes its parent directory', () => {
    const r = rules('prefix', ['https://example.com/docs']);
    yes('https://example.com/blog/', r);
    yes('https://example.com/docs-old/', r);
  });

  test('compares normalized URLs', () => {
    const r = rules('prefix', ['HTTPS://Example.com:443/a/./b/']);
    yes('https://example.com/a/b/c', r);
    yes('https://EXAMPLE.com/a/x/../b/c#frag', r);
    yes('https://example.com/a/%62/c', r);
    no('https://example.com/a/c', r, 'scope');
  });
});

describe('include and exclude patterns', () => {
  test('exclude drops matching URLs, even if include also matches', () => {
    const r = rules('host', ['https://example.com/'], {
      include: [/\/docs\//],
      exclude: [/\/docs\/private\//, /\.pdf$/i],
    });
    yes('https://example.com/docs/a', r);
    no('https://example.com/docs/private/a', r, 'exclude');
    no('https://example.com/docs/a.PDF', r, 'exclude');
    no('https://example.com/blog/a', r, 'include');
  });

  test('no include patterns means everything in scope is included', () => {
    const r = rules('host', ['https://example.com/'], { exclude: [/logout/] });
    yes('https://example.com/anything', r);
    no('https://example.com/logout', r, 'exclude');
  });

  test('the scope is checked first, patterns then', () => {
    const r = rules('host', ['https://example.com/'], { include: [/./], exclude: [/other/] });
    no('https://other.com/', r, 'scope');
  });

  test('patterns match the normalized URL (no fragment, no tracking parameters)', () => {
    const r = rules('host', ['https://example.com/'], {
      exclude: [/utm_source/, /#/, /^https:\/\/example\.com\/A$/],
    });
    yes('https://example.com/a?utm_source=x#frag', r);
    no('HTTPS://EXAMPLE.COM/A', r, 'exclude');
  });

  test('a global flag does not make matching depend on earlier calls', () => {
    const r = rules('host', ['https://example.com/'], { include: [/page/g], exclude: [/secret/g] });
    for (let i = 0; i < 3; i++) yes('https://example.com/page', r);
    for (let i = 0; i < 3; i++) no('https://example.com/page/secret', r, 'exclude');
  });
});

describe('seeds with userinfo', () => {
  test('the parsed crawl config keeps no secret in its seeds, invalid ones included', () => {
    const config = parseCrawlConfig({
      crawlId: 'c1',
      seeds: [
        'http://user:secret@127.0.0.1:8080/start',
        'HTTPS://Example.com/as/written',
        'ftp://user:secret@example.com/f',
        'http://user:secret@exa mple.com/',
      ],
    });
    assert.deepEqual(config.seeds, [
      'http://127.0.0.1:8080/start',
      'HTTPS://Example.com/as/written',
      'ftp://example.com/f',
      'http://exa mple.com/',
    ]);
    assert.ok(!JSON.stringify(config).includes('secret'));
  });

  test('the scope compiled from such a config still works', () => {
    const config = parseCrawlConfig({
      crawlId: 'c1',
      scope: 'prefix',
      seeds: ['http://user:secret@127.0.0.1:8080/docs/'],
    });
    const scope = compileScope({ scope: config.scope, seeds: config.seeds, include: [], exclude: [] });
    assert.deepEqual(scope.seeds, ['http://127.0.0.1:8080/docs/']);
    assert.deepEqual(scope.inScope('http://127.0.0.1:8080/docs/a'), { ok: true });
    assert.equal(scope.inScope('http://127.0.0.1:8080/blog/').ok, false);
    assert.equal(scope.inScope('http://127.0.0.1:9090/docs/a').ok, false);
  });

  test('prefix scope compares without userinfo on either side', () => {
    const r = rules('prefix', ['http://user:secret@example.com/docs/']);
    yes('http://example.com/docs/a', r);
    yes('http://other:pw@example.com/docs/b', r);
    no('http://example.com/blog/', r, 'scope');
  });
});

describe('compileScope', () => {
  test('reports invalid seeds and ignores them', () => {
    const compiled = compileScope(rules('host', ['not a url', 'mailto:x@y', 'https://Example.com/']));
    assert.deepEqual(compiled.seeds, ['https://example.com/']);
    assert.deepEqual(
      compiled.invalidSeeds.map((s) => s.seed),
      ['not a url', 'mailto:x@y'],
    );
    assert.ok(compiled.invalidSeeds.every((s) => s.reason.length > 0));
    assert.deepEqual(compiled.inScope('https://example.com/x'), { ok: true });
  });

  test('with no valid seed nothing is in scope', () => {
    const decision = inScope(new URL('https://example.com/'), rules('domain', []));
    assert.equal(decision.ok, false);
    if (!decision.ok) {
      assert.equal(decision.reason, 'scope');
      assert.match(decision.detail, /no valid seed/);
    }
  });

  test('explains a decision in words', () => {
    const decision = inScope(new URL('https://other.org/x'), rules('host', ['https://example.com/']));
    assert.equal(decision.ok, false);
    if (!decision.ok)
      assert.match(
        decision.detail,
        /host other\.org is outside the host scope; expected one of: example\.com/,
      );
  });

  test('accepts strings as well as URL objects', () => {
    const compiled = compileScope(rules('prefix', ['https://example.com/a/']));
    assert.deepEqual(compiled.inScope('https://example.com/a/b'), { ok: true });
    assert.equal(compiled.inScope('not a url').ok, false);
  });

  test('does not cap URL length (that is a separate check)', () => {
    const long = `https://example.com/${'a'.repeat(5000)}`;
    yes(long, rules('host', ['https://example.com/']));
  });
});

describe('scope of many seeds (a seeds file)', () => {
  /** CPU ms of `checks` scope checks against a prefix scope of `seeds` seeds (the fastest of 3). */
  function checkCost(seeds: number, checks: number): number {
    const compiled = compileScope(
      rules(
        'prefix',
        Array.from({ length: seeds }, (_, i) => `https://h${i % 500}.example/dir${i}/page.html`),
      ),
    );
    // The last seeds' prefixes: a scan in seed order meets them last.
    const urls = Array.from({ length: checks }, (_, i) => {
      const seed = seeds - 1 - i;
      return `https://h${seed % 500}.example/dir${seed}/other/x`;
    });
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 3; round++) {
      const start = process.cpuUsage();
      for (const url of urls) assert.deepEqual(compiled.inScope(url), { ok: true });
      const used = process.cpuUsage(start);
      best = Math.min(best, (used.user + used.system) / 1000);
    }
    return best;
  }

  test('a prefix check costs a few lookups, not a scan of every seed', () => {
    // 20,000 vs 80,000 prefixes, 2,000 checks each: a scan of the prefixes grows 4x, lookups do not.
    const small = checkCost(20_000, 2_000);
    const large = checkCost(80_000, 2_000);
    assert.ok(large / small < 2.5, `${small.toFixed(1)} ms at 20k prefixes, ${large.toFixed(1)} ms at 80k`);
  });

  test('a scope given by its keys decides as the scope of its seeds', () => {
    const seeds = ['https://a.example/docs/intro.html', 'http://127.0.0.1:8080/x/', 'https://b.example/'];
    for (const scope of ['host', 'domain', 'prefix'] as const) {
      const fromSeeds = compileScope(rules(scope, seeds));
      const keys = seeds.map((seed) => {
        const key = seedScopeKey(scope, seed);
        assert.ok(key.ok);
        return key.key;
      });
      const fromKeys = compileScopeKeys({ scope, keys, include: [], exclude: [/private/] });
      const excluded = compileScope(rules(scope, seeds, { exclude: [/private/] }));
      for (const url of [
        'https://a.example/docs/more/page',
        'https://a.example/other',
        'https://sub.a.example/docs/x',
        'http://127.0.0.1:8080/x/y',
        'http://127.0.0.1:9090/x/y',
        'https://b.example/private/z',
        'https://c.example/',
      ])
        assert.deepEqual(fromKeys.inScope(url), excluded.inScope(url), `${scope} ${url}`);
      assert.ok(fromSeeds.inScope('https://a.example/docs/more/page').ok);
    }
  });
});
