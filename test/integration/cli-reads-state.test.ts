// The read commands without --endpoint: they find the embedded AWS through its state dir, both while
// the process that crawled still holds it (read through its emulators) and after it stopped (the
// locator starts the emulators on the persisted state, with the storage names its marker recorded,
// or, for a marker without them, provisions as before).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import type { CliIo } from '../../cli/cli-io.ts';
import { getCommand } from '../../cli/get-command.ts';
import { resultsCommand } from '../../cli/results-command.ts';
import { statusCommand } from '../../cli/status-command.ts';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { SqsTaskSender } from '../../lambdas/adapters/queues.ts';
import { parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { locateStack } from '../../local/stack-locator.ts';
import { readStateMarker, STORAGE_OUTPUTS, stateLayout } from '../../local/state-dir.ts';
import { Capture } from '../fixtures/capture.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

const PAGE = '<html><body>stored on disk</body></html>';

async function cli(command: (args: string[], io?: Partial<CliIo>) => Promise<number>, ...args: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await command(args, { stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

let site: TestSite;
let aws: LocalAws | undefined;
let tempDir: string;
let stateDir: string;
let crawlId: string;
/** The outputs the crawling process provisioned. */
let outputs: Record<string, string>;

before(async () => {
  site = await startSite({ '/': html(PAGE) });
  tempDir = await mkdtemp(join(tmpdir(), 'cli-reads-state-'));
  stateDir = join(tempDir, 'state');
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    stateDir,
    handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    log: () => {},
  });
  outputs = { ...aws.outputs };
  crawlId = `state-${randomUUID().slice(0, 8)}`;
  await new CrawlConfigStore(aws.clients.dynamodb, aws.outputs.FrontierTableName!).put(
    parseCrawlConfig({ crawlId, seeds: [`${site.origin}/`], allowPrivate: true, delayMs: 0 }),
  );
  await new SqsTaskSender(aws.clients.sqs, aws.outputs.TaskQueueUrl!).sendTasks([
    { v: 1, crawlId, url: `${site.origin}/`, depth: 0 },
  ]);
  await aws.start();
  await aws.waitForIdle({ timeoutMs: 120_000 });
});

after(async () => {
  await aws?.stop();
  await site?.close();
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

describe('read commands on the local state dir', () => {
  it('read through the running process that holds the state', async () => {
    const status = await cli(statusCommand, crawlId, '--json', '--state-dir', stateDir);
    assert.equal(status.code, 0, status.stderr);
    assert.equal(JSON.parse(status.stdout).state, 'complete');
    const body = await cli(getCommand, `${site.origin}/`, '--crawl', crawlId, '--state-dir', stateDir);
    assert.equal(body.code, 0, body.stderr);
    assert.equal(body.stdout, PAGE);
  });

  it('read the persisted state after that process stopped', async () => {
    await aws?.stop();
    aws = undefined;
    const results = await cli(resultsCommand, crawlId, '--state-dir', stateDir);
    assert.equal(results.code, 0, results.stderr);
    const lines = results.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    assert.equal(JSON.parse(lines[0]!).url, `${site.origin}/`);
    const body = await cli(getCommand, `${site.origin}/`, '--crawl', crawlId, '--state-dir', stateDir);
    assert.equal(body.stdout, PAGE);
    const unknown = await cli(statusCommand, 'nope', '--state-dir', stateDir);
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.stderr,
      `no crawl nope in local state in ${stateDir}; check the id, or point at where it ran (--endpoint, --stack, --state-dir)\n`,
    );
  });

  it('open a stopped state for storage with the names its marker recorded, without provisioning; a marker without them is provisioned again and then records them', async () => {
    assert.equal(aws, undefined, 'the crawling process has stopped');
    const storage = Object.fromEntries(STORAGE_OUTPUTS.map((name) => [name, outputs[name]]));
    assert.deepEqual(readStateMarker(stateDir)?.storage, storage);
    const stored = await locateStack({ stateDir, storageOnly: true });
    try {
      assert.equal(stored.mode, 'embedded');
      assert.deepEqual(stored.outputs, storage, 'the storage names alone: nothing was provisioned');
    } finally {
      await stored.close();
    }

    // A state from before the marker kept them (or a marker whose names are damaged): read as before.
    const { markerFile } = stateLayout(stateDir);
    const marker = JSON.parse(await readFile(markerFile, 'utf8'));
    for (const damaged of [undefined, { [STORAGE_OUTPUTS[0]]: 5 }]) {
      await writeFile(markerFile, JSON.stringify({ ...marker, storage: damaged }));
      assert.equal(readStateMarker(stateDir)?.storage, undefined, JSON.stringify(damaged));
      const results = await cli(resultsCommand, crawlId, '--state-dir', stateDir);
      assert.equal(results.code, 0, results.stderr);
      assert.equal(JSON.parse(results.stdout.trim()).url, `${site.origin}/`);
      assert.deepEqual(readStateMarker(stateDir)?.storage, storage, 'provisioning recorded them again');
    }
  });

  it('prints one line and exits 1 when there is no stack to read', async () => {
    const empty = join(tempDir, 'empty');
    const none = await cli(statusCommand, crawlId, '--state-dir', empty);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^cannot open the local state in .*empty: no local crawl state in .*\n$/);
    const closed = await cli(resultsCommand, crawlId, '--endpoint', 'http://127.0.0.1:9');
    assert.equal(closed.code, 1);
    assert.match(closed.stderr, /^cannot open the AWS at http:\/\/127\.0\.0\.1:9: /);
    assert.equal(closed.stdout, '');
  });
});
