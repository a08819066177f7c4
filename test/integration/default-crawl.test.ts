/**
 * The `default` crawl (bare URLs sent to the task queue) never ends: its status and summary.json
 * stay truthful as messages keep arriving. Real pipeline: embedded emulators, real handlers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import type { CrawlStatus } from '../../cli/status-command.ts';
import { statusCommand } from '../../cli/status-command.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { DEFAULT_CRAWL_ID } from '../../lambdas/core/crawl/index.ts';
import { STACK_NAME, summaryKey } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { ioAgainst } from '../fixtures/local-cli-io.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

describe('the default crawl', () => {
  let site: TestSite;
  let local: LocalAws;
  before(async () => {
    site = await startSite({ '/a': html('a'), '/b': html('b'), '/c': html('c') });
    local = await startLocalAws({
      template: parseTemplate(synthesizeTemplate()),
      stackName: STACK_NAME,
      handlerEnvOverrides: {
        LOG_LEVEL: 'silent',
        DEFAULT_CRAWL_CONFIG: JSON.stringify({ allowPrivate: true, delayMs: 0 }),
      },
    });
    await local.start();
  });
  after(async () => {
    await local?.stop();
    await site?.close();
  });

  const send = async (path: string) => {
    await local.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: local.outputs.TaskQueueUrl, MessageBody: `${site.origin}${path}` }),
    );
    await local.waitForIdle({ timeoutMs: 60_000 });
  };

  const status = async (): Promise<CrawlStatus> => {
    const io = ioAgainst(local);
    const code = await statusCommand([DEFAULT_CRAWL_ID, '--json'], io);
    assert.equal(code, 0);
    return JSON.parse(io.stdout.text) as CrawlStatus;
  };

  const summary = async () => {
    const blobs = new S3Blobs(local.clients.s3, local.outputs.PageBucketName!);
    const bytes = await blobs.get(summaryKey(DEFAULT_CRAWL_ID));
    return JSON.parse(Buffer.from(bytes).toString('utf8')) as {
      state: string;
      done: number;
      byOutcome: Record<string, number>;
    };
  };

  it('keeps counting, stays running, and rewrites its summary as messages keep arriving', async () => {
    for (const [i, path] of ['/a', '/b', '/c'].entries()) {
      await send(path);
      const now = await status();
      assert.equal(now.state, 'running', `after ${path}: a crawl that takes URLs for ever is never complete`);
      assert.equal(now.byOutcome.fetched, i + 1, `after ${path}: status counts every page`);
      assert.equal(now.pending, 0, `after ${path}: nothing is pending once idle`);
      const written = await summary();
      assert.equal(written.state, 'running');
      assert.equal(written.byOutcome.fetched, i + 1, `after ${path}: summary.json froze`);
      assert.equal(written.done, i + 1);
    }
    assert.equal(site.hits.get('/c'), 1);
  });
});
