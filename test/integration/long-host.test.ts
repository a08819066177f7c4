/**
 * A page links to hosts whose names are longer than SQS's 128-character MessageGroupId and share
 * their first 128 characters: the crawl, with the real handlers on the emulators behind the strict
 * layer (which refuses an invalid group id as SQS does), fetches both, and each host's visits travel
 * in a message group of its own. The network is synthetic (test/fixtures/synthetic-web.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { messageGroupOf } from '../../lambdas/adapters/queues.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { readCrawlResults } from '../../lambdas/core/archive/index.ts';
import { type PageRequest, type PageResponse, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { type FaultProxy, startFaultProxy } from '../fixtures/fault-proxy.ts';
import { installSyntheticWeb, useSyntheticFetchHandler } from '../fixtures/synthetic-fetch-handler.ts';
import { SyntheticWeb } from '../fixtures/synthetic-web.ts';

const SEED_HOST = 'example.test';
// 63 + 1 + 63 + 1 = 128 shared characters, then `x1.` / `x2.`: 145 characters each.
const SHARED = `${'a'.repeat(63)}.${'b'.repeat(63)}.`;
const LONG_HOSTS = [`${SHARED}x1.${SEED_HOST}`, `${SHARED}x2.${SEED_HOST}`];

/** The seed page links to both long hosts; each long host serves one page. */
class LongHostWeb extends SyntheticWeb {
  constructor() {
    super({ hosts: 0, pagesPerHost: 0, latencyMs: 1 });
  }

  override async fetch(request: PageRequest): Promise<PageResponse> {
    const { host, pathname } = request.url;
    this.requests.push({ host, path: pathname, at: Date.now() });
    const links = host === SEED_HOST ? LONG_HOSTS.map((h) => `<a href="http://${h}/">${h}</a>`).join('') : '';
    const [status, type, text] =
      pathname === '/robots.txt'
        ? [200, 'text/plain', 'User-agent: *\nAllow: /\n']
        : pathname === '/'
          ? [200, 'text/html', `<!doctype html><title>${host}</title>${links}`]
          : [404, 'text/plain', 'not found'];
    const body = new TextEncoder().encode(text);
    return {
      url: request.url.href,
      requestLine: `GET ${pathname} HTTP/1.1`,
      requestHeaders: [['host', host]],
      httpVersion: '1.1',
      status,
      statusText: status === 200 ? 'OK' : 'Not Found',
      headers: [
        ['content-type', type],
        ['content-length', String(body.byteLength)],
      ],
      body,
      truncated: undefined,
      remoteAddress: '192.0.2.1',
      startedAt: new Date(),
      elapsedMs: 1,
    };
  }
}

describe('hosts with names longer than a MessageGroupId', () => {
  const web = new LongHostWeb();
  const groups: string[] = [];
  let emulators: Emulators;
  let proxy: FaultProxy;
  let local: LocalAws;

  before(async () => {
    installSyntheticWeb(web);
    emulators = await startEmulators();
    // No faults: the proxy only collects the MessageGroupIds the handlers send.
    proxy = await startFaultProxy({
      upstream: emulators.endpoints,
      observe: (call, body) => {
        if (call.service !== 'sqs' || !call.operation.startsWith('SendMessage')) return;
        const sent = JSON.parse(body.toString('utf8')) as {
          MessageGroupId?: string;
          Entries?: Array<{ MessageGroupId?: string }>;
        };
        for (const entry of sent.Entries ?? [sent])
          if (entry.MessageGroupId) groups.push(entry.MessageGroupId);
      },
    });
    local = await startLocalAws({
      template: useSyntheticFetchHandler(parseTemplate(synthesizeTemplate())),
      stackName: STACK_NAME,
      endpoint: proxy.endpoints,
      handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    });
  });
  after(async () => {
    await local?.stop();
    await proxy?.stop();
    await emulators?.stop();
    installSyntheticWeb(undefined);
  });

  it('crawls both, each host in a valid message group of its own', async () => {
    const config = parseCrawlConfig({
      crawlId: `long-${Date.now().toString(36)}`,
      seeds: [`http://${SEED_HOST}/`],
      scope: 'domain',
      delayMs: 0,
    });
    await submitCrawl(local, config);
    await local.start();
    await local.waitForIdle({ timeoutMs: 120_000 });

    const blobs = new S3Blobs(local.clients.s3, local.outputs.PageBucketName!);
    const results = await readCrawlResults(blobs, config.crawlId);
    assert.deepEqual(
      results.map((r) => [r.url, r.outcome]).sort(),
      [`http://${SEED_HOST}/`, ...LONG_HOSTS.map((h) => `http://${h}/`)]
        .sort()
        .map((url) => [url, 'fetched']),
    );
    for (const host of LONG_HOSTS)
      assert.ok(
        web.requests.some((r) => r.host === host && r.path === '/'),
        host,
      );

    const [first, second] = LONG_HOSTS.map((host) => messageGroupOf(host)!) as [string, string];
    assert.ok(
      groups.includes(first) && groups.includes(second),
      `groups sent: ${[...new Set(groups)].join(', ')}`,
    );
    assert.notEqual(first, second, 'hosts sharing 128 characters share no group');
    for (const group of groups) assert.ok(group.length <= 128, group);
  });
});

describe('messageGroupOf', () => {
  it('is the host itself when it fits, and a bounded, distinct id when it does not', () => {
    assert.equal(messageGroupOf('example.com:8080'), 'example.com:8080');
    assert.equal(messageGroupOf(''), undefined);
    const [a, b] = LONG_HOSTS.map((host) => messageGroupOf(host)!) as [string, string];
    assert.ok(a.length <= 128 && b.length <= 128);
    assert.notEqual(a, b);
    assert.ok(a.startsWith(SHARED.slice(0, 100)), 'readable: it starts with the host');
    assert.equal(messageGroupOf(LONG_HOSTS[0]!), a, 'stable');
    assert.match(a, /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/);
  });
});
