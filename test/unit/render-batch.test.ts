/**
 * A page to render, from the fetch batch to the render batch (core/batches/render-batch.ts) over the fakes of
 * test/fakes and a synthetic web: the fetch batch stores the response and sends the page to the render
 * queue instead of its result, and hands its host back held; the render batch reads the response back,
 * renders it, writes its conversion record, admits the rendered DOM's links, sends the one result, and
 * ends the hold with a visit due a crawl delay after each of the browser's requests to the host.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { iterateWarcFile } from '../../lambdas/core/archive/index.ts';
import { LruSet, RENDER_LIMITS } from '../../lambdas/core/base/index.ts';
import {
  type FetchBatchDeps,
  processFetchBatch,
  processRenderBatch,
  type RenderBatchDeps,
} from '../../lambdas/core/batches/index.ts';
import {
  type CrawlStateName,
  type PageRenderer,
  parseCrawlConfig,
  type RenderedPage,
  type RenderMessage,
  type TaskMessage,
  type VisitMessage,
} from '../../lambdas/core/crawl/index.ts';
import { createRobotsCache } from '../../lambdas/core/robots/index.ts';
import { normalizeUrl } from '../../lambdas/core/urls/index.ts';
import { MemoryBlobs } from '../fakes/blobs.ts';
import { MemoryCrawlConfigs } from '../fakes/crawl-configs.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryHostVisits } from '../fakes/host-visits.ts';
import { MemoryDeadLetterQueue, MemoryResultsQueue, MemoryTaskQueue } from '../fakes/queues.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { steppingClock } from '../fixtures/stepping-clock.ts';
import { SyntheticWeb } from '../fixtures/synthetic-web.ts';

const CRAWL = 'rb';
const DELAY_MS = 700;
let seq = 0;
const message = (body: unknown): TaskMessage => ({
  id: `m${++seq}`,
  body: typeof body === 'string' ? body : JSON.stringify(body),
  receiveCount: 1,
});

class RenderQueue {
  readonly sent: RenderMessage[] = [];
  failing = false;
  async sendRenders(messages: readonly RenderMessage[]): Promise<void> {
    if (this.failing) throw new Error('SQS is down');
    this.sent.push(...messages);
  }
}

/** A browser that adds a link and a heading to the page, having asked its host for `requests` files. */
function browser(requests: number, calls: string[]): PageRenderer {
  return {
    render: async (request): Promise<RenderedPage> => {
      calls.push(request.url.href);
      return {
        ok: true,
        html: `<html><head><title>Built</title></head><body><main><h1>Built by script</h1><p>${'Text the script wrote. '.repeat(20)}</p><a href="/p/3">three</a></main></body></html>`,
        sameHostRequests: requests,
        refused: 0,
      };
    },
    close: async () => {},
  };
}

async function world(state: CrawlStateName = 'running') {
  const web = new SyntheticWeb({ hosts: 1, pagesPerHost: 4, latencyMs: 1 });
  const [seed] = web.seeds();
  assert.ok(seed);
  const host = new URL(seed).host;
  const configs = new MemoryCrawlConfigs();
  await configs.put(
    parseCrawlConfig({
      crawlId: CRAWL,
      seeds: [seed],
      allowPrivate: true,
      delayMs: DELAY_MS,
      render: 'always',
      createdAt: new Date().toISOString(),
    }),
  );
  const blobs = new MemoryBlobs();
  // The batches' clock: a crawl delay is waited in virtual time (test/fixtures/stepping-clock.ts).
  const clock = steppingClock();
  const w = {
    web,
    seed,
    host,
    configs,
    blobs,
    frontier: new MemoryFrontierUrls(),
    hosts: new MemoryHostVisits(),
    tasks: new MemoryTaskQueue(),
    results: new MemoryResultsQueue(),
    deadLetters: new MemoryDeadLetterQueue(),
    renderQueue: new RenderQueue(),
    slept: [] as number[],
    fetchDeps(): FetchBatchDeps {
      return {
        fetcher: web,
        configs,
        robots: new MemoryRobotsStore(),
        robotsCache: createRobotsCache(100),
        frontier: w.frontier,
        hosts: w.hosts,
        deadLetters: w.deadLetters,
        blobs,
        results: w.results,
        renderQueue: w.renderQueue,
        tasks: w.tasks,
        seen: new LruSet(1000),
        invocationId: 'fetch-1',
        deadline: clock.now() + 30_000,
        now: clock.now,
        sleep: clock.sleep,
      };
    },
    renderDeps(renderer: PageRenderer): RenderBatchDeps {
      return {
        configs,
        crawlStates: { stateOf: async () => state },
        renderer,
        pages: {
          get: async (key, range) => {
            const object = blobs.objects.get(key);
            assert.ok(object, `${key} is stored`);
            return range ? object.subarray(range.offset, range.offset + range.length) : object;
          },
        },
        frontier: w.frontier,
        hosts: w.hosts,
        deadLetters: w.deadLetters,
        blobs,
        results: w.results,
        tasks: w.tasks,
        seen: new LruSet(1000),
        invocationId: 'render-1',
        deadline: clock.now() + 30_000,
        now: clock.now,
        sleep: async (ms) => void w.slept.push(ms),
      };
    },
  };
  return w;
}

type World = Awaited<ReturnType<typeof world>>;

/** The seed admitted and its host woken: the visit message its wake sent. */
async function seedVisit(w: World): Promise<VisitMessage> {
  const normalized = normalizeUrl(w.seed);
  assert.ok(normalized.ok);
  await w.frontier.admit(CRAWL, 'seed', [{ key: normalized.key, url: normalized.url, depth: 0 }]);
  const ticket = await w.hosts.wake(CRAWL, w.host, Date.now());
  assert.ok(ticket);
  return { v: 1, kind: 'visit', crawlId: CRAWL, host: w.host, ticket };
}

/** The fetch batch visits the seed's host and sends the seed to render. */
async function fetchSeed(w: World): Promise<RenderMessage> {
  const report = await processFetchBatch([message(await seedVisit(w))], w.fetchDeps());
  assert.deepEqual(report.retries, []);
  assert.equal(w.renderQueue.sent.length, 1);
  const [render] = w.renderQueue.sent;
  assert.ok(render);
  return render;
}

describe('a page to render, from the fetch batch to the render function', () => {
  it('the fetch batch stores the response, sends the page to render instead of its result, and holds the host', async () => {
    const w = await world();
    const render = await fetchSeed(w);
    assert.deepEqual(
      w.results.results.map((result) => result.url),
      [],
      'no result yet: the render function sends it',
    );
    assert.equal(render.result.url, w.seed);
    assert.equal(render.reason, '--render always');
    assert.equal(w.web.requests.filter((request) => request.path === '/').length, 1);
    // Held: no other page of the host was fetched, and the visit comes back when the hold ends.
    assert.deepEqual(
      w.web.requests.map((request) => request.path).filter((path) => path !== '/robots.txt'),
      ['/'],
    );
    const item = w.hosts.host(CRAWL, w.host);
    assert.equal(item?.awaiting, true);
    assert.ok(
      (item?.visitAt ?? 0) >= Date.now() + RENDER_LIMITS.holdRecheckMs - 2_000,
      'due when the hold ends',
    );
  });

  it('the render batch sends the one result from the rendered DOM, admits its links and ends the hold a delay per request', async () => {
    const w = await world();
    const render = await fetchSeed(w);
    const visitsBefore = w.tasks.visits.length;
    const calls: string[] = [];
    const report = await processRenderBatch([message(render)], w.renderDeps(browser(3, calls)));
    assert.deepEqual(report.retries, []);
    assert.deepEqual(calls, [w.seed], 'rendered once');
    assert.equal(w.web.requests.filter((request) => request.path === '/').length, 1, 'not fetched again');
    const [result] = w.results.results;
    assert.equal(w.results.results.length, 1);
    assert.equal(result?.rendered, true);
    assert.equal(result?.outlinks, 1);
    assert.deepEqual(result?.warc, render.result.warc, "the result points at the fetch function's response");
    assert.ok(result?.content, 'a content record of the rendered DOM');
    // The rendered link is admitted (the fetched page's own links are not read: only the DOM's).
    const three = normalizeUrl(new URL('/p/3', w.seed).href);
    assert.ok(three.ok);
    assert.ok(w.frontier.item(CRAWL, w.host, three.key), '/p/3 admitted');
    // The conversion record, in the render function's WARC file, refers to the response.
    const files = [...w.blobs.objects.keys()].filter(
      (key) => key.includes('render-1') && key.endsWith('.warc.gz'),
    );
    assert.equal(files.length, 1);
    const records = [...iterateWarcFile(w.blobs.objects.get(files[0] ?? '') ?? new Uint8Array())].map(
      (entry) => entry.record,
    );
    const conversion = records.find((record) => record.header('WARC-Type') === 'conversion');
    assert.match(Buffer.from(conversion?.block ?? []).toString('utf8'), /Built by script/);
    const fetched = w.blobs.objects.get(render.result.warc.key) ?? new Uint8Array();
    const response = [...iterateWarcFile(fetched)].find((e) => e.record.header('WARC-Type') === 'response');
    assert.equal(conversion?.header('WARC-Refers-To'), response?.record.header('WARC-Record-ID'));
    // The hold ends: the expected visit again, due 3 delays on.
    const visits = w.tasks.visits.slice(visitsBefore);
    const copy = visits.find(
      (visit) => visit.visit.host === w.host && visit.visit.ticket === w.hosts.host(CRAWL, w.host)?.visitBy,
    );
    assert.ok(copy, 'the visit the host expects, sent again');
    assert.equal(copy.delaySeconds, Math.ceil((3 * DELAY_MS) / 1000));
    assert.equal(w.hosts.host(CRAWL, w.host)?.awaiting, undefined);
  });

  it('a browser that fails keeps the page as fetched, read from the stored response, and still ends the hold', async () => {
    const w = await world();
    const render = await fetchSeed(w);
    const broken: PageRenderer = {
      render: async () => Promise.reject(new Error('chromium: cannot start')),
      close: async () => {},
    };
    const report = await processRenderBatch([message(render)], w.renderDeps(broken));
    assert.deepEqual(report.retries, []);
    const [result] = w.results.results;
    assert.equal(result?.code, 'render-failed');
    assert.equal(result?.rendered, undefined);
    assert.ok((result?.outlinks ?? 0) > 0, "the fetched page's own links");
    assert.deepEqual(
      [...w.blobs.objects.keys()].filter((key) => key.includes('render-1') && key.endsWith('.warc.gz')),
      [],
      'no WARC file with nothing but its warcinfo',
    );
    assert.ok(result?.content, 'the content record of the page as fetched');
    assert.equal(w.hosts.host(CRAWL, w.host)?.awaiting, undefined, 'hurried');
  });

  it("a cancelled crawl's page is not rendered; a complete crawl's is dropped with nothing sent", async () => {
    const cancelled = await world('cancelled');
    const calls: string[] = [];
    await processRenderBatch([message(await fetchSeed(cancelled))], cancelled.renderDeps(browser(0, calls)));
    assert.deepEqual(calls, []);
    assert.equal(cancelled.results.results[0]?.code, 'render-cancelled');

    const complete = await world('complete');
    const report = await processRenderBatch(
      [message(await fetchSeed(complete))],
      complete.renderDeps(browser(0, calls)),
    );
    assert.deepEqual(calls, []);
    assert.deepEqual(complete.results.results, []);
    assert.equal(report.dropped.length, 1);
  });

  it('a malformed message goes to the dead-letter queue with its reason; a failed send is retried', async () => {
    const w = await world();
    const bad = message('{"kind":"render","v":1}');
    const report = await processRenderBatch([bad], w.renderDeps(browser(0, [])));
    assert.deepEqual(report.dropped, [{ id: bad.id, why: 'invalid-render-message' }]);
    assert.equal(w.deadLetters.letters[0]?.code, 'invalid-render-message');

    const render = await fetchSeed(w);
    w.results.faults.fail('sendResults', { times: Infinity });
    const failed = await processRenderBatch([message(render)], w.renderDeps(browser(0, [])));
    assert.equal(failed.retries.length, 1);
    assert.deepEqual(w.results.results, []);
  });

  it('the host stays held: its next visit finds the hold and fetches nothing until the render ends it', async () => {
    const w = await world();
    const render = await fetchSeed(w);
    const item = w.hosts.host(CRAWL, w.host);
    assert.deepEqual(item?.rendering?.token, render.hold);
    const fetched = w.web.requests.length;
    const recheck: VisitMessage = {
      v: 1,
      kind: 'visit',
      crawlId: CRAWL,
      host: w.host,
      ticket: item?.visitBy ?? '',
    };
    const report = await processFetchBatch([message(recheck)], w.fetchDeps());
    assert.deepEqual(report.retries, []);
    assert.equal(w.web.requests.length, fetched, 'nothing fetched while the page renders');
    assert.equal(w.hosts.host(CRAWL, w.host)?.rendering?.token, render.hold, 'the hold kept');
    assert.equal(report.outcomes[0]?.end, 'hand-back');
  });

  it("ending the hold moves the host's pace on a delay per browser request; the visit's delay is capped at SQS's 900 s", async () => {
    const w = await world();
    const render = await fetchSeed(w);
    const before = Date.now();
    await processRenderBatch([message(render)], w.renderDeps(browser(3, [])));
    assert.ok((w.hosts.host(CRAWL, w.host)?.next ?? 0) >= before + 3 * DELAY_MS, 'the pace moved on');

    const slow = await world();
    const far = { ...(await fetchSeed(slow)), delayMs: 10_000 };
    const visitsBefore = slow.tasks.visits.length;
    await processRenderBatch([message(far)], slow.renderDeps(browser(200, [])));
    const sent = slow.tasks.visits.slice(visitsBefore).filter((visit) => visit.visit.host === slow.host);
    assert.deepEqual(
      sent.map((visit) => visit.delaySeconds),
      [900],
    );
    assert.ok(
      (slow.hosts.host(CRAWL, slow.host)?.next ?? 0) >= Date.now() + 1_900_000,
      'the pace itself is not capped',
    );
  });

  it('a message delivered again after its render ended the hold sends the page as fetched, with no browser', async () => {
    const w = await world();
    const render = await fetchSeed(w);
    await processRenderBatch([message(render)], w.renderDeps(browser(0, [])));
    const calls: string[] = [];
    const again = await processRenderBatch([message(render)], w.renderDeps(browser(0, calls)));
    assert.deepEqual(again.retries, []);
    assert.deepEqual(calls, [], 'the host is no longer held: the browser must not reach it');
    assert.equal(w.results.results.length, 2, 'sent again (finalized once)');
    assert.equal(w.results.results[1]?.code, 'render-expired');
  });

  it('a render message that cannot be sent leaves no hold standing: the visit comes back and fetches the page again', async () => {
    const w = await world();
    w.renderQueue.failing = true;
    const visit = await seedVisit(w);
    const report = await processFetchBatch([message(visit)], w.fetchDeps());
    assert.equal(report.retries.length, 1, 'the visit message comes back');
    assert.ok((w.hosts.host(CRAWL, w.host)?.rendering?.until ?? 0) <= Date.now(), 'the hold has lapsed');
    // Once the lease has run out, the visit comes back, finds the hold lapsed and fetches the page again.
    const item = w.hosts.host(CRAWL, w.host);
    assert.ok(item);
    delete item.lease;
    w.renderQueue.failing = false;
    const again = await processFetchBatch([message(visit)], w.fetchDeps());
    assert.deepEqual(again.retries, []);
    assert.equal(w.renderQueue.sent.length, 1, 'sent this time');
    assert.equal(w.web.requests.filter((request) => request.path === '/').length, 2);
  });

  it('a hold that cannot be ended (a visit holds the host) is tried three times a second apart, then the message comes back', async () => {
    const w = await world();
    const render = await fetchSeed(w);
    // The host taken again meanwhile (a live lease): no end succeeds.
    const item = w.hosts.host(CRAWL, w.host);
    assert.ok(item);
    item.lease = Date.now() + 60_000;
    const visitsBefore = w.tasks.visits.length;
    const report = await processRenderBatch([message(render)], w.renderDeps(browser(1, [])));
    assert.equal(w.results.results.length, 1);
    assert.deepEqual(w.slept, [1_000, 1_000], 'three tries, a second apart');
    assert.deepEqual(
      report.retries.map((retry) => retry.code),
      ['hold-not-ended'],
    );
    assert.equal(w.hosts.host(CRAWL, w.host)?.rendering?.token, render.hold, 'still held');
    assert.equal(w.tasks.visits.slice(visitsBefore).filter((visit) => visit.visit.host === w.host).length, 0);
  });
});
