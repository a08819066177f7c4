/**
 * Re-crawl (issue 26), end to end with the real CLI on a loopback site that changes between two
 * crawls (test/fixtures/changing-site.ts): `crawler crawl --since latest` asks each earlier URL
 * conditionally, stores unchanged pages as WARC revisit records (read back with warcio.js), and says
 * of every URL whether it is new, same, changed or removed, exactly as the site's own list says.
 * Then `crawler results --change`, `crawler diff` and `crawler get` of a revisited page, and the
 * same site without validators (same pages found by payload digest, no body stored twice).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { WARCParser } from 'warcio';
import { OUTPUTS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { requiredOutput } from '../../lambdas/shared/required-output.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import type { EventEnvelope } from '../../local/eventbridge-server.ts';
import { EVENTS_LOG, startLocalAws } from '../../local/local-aws.ts';
import { stackTemplate } from '../../local/stack-template.ts';
import { type ChangingSite, startChangingSite } from '../fixtures/changing-site.ts';
import { assertValidEvent, kindOf } from '../fixtures/event-schemas.ts';
import { type CrawlRun, runCli, runCrawl, tempDir } from '../fixtures/run-cli.ts';
import { verifyWarc } from '../fixtures/warc-verify.ts';

const PAGES = 40;
const SHAPE = { pages: PAGES, changed: 0.1, removed: 0.05, added: 0.05 };

interface WarcioRecord {
  type: string | null;
  uri: string | null;
  profile: string | null;
  refersToUri: string | null;
  refersToDate: string | null;
  length: number;
}

/** Every record of the crawl's WARC files, as warcio.js reads them; each file verified as `warcio test` would. */
async function warcRecords(run: CrawlRun): Promise<WarcioRecord[]> {
  const records: WarcioRecord[] = [];
  for (const name of run.warcFiles) {
    const bytes = await readFile(join(run.outDir, 'warc', name));
    const report = await verifyWarc(bytes);
    assert.deepEqual([...report.errors, ...report.problems], [], name);
    for await (const record of new WARCParser([bytes])) {
      await record.readFully();
      const header = (field: string) => record.warcHeaders.headers.get(field.toLowerCase()) ?? null;
      records.push({
        type: header('WARC-Type'),
        uri: header('WARC-Target-URI'),
        profile: header('WARC-Profile'),
        refersToUri: header('WARC-Refers-To-Target-URI'),
        refersToDate: header('WARC-Refers-To-Date'),
        length: Number(header('Content-Length')),
      });
    }
  }
  return records;
}

/** The change of every result line, by URL. */
function changes(run: CrawlRun): Map<string, unknown> {
  return new Map(run.results.map((line) => [line.url, line.change]));
}

async function crawlTwice(
  site: ChangingSite,
  state: string,
  out: string,
  recrawlArgs: string[] = [],
): Promise<[CrawlRun, CrawlRun]> {
  const common = ['--allow-private', '--delay', '0', '--quiet'];
  site.edition = 1;
  site.resetCounts();
  const first = await runCrawl([`${site.origin}/`], common, { stateDir: state, outDir: join(out, 'first') });
  site.edition = 2;
  site.resetCounts();
  const second = await runCrawl([`${site.origin}/`], [...common, '--since', 'latest', ...recrawlArgs], {
    stateDir: state,
    outDir: join(out, 'second'),
  });
  return [first, second];
}

describe('crawler crawl --since: a conditional re-crawl with revisit records and change tracking', () => {
  let site: ChangingSite;
  let dir: { path: string; remove(): Promise<void> };
  let first: CrawlRun;
  let second: CrawlRun;
  let notModified: Set<string>;
  const state = () => join(dir.path, 'state');
  const events = () => join(dir.path, 'events.jsonl');

  before(async () => {
    site = await startChangingSite({ ...SHAPE, validators: true });
    dir = await tempDir('crawler-recrawl-');
    [first, second] = await crawlTwice(site, state(), dir.path, ['--page-events', '--events', events()]);
    notModified = new Set(site.notModified);
  });
  after(async () => {
    await site?.close();
    await dir?.remove();
  });

  it('says of every URL what the site says became of it: new, same, changed or removed', () => {
    assert.equal(
      first.results.filter((line) => line.change !== undefined).length,
      0,
      'a first crawl has no change',
    );
    const expected = site.expected();
    assert.deepEqual(changes(second), expected);
    const count = (change: string) => [...expected.values()].filter((c) => c === change).length;
    assert.ok(count('same') > 20 && count('changed') >= 4 && count('removed') >= 2 && count('new') >= 2);
  });

  it('asks each earlier page with its validators: every unchanged page is answered 304, with no body', () => {
    const same = [...site.expected()]
      .filter(([, change]) => change === 'same')
      .map(([url]) => new URL(url).pathname);
    assert.deepEqual([...notModified].sort(), same.sort());
    const bySame = second.results.filter((line) => line.change === 'same');
    assert.ok(bySame.every((line) => line.status === 304 && line.bytes === 0));
  });

  it('stores each 304 as a server-not-modified revisit naming the earlier capture, read back with warcio', async () => {
    const earlier = new Map(first.results.map((line) => [line.url, line]));
    const revisits = (await warcRecords(second)).filter((record) => record.type === 'revisit');
    assert.equal(revisits.length, notModified.size);
    for (const record of revisits) {
      assert.equal(record.profile, 'http://netpreserve.org/warc/1.1/revisit/server-not-modified');
      assert.equal(record.length, 0);
      assert.equal(record.refersToUri, record.uri);
      assert.equal(
        record.refersToDate,
        earlier.get(record.uri ?? '')?.fetchedAt,
        `${record.uri}: WARC-Refers-To-Date`,
      );
    }
    // Same pages keep the earlier page's content record and payload digest.
    for (const line of second.results.filter((l) => l.change === 'same')) {
      assert.deepEqual(line.content, earlier.get(line.url)?.content, line.url);
      assert.equal(line.sha1, earlier.get(line.url)?.sha1, line.url);
    }
  });

  it('crawler results --change filters by change; a wrong value is one line naming the choices', async () => {
    const id = String(second.summary.crawlId);
    const run = await runCli(['results', id, '--change', 'changed', '--state-dir', state()], {
      stateDir: state(),
    });
    assert.equal(run.code, 0, run.stderr);
    const urls = run.stdout
      .trim()
      .split('\n')
      .map((text) => JSON.parse(text).url as string);
    const changed = [...site.expected()].filter(([, change]) => change === 'changed').map(([url]) => url);
    assert.deepEqual(urls.sort(), changed.sort());
    const wrong = await runCli(['results', id, '--change', 'modified', '--state-dir', state()], {
      stateDir: state(),
    });
    assert.equal(wrong.code, 2);
    assert.equal(wrong.stderr.trim().split('\n').length, 1);
    assert.match(wrong.stderr, /--change expects one of new, same, changed, removed, got "modified"/);
  });

  it('crawler diff shows what changed in a page; a same page has no diff; get of a same page reads the earlier body', async () => {
    const id = String(second.summary.crawlId);
    const [changedUrl] =
      [...site.expected()].find(([url, change]) => change === 'changed' && url.includes('/p/')) ?? [];
    const diff = await runCli(['diff', id, changedUrl ?? '', '--state-dir', state()], { stateDir: state() });
    assert.equal(diff.code, 0, diff.stderr);
    assert.match(diff.stdout, /^-.*v1\./m);
    assert.match(diff.stdout, /^\+.*v2\./m);
    const [sameUrl] = [...site.expected()].find(([, change]) => change === 'same') ?? [];
    const none = await runCli(['diff', id, sameUrl ?? '', '--state-dir', state()], { stateDir: state() });
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, '');
    assert.match(none.stderr, /unchanged since crawl/);
    const body = await runCli(['get', sameUrl ?? '', '--crawl', id, '--state-dir', state()], {
      stateDir: state(),
    });
    assert.equal(body.code, 0, body.stderr);
    assert.match(body.stdout, /<title>Page \d+<\/title>/);
    const notRecrawl = await runCli(
      ['diff', String(first.summary.crawlId), sameUrl ?? '', '--state-dir', state()],
      {
        stateDir: state(),
      },
    );
    assert.equal(notRecrawl.code, 1);
    assert.match(notRecrawl.stderr, /is not a re-crawl/);
  });

  it('publishes Started, a Page Changed per new, changed or removed page, and Completed, each valid against its JSON Schema', async () => {
    const id = String(second.summary.crawlId);
    const lines = (await readFile(events(), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as EventEnvelope);
    for (const envelope of lines) {
      const kind = kindOf(envelope['detail-type']);
      assert.ok(kind, envelope['detail-type']);
      assertValidEvent({ kind, detail: envelope.detail });
      assert.equal((envelope.detail as { crawlId: string }).crawlId, id);
    }
    const types = lines.map((envelope) => envelope['detail-type']);
    assert.equal(types[0], 'Crawl Started');
    assert.equal(types.at(-1), 'Crawl Completed');
    assert.equal((lines[0]?.detail as { since?: string } | undefined)?.since, first.summary.crawlId);
    const pages = lines
      .filter((envelope) => envelope['detail-type'] === 'Page Changed')
      .map((envelope) => envelope.detail as { url: string; change: string });
    const expected = [...site.expected()].filter(([, change]) => change !== 'same');
    assert.deepEqual(
      pages.map((page) => `${page.url} ${page.change}`).sort(),
      expected.map(([url, change]) => `${url} ${change}`).sort(),
    );
  });

  it("the state directory logs every event, and the template's rule put the lifecycle ones on CrawlEventsQueue", async () => {
    const logged = (await readFile(join(state(), EVENTS_LOG), 'utf8')).trim().split('\n');
    // Both crawls' Started and Completed, and the re-crawl's page events.
    assert.equal(
      logged.length,
      4 + [...site.expected().values()].filter((change) => change !== 'same').length,
    );
    const local = await startLocalAws({
      template: parseTemplate(await stackTemplate()),
      stackName: STACK_NAME,
      stateDir: state(),
    });
    try {
      const queueUrl = requiredOutput(local.outputs, OUTPUTS.crawlEventsQueueUrl);
      const received: string[] = [];
      for (let round = 0; round < 10 && received.length < 4; round++) {
        const answer = await local.clients.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
        );
        for (const message of answer.Messages ?? [])
          received.push(JSON.parse(message.Body ?? '{}')['detail-type']);
      }
      assert.deepEqual(received.sort(), [
        'Crawl Completed',
        'Crawl Completed',
        'Crawl Started',
        'Crawl Started',
      ]);
    } finally {
      await local.stop();
    }
  });

  it('--since naming no finished crawl is one line before anything starts', async () => {
    const missing = await runCli(
      ['crawl', `${site.origin}/`, '--allow-private', '--since', 'c-nosuch', '--out', join(dir.path, 'x')],
      {
        stateDir: state(),
      },
    );
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--since c-nosuch: no such crawl here/);
    const bad = await runCli(['crawl', `${site.origin}/`, '--since', 'not a crawl!'], { stateDir: state() });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--since expects a crawl id \(crawler list shows them\) or "latest"/);
    const none = await runCli([
      'crawl',
      `${site.origin}/`,
      '--allow-private',
      '--since',
      'latest',
      '--out',
      join(dir.path, 'y'),
    ]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /--since latest: no finished crawl here/);
  });
});

describe('crawler crawl --since on a site without validators: same pages by payload digest', () => {
  let site: ChangingSite;
  let dir: { path: string; remove(): Promise<void> };
  let first: CrawlRun;
  let second: CrawlRun;

  before(async () => {
    site = await startChangingSite({ ...SHAPE, validators: false });
    dir = await tempDir('crawler-recrawl-digest-');
    [first, second] = await crawlTwice(site, join(dir.path, 'state'), dir.path);
  });
  after(async () => {
    await site?.close();
    await dir?.remove();
  });

  it('finds the same pages by digest, stores them as identical-payload-digest revisits, and no body twice', async () => {
    assert.deepEqual(changes(second), site.expected());
    const same = new Set(second.results.filter((line) => line.change === 'same').map((line) => line.url));
    const records = await warcRecords(second);
    const responses = records.filter((record) => record.type === 'response').map((record) => record.uri);
    assert.deepEqual(
      responses.filter((uri) => same.has(uri ?? '')),
      [],
      'no response record (body) for a same page',
    );
    const revisits = records.filter((record) => record.type === 'revisit');
    assert.equal(revisits.length, same.size);
    for (const record of revisits) {
      assert.equal(record.profile, 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
      assert.ok(record.length > 0, 'the response head is kept');
    }
    const pages = (await readFile(join(second.outDir, 'pages.jsonl'), 'utf8')).trim().split('\n');
    assert.equal(
      pages.length,
      second.results.filter((l) => l.change === 'changed' || l.change === 'new').length,
    );
    assert.ok(first.results.length > 0);
  });
});

describe('crawler crawl --adaptive: a re-crawl fetches only the URLs that are due', () => {
  let site: ChangingSite;
  let dir: { path: string; remove(): Promise<void> };

  before(async () => {
    site = await startChangingSite({ ...SHAPE, validators: true });
    dir = await tempDir('crawler-recrawl-adaptive-');
  });
  after(async () => {
    await site?.close();
    await dir?.remove();
  });

  it('not due: every earlier URL reported same from the earlier crawl, with no request; due: asked again, its interval moved', async () => {
    const state = join(dir.path, 'state');
    const common = ['--allow-private', '--delay', '0', '--quiet'];
    // Intervals of 20 s (min = max): a URL is due 20 s after it was fetched. Long enough that the
    // first crawl's end and the next CLI's start fit before it on a loaded machine (2 s did not, in
    // CI: one URL was already due); the wait for the due crawl below is the rest of it.
    const bounds = ['--adaptive', '--min-interval', '20s', '--max-interval', '20s'];
    const first = await runCrawl([`${site.origin}/`], [...common, ...bounds], {
      stateDir: state,
      outDir: join(dir.path, 'first'),
    });
    assert.ok(first.results.every((line) => line.outcome !== 'fetched' || line.interval === 20 / 60));

    // At once: nothing is due, the seed included (it is one of the earlier URLs).
    site.resetCounts();
    const early = await runCrawl([`${site.origin}/`], [...common, '--since', 'latest', ...bounds], {
      stateDir: state,
      outDir: join(dir.path, 'early'),
    });
    const earlier = new Map(first.results.map((line) => [line.url, line]));
    const notDue = early.results.filter((line) => line.code === 'not-due');
    assert.equal(notDue.length, first.results.filter((line) => line.outcome === 'fetched').length);
    for (const line of notDue) {
      assert.equal(line.change, 'same');
      assert.equal(line.outcome, 'skipped');
      assert.deepEqual(line.content, earlier.get(line.url)?.content, 'the earlier content record');
      assert.equal(line.dueAt, earlier.get(line.url)?.dueAt);
    }
    const requested = [...site.statuses.values()].reduce((sum, count) => sum + count, 0);
    assert.equal(requested, 0, 'no request at all');

    // Once every URL's due time has passed, they are all asked again.
    const lastDue = Math.max(
      ...first.results.flatMap((line) => (line.dueAt ? [Date.parse(String(line.dueAt))] : [])),
    );
    while (Date.now() <= lastDue)
      await new Promise((resolve) => setTimeout(resolve, lastDue - Date.now() + 1));
    site.resetCounts();
    const due = await runCrawl(
      [`${site.origin}/`],
      [...common, '--since', first.summary.crawlId as string, ...bounds],
      {
        stateDir: state,
        outDir: join(dir.path, 'due'),
      },
    );
    assert.equal(due.results.filter((line) => line.code === 'not-due').length, 0);
    assert.equal(site.notModified.size, first.results.filter((line) => line.outcome === 'fetched').length);
  });
});
