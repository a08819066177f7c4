// At-least-once delivery, exactly-once effect: the same task message delivered twice (at once, and
// again after its URL is done) is fetched once and yields one index line. Drives the real pipeline
// in-process: embedded emulators provisioned from the synthesized stack (cdk/synth.ts), the real fetch
// and aggregate handlers behind the local event-source pollers, and a generated site on 127.0.0.1.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import type { IdleSnapshot } from '../../local/idle.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { type GeneratedSite, startGeneratedSite } from '../fixtures/generated-site.ts';

const IDLE_TIMEOUT_MS = 150_000;

function output(local: LocalAws, name: string): string {
  const value = local.outputs[name];
  assert.ok(value, `the stack has no ${name} output`);
  return value;
}

/** Every line of every index part of the crawl, as stored (no deduplication), by URL. */
async function indexLinesByUrl(local: LocalAws, crawlId: string): Promise<Map<string, number>> {
  const blobs = new S3Blobs(local.clients.s3, output(local, 'PageBucketName'));
  const counts = new Map<string, number>();
  for await (const key of blobs.list(`results/${crawlId}/`)) {
    if (!key.endsWith('.gz')) continue;
    const text = gunzipSync(await blobs.get(key)).toString('utf8');
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const parsed: unknown = JSON.parse(line);
      assert.ok(
        typeof parsed === 'object' && parsed !== null && 'url' in parsed && typeof parsed.url === 'string',
      );
      counts.set(parsed.url, (counts.get(parsed.url) ?? 0) + 1);
    }
  }
  return counts;
}

/** Messages in each dead-letter queue (visible + in flight + delayed). */
function dlqMessages(snapshot: IdleSnapshot): Record<string, number> {
  return Object.fromEntries(
    Object.entries(snapshot.queues)
      .filter(([id]) => /dlq/i.test(id))
      .map(([id, depth]) => [id, depth.visible + depth.inFlight + depth.delayed]),
  );
}

describe('duplicate delivery: one fetch and one index line per task, however often it arrives', () => {
  let site: GeneratedSite;
  let local: LocalAws;
  const crawlId = `dup-${randomUUID().slice(0, 8)}`;
  let send: (task: object) => Promise<void>;

  before(
    async () => {
      site = await startGeneratedSite({
        pages: 6,
        nav: false,
        notFound: 0,
        errors: 0,
        redirects: false,
        trap: false,
        privatePages: 0,
        nofollow: false,
        externalLinks: false,
      });
      local = await startLocalAws({
        template: parseTemplate(synthesizeTemplate()),
        stackName: STACK_NAME,
        concurrencyOverride: { FetchFunction: 3 },
        handlerEnvOverrides: { LOG_LEVEL: 'warn' },
      });
      const config = parseCrawlConfig({
        crawlId,
        seeds: [`${site.origin}/`],
        allowPrivate: true,
        delayMs: 0,
        createdAt: new Date().toISOString(),
      });
      await new CrawlConfigStore(local.clients.dynamodb, output(local, 'FrontierTableName')).put(config);
      const queueUrl = output(local, 'TaskQueueUrl');
      send = async (task) => {
        await local.clients.sqs.send(
          new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(task) }),
        );
      };
    },
    { timeout: 60_000 },
  );
  after(async () => {
    await local?.stop();
    await site?.close();
  });

  it('fetches a task delivered twice at once only once', { timeout: IDLE_TIMEOUT_MS + 10_000 }, async () => {
    const seed = { v: 1, crawlId, url: `${site.origin}/`, depth: 0 };
    const child = { v: 1, crawlId, url: `${site.origin}/p/2`, depth: 1 };
    // Each message twice, the child three times: delivered in one batch or to parallel slots.
    for (const task of [seed, seed, child, child, child]) await send(task);
    await local.start();
    const idle = await local.waitForIdle({ timeoutMs: IDLE_TIMEOUT_MS });

    const plan = site.expected;
    assert.deepEqual([...site.hits].sort(), [...plan.expectedHits].sort(), 'requests per path');
    const lines = await indexLinesByUrl(local, crawlId);
    assert.deepEqual(
      [...lines].filter(([, count]) => count !== 1),
      [],
      'URLs with more than one index line',
    );
    assert.deepEqual([...lines.keys()].sort(), [...plan.outcomes.keys()].sort(), 'URLs in the index');
    const dlqs = dlqMessages(idle);
    assert.equal(Object.keys(dlqs).length, 4, 'TaskDLQ, ResultsDLQ, RenderDLQ and CrawlEventsDLQ');
    assert.deepEqual(Object.values(dlqs), [0, 0, 0, 0], `nothing parked in a DLQ: ${JSON.stringify(dlqs)}`);
  });

  it('drops a late duplicate of a task whose URL is already done', {
    timeout: IDLE_TIMEOUT_MS + 10_000,
  }, async () => {
    const hitsBefore = [...site.hits].sort();
    const linesBefore = await indexLinesByUrl(local, crawlId);
    await send({ v: 1, crawlId, url: `${site.origin}/`, depth: 0 });
    await send({ v: 1, crawlId, url: `${site.origin}/p/4`, depth: 1 });
    await local.waitForIdle({ timeoutMs: IDLE_TIMEOUT_MS });

    assert.deepEqual([...site.hits].sort(), hitsBefore, 'a done URL was fetched again');
    assert.deepEqual([...(await indexLinesByUrl(local, crawlId))], [...linesBefore], 'the index changed');
  });
});
