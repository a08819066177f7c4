/**
 * A crawl whose process died between a wake's claim and its visit message (a kill while the seeds
 * were being submitted: the URL item is written, its host claimed, the message never sent), then
 * served by a new process on the same state dir, as `crawler local` or `crawler crawl --resume` do.
 * Nothing else would ever wake the host (its only URL is the seed), so the crawl would stay running
 * with one URL pending for ever: the process taking the state over must send the host its visit.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl-config.ts';
import { admitLinks } from '../../lambdas/core/link-admission.ts';
import { LruSet } from '../../lambdas/core/lru.ts';
import { OUTPUTS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';

describe('taking over the state of a process killed between a wake claim and its send', () => {
  let stateDir: string;
  let site: http.Server;
  let origin: string;
  const requests: string[] = [];
  let local: LocalAws | undefined;

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'takeover-sweep-'));
    site = http.createServer((req, res) => {
      requests.push(req.url ?? '');
      if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end('<p>home</p>');
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  });
  after(async () => {
    await local?.stop();
    site.closeAllConnections();
    await new Promise((resolve) => site.close(resolve));
    await rm(stateDir, { recursive: true, force: true });
  });

  const start = () =>
    startLocalAws({
      template: parseTemplate(synthesizeTemplate()),
      stackName: STACK_NAME,
      stateDir,
      handlerEnvOverrides: { LOG_LEVEL: 'silent' },
      log: () => {},
    });

  it('the host gets its visit and the crawl completes', { timeout: 240_000 }, async () => {
    const config = parseCrawlConfig({
      crawlId: `takeover-${Date.now().toString(36)}`,
      seeds: [`${origin}/`],
      allowPrivate: true,
      delayMs: 0,
    });
    // The first process: submits as submitCrawl does, and dies before it sends the visit it claimed.
    local = await start();
    const table = local.outputs[OUTPUTS.frontierTableName]!;
    const frontier = createFrontierStore(local.clients.dynamodb, table);
    await new CrawlConfigStore(local.clients.dynamodb, table).put(config);
    const admitted = await admitLinks(
      [{ config, parentKey: 'seed', depth: -1, links: [{ url: `${origin}/`, nofollow: false }] }],
      { frontier, hosts: frontier, seen: new LruSet(1), now: new Date() },
    );
    assert.equal(admitted.visits.length, 1, 'the wake claimed the send of one visit');
    await local.stop();
    local = undefined;

    // The next process on the same state: nothing else will ever wake the seed's host.
    local = await start();
    await local.start();
    await local.waitForIdle({ timeoutMs: 200_000 });
    const counters = await createFrontierStore(
      local.clients.dynamodb,
      local.outputs[OUTPUTS.frontierTableName]!,
    ).readCounters(config.crawlId);
    assert.deepEqual(
      { state: counters?.state, done: counters?.done, queued: counters?.queued },
      { state: 'complete', done: 1, queued: 1 },
      'the seed was visited and the crawl completed',
    );
    assert.deepEqual(
      requests.filter((path) => path !== '/robots.txt'),
      ['/'],
    );
  });
});
