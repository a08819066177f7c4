/**
 * `crawler crawl` with a header, a cookie and HTTP Basic credentials (issue 27, point 2), against two
 * loopback hosts: 127.0.0.2 requires each credential on its own page and redirects one page to
 * 127.0.0.3, which records every request it gets. The credentials go to 127.0.0.2 only
 * (`--credentials-hosts`), never to 127.0.0.3, not even through the redirect; the WARC request records
 * say REDACTED where a secret was sent, and no output file, log line or the crawl's config holds one.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { iterateWarcFile } from '../../lambdas/core/archive/index.ts';
import {
  type Answer,
  type LoopbackHost,
  htmlPage as page,
  startLoopbackHost,
} from '../fixtures/loopback-host.ts';
import { type CrawlRun, runCrawl, tempDir } from '../fixtures/run-cli.ts';

const API_KEY = 'k-1234567890-api';
const SESSION = 's-0987654321-session';
const USER = 'ann';
const PASSWORD = 'pw-5555-secret';
const BASIC = Buffer.from(`${USER}:${PASSWORD}`).toString('base64');
const SECRETS = [API_KEY, SESSION, PASSWORD, BASIC];

describe('crawler crawl --header --cookie --basic-auth', () => {
  let secured: LoopbackHost;
  let other: LoopbackHost;
  let crawl: CrawlRun;
  let out: { path: string; remove(): Promise<void> };
  let state: { path: string; remove(): Promise<void> };

  before(async () => {
    other = await startLoopbackHost('127.0.0.3', (req) =>
      req.url === '/robots.txt' ? [404, {}, ''] : [200, {}, page(`other ${req.url}`)],
    );
    secured = await startLoopbackHost('127.0.0.2', (req) => {
      const path = req.url ?? '/';
      const denied: Answer = [401, { 'www-authenticate': 'Basic realm="t"' }, 'no'];
      if (path === '/robots.txt') return [404, {}, ''];
      if (path === '/') return [200, {}, page('home', ['/keyed', '/cookied', '/basic', '/away'])];
      if (path === '/keyed') return req.headers['x-api-key'] === API_KEY ? [200, {}, page('keyed')] : denied;
      if (path === '/cookied')
        return req.headers.cookie === `session=${SESSION}` ? [200, {}, page('cookied')] : denied;
      if (path === '/basic')
        return req.headers.authorization === `Basic ${BASIC}` ? [200, {}, page('basic')] : denied;
      if (path === '/away') return [302, { location: `${other.origin}/landing` }, ''];
      return [404, {}, 'not found'];
    });
    out = await tempDir('crawler-e2e-credentials-');
    state = await tempDir('crawler-e2e-credentials-state-');
    const securedHost = new URL(secured.origin).host;
    crawl = await runCrawl(
      [`${secured.origin}/`, `${other.origin}/`],
      [
        '--allow-private',
        '--delay',
        '0',
        '--header',
        `X-Api-Key: ${API_KEY}`,
        '--cookie',
        `session=${SESSION}`,
        '--basic-auth',
        `${USER}:${PASSWORD}`,
        '--credentials-hosts',
        securedHost,
      ],
      { outDir: join(out.path, 'out'), stateDir: state.path },
    );
  });

  after(async () => {
    await out?.remove();
    await state?.remove();
    await secured?.close();
    await other?.close();
  });

  it('gets each protected page with its credential', () => {
    const status = (path: string) =>
      crawl.results.find((line) => line.url === `${secured.origin}${path}`)?.status;
    assert.deepEqual(
      ['/', '/keyed', '/cookied', '/basic', '/away'].map((path) => [path, status(path)]),
      [
        ['/', 200],
        ['/keyed', 200],
        ['/cookied', 200],
        ['/basic', 200],
        ['/away', 302],
      ],
    );
  });

  it('sends none to the other host, also not through the redirect', () => {
    const paths = other.requests.map((request) => request.path).sort();
    assert.ok(paths.includes('/landing'), `the redirect was followed: ${paths.join(', ')}`);
    for (const request of other.requests) {
      assert.equal(request.headers['x-api-key'], undefined, request.path);
      assert.equal(request.headers.cookie, undefined, request.path);
      assert.equal(request.headers.authorization, undefined, request.path);
      for (const secret of SECRETS) assert.ok(!request.raw.includes(secret), `${request.path} got a secret`);
    }
  });

  it('keeps the header names and REDACTED in the WARC request records, and no secret anywhere in the output', async () => {
    let redacted = 0;
    for (const name of crawl.warcFiles) {
      const bytes = await readFile(join(crawl.outDir, 'warc', name));
      for (const { record } of iterateWarcFile(bytes)) {
        const text = Buffer.from(record.block).toString('latin1');
        for (const secret of SECRETS) assert.ok(!text.includes(secret), `${name}: a record holds a secret`);
        if (record.header('WARC-Type') !== 'request') continue;
        if (record.header('WARC-Target-URI')?.startsWith(secured.origin)) {
          assert.match(text, /\r\nx-api-key: REDACTED\r\n/i);
          assert.match(text, /\r\ncookie: REDACTED\r\n/i);
          assert.match(text, /\r\nauthorization: REDACTED\r\n/i);
          redacted += 1;
        } else {
          assert.doesNotMatch(text, /REDACTED/);
        }
      }
    }
    assert.ok(redacted >= 5, `request records of the secured host: ${redacted}`);
    for (const file of await readdir(crawl.outDir)) {
      if (file === 'warc') continue;
      const text = await readFile(join(crawl.outDir, file), 'utf8');
      for (const secret of SECRETS) assert.ok(!text.includes(secret), `${file} holds a secret`);
    }
    for (const secret of SECRETS) {
      assert.ok(!crawl.stderr.includes(secret) && !crawl.stdout.includes(secret), 'the CLI printed a secret');
    }
  });
});
