/**
 * A crawl whose process died between a wake's claim and its visit message (a kill while the seeds
 * were being submitted: the URL item is written, its host claimed, the message never sent), then
 * served by a new process on the same state dir, as `crawler local` or `crawler crawl --resume` do
 * (it finds the dead process's lock and takes it over).
 * Nothing else would ever wake the host (its only URL is the seed), so the crawl would stay running
 * with one URL pending for ever: the process taking the state over must send the host its visit.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { FrontierHosts } from '../../lambdas/adapters/frontier-hosts.ts';
import { hostItemKey, resolveOptions } from '../../lambdas/adapters/frontier-schema.ts';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { LruSet } from '../../lambdas/core/base/index.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { admitLinks } from '../../lambdas/core/frontier/index.ts';
import { OUTPUTS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { FRONTIER_TABLE, startFrontierTable } from '../fixtures/frontier-table.ts';

describe('FrontierHosts.sweep', () => {
  it('claims again only the hosts with no live lease and no visit due later; the old ticket is stale', async () => {
    const table = await startFrontierTable();
    try {
      const hosts = new FrontierHosts(table.dynamodb, FRONTIER_TABLE, resolveOptions());
      const crawlId = 'sweep';
      const now = Date.now();
      // Claimed by a wake, its message never sent: stranded.
      const lost = await hosts.wake(crawlId, 'stranded.test', now - 1000);
      assert.ok(lost);
      // A visit holds it: left alone.
      const live = await hosts.wake(crawlId, 'leased.test', now - 1000);
      await hosts.acquire(crawlId, 'leased.test', 'visit-1', now + 60_000, now - 500, live);
      // Handed back, its message due in 10 minutes: left alone.
      const back = await hosts.wake(crawlId, 'later.test', now - 1000);
      await hosts.acquire(crawlId, 'later.test', 'visit-2', now + 60_000, now - 500, back);
      await hosts.release(crawlId, 'later.test', 'visit-2', {
        nextAt: now,
        inflight: [],
        visitAt: now + 600_000,
        ticket: 'hand-back',
      });
      // Active with no claim at all (killed between the ADD and the claim): stranded too.
      await table.dynamodb.send(
        new UpdateItemCommand({
          TableName: FRONTIER_TABLE,
          Key: hostItemKey(crawlId, 'unclaimed.test'),
          UpdateExpression: 'ADD wake :one',
          ExpressionAttributeValues: { ':one': { N: '1' } },
        }),
      );

      const swept = await hosts.sweep(crawlId, now, now);
      assert.deepEqual(swept.map((entry) => entry.host).sort(), ['stranded.test', 'unclaimed.test']);
      const stranded = swept.find((entry) => entry.host === 'stranded.test')!;
      assert.notEqual(stranded.ticket, lost);
      assert.deepEqual(await hosts.acquire(crawlId, 'stranded.test', 'late', now + 60_000, now, lost), {
        busy: 'stale',
      });
      assert.ok(
        !(
          'busy' in (await hosts.acquire(crawlId, 'stranded.test', 'new', now + 60_000, now, stranded.ticket))
        ),
        'the new ticket takes the host',
      );
      // Swept again at once: every host is now leased or due, nothing is sent twice.
      assert.deepEqual(
        (await hosts.sweep(crawlId, now, now)).map((entry) => entry.host),
        [],
      );
    } finally {
      await table.stop();
    }
  });
});

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

  const staleLines: string[] = [];
  const start = () =>
    startLocalAws({
      template: parseTemplate(synthesizeTemplate()),
      stackName: STACK_NAME,
      stateDir,
      onStaleLock: (line) => staleLines.push(line),
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
    // Killed: what it wrote stays, and so does its lock, naming a process that is gone.
    await local.stop();
    local = undefined;
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    await writeFile(join(stateDir, 'lock'), String(gone));

    // The next process on the same state: nothing else will ever wake the seed's host.
    local = await start();
    assert.match(staleLines.join('\n'), /which is gone: taking the lock over/);
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
