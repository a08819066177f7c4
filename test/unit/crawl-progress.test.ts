/**
 * The progress display of `crawler crawl`: the model (rate, ETA), what a stuck crawl waits for, the
 * long-crawl notice, and each renderer's output.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createRenderer,
  describeSnapshot,
  fitToWidth,
  followProgress,
  JsonRenderer,
  LineRenderer,
  longCrawlNotice,
  PlainRenderer,
  ProgressModel,
  type ProgressOutput,
  type ProgressReading,
  type ProgressSnapshot,
  type Waits,
  waitingReason,
} from '../../cli/crawl-progress.ts';

const reading = (done: number, queued: number, extra: Partial<ProgressReading> = {}): ProgressReading => ({
  done,
  queued,
  byOutcome: {},
  retries: 0,
  state: 'running',
  ...extra,
});

function capture(isTTY = false, columns?: number): ProgressOutput & { text: string } {
  const out = {
    text: '',
    isTTY,
    ...(columns === undefined ? {} : { columns }),
    write(chunk: string) {
      out.text += chunk;
    },
  };
  return out;
}

const snapshot = (over: Partial<ProgressSnapshot> = {}): ProgressSnapshot => ({
  at: 0,
  fetched: 12,
  known: 40,
  pagesPerSecond: 3.5,
  etaSeconds: 8,
  errors: 1,
  retries: 2,
  state: 'running',
  ...over,
});

/** A reading whose URLs done were all fetched. */
const fetchedReading = (done: number, queued: number) =>
  reading(done, queued, { byOutcome: { fetched: done } });

test('the rate is pages fetched over the recent window, and the ETA the URLs left at that rate', () => {
  const model = new ProgressModel();
  model.update(fetchedReading(0, 10), 0);
  model.update(fetchedReading(10, 50), 5_000);
  const s = model.update(fetchedReading(20, 100), 10_000);
  assert.equal(s.fetched, 20);
  assert.equal(s.known, 100);
  assert.equal(s.pagesPerSecond, 2);
  assert.equal(s.etaSeconds, 40); // 80 left at 2 pages/s
  // Older readings leave the window: a crawl that slowed down shows its recent rate, not its average.
  model.update(fetchedReading(20, 100), 20_000);
  const slow = model.update(fetchedReading(25, 100), 30_000);
  assert.equal(slow.pagesPerSecond, 0.5); // 5 in the last 10 s (the average is 25 in 30 s)
  assert.equal(slow.etaSeconds, 150);
});

test('pages/s counts fetched pages only: skipped and blocked URLs end at once and are no pages', () => {
  // One page fetched, its 30 links skipped (out of scope): 31 URLs done in 10 s, 0.1 pages/s.
  const model = new ProgressModel();
  model.update(reading(0, 1), 0);
  const s = model.update(reading(31, 31, { byOutcome: { fetched: 1, skipped: 30 } }), 10_000);
  assert.equal(s.pagesPerSecond, 0.1);
  assert.equal(s.fetched, 31, 'URLs done still count every URL');
});

test('winding down (after Ctrl-C): the line says so, with no ETA and no wait, and a plain log shows it at once', () => {
  const line = describeSnapshot(
    snapshot({ windingDown: true, waiting: 'politeness: next request to a in 5 s' }),
  );
  assert.match(line, /^winding down: no new requests/);
  assert.doesNotMatch(line, /ETA|waiting/);
  const out = capture();
  const plain = new PlainRenderer(out, 5000);
  plain.update(snapshot({ at: 0 }));
  plain.update(snapshot({ at: 10, windingDown: true }));
  assert.equal(out.text.split('\n').filter(Boolean).length, 2);
  assert.match(out.text.split('\n')[1] ?? '', /winding down/);
});

test('no rate yet, or nothing left: no ETA; errors are failed URLs, retries pass through', () => {
  const model = new ProgressModel();
  const first = model.update(reading(0, 3, { byOutcome: { failed: 2, fetched: 1 }, retries: 4 }), 1000);
  assert.equal(first.etaSeconds, undefined);
  assert.equal(first.pagesPerSecond, 0);
  assert.equal(first.errors, 2);
  assert.equal(first.retries, 4);
  const done = model.update(reading(3, 3), 3000);
  assert.equal(done.etaSeconds, undefined);
});

test('stalledMs counts from the last reading whose done count moved', () => {
  const model = new ProgressModel();
  model.update(reading(1, 5), 1000);
  model.update(reading(1, 9), 4000);
  assert.equal(model.stalledMs(6000), 5000);
  model.update(reading(2, 9), 6000);
  assert.equal(model.stalledMs(7000), 1000);
});

test('waiting: a robots.txt retry comes first, with its seconds left', () => {
  const waits: Waits = {
    hosts: [{ host: 'a.test', nextAt: 12_000 }],
    robots: [
      { origin: 'http://b.test', state: 'unavailable', retryAt: 70_000, failures: 2 },
      { origin: 'http://c.test', state: 'unavailable', retryAt: 40_500, failures: 1 },
    ],
  };
  assert.equal(
    waitingReason(waits, 10_000, 5000, 1000),
    'robots.txt of http://c.test unavailable (1 failed), retry in 31 s',
  );
});

test('waiting: a pause the host asked for (Retry-After or Crawl-delay: never named Retry-After alone), then the politeness delay of the soonest host', () => {
  assert.equal(
    waitingReason(
      { hosts: [{ host: 'a.test', pausedUntil: 30_000, nextAt: 30_000 }], robots: [] },
      10_000,
      5000,
      1000,
    ),
    'a.test asked to wait (Retry-After or robots.txt Crawl-delay), 20 s left',
  );
  assert.equal(
    waitingReason(
      {
        hosts: [
          { host: 'a.test', nextAt: 19_000, visitAt: 25_000 },
          { host: 'b.test', nextAt: 14_000 },
        ],
        robots: [{ origin: 'http://a.test', state: 'unavailable', retryAt: 9_000 }], // retry time passed
      },
      10_000,
      5000,
      1000,
    ),
    'politeness: next request to b.test in 4 s',
  );
});

test('waiting: a running visit is politeness within its delay, a slow host past it', () => {
  const visiting: Waits = { hosts: [{ host: 'slow.test', lease: 100_000, nextAt: 1000 }], robots: [] };
  assert.equal(waitingReason(visiting, 10_000, 4000, 2000), 'politeness: one request every 2 s to slow.test');
  assert.equal(waitingReason(visiting, 10_000, 20_000, 2000), 'slow host: slow.test, no page for 20 s');
  assert.equal(waitingReason({ hosts: [], robots: [] }, 10_000, 20_000, 2000), undefined);
  assert.equal(
    waitingReason(
      { hosts: [], robots: [{ origin: 'http://r.test', state: 'fetching', lease: 20_000 }] },
      10_000,
      5000,
      0,
    ),
    'fetching robots.txt of http://r.test',
  );
});

test('the line names fetched/known, rate, ETA, errors, retries and the wait', () => {
  assert.equal(
    describeSnapshot(snapshot({ waiting: 'politeness: next request to a.test in 3 s' })),
    '12/40 URLs · 3.5 pages/s · ETA 8 s · 1 error · 2 retries · waiting: politeness: next request to a.test in 3 s',
  );
  assert.equal(
    describeSnapshot(snapshot({ etaSeconds: 125, errors: 0, retries: 1 })),
    '12/40 URLs · 3.5 pages/s · ETA 2:05 · 0 errors · 1 retry',
  );
  assert.equal(fitToWidth('x'.repeat(100), 40), `${'x'.repeat(38)}…`);
  assert.equal(fitToWidth('short', 40), 'short');
});

test('terminal: one line rewritten in place with \\r and clear-line, cut to the width; messages above it', () => {
  const out = capture(true, 30);
  const renderer = new LineRenderer(out);
  renderer.update(snapshot({ fetched: 1 }));
  renderer.update(snapshot({ fetched: 2 }));
  renderer.message('note: hello');
  renderer.finish(snapshot({ fetched: 3 }));
  const frames = out.text.split('\r\x1b[2K');
  assert.equal(frames[0], '');
  assert.ok(frames.slice(1).every((frame) => frame.replace(/\n$/, '').split('\n').at(-1)!.length <= 29));
  assert.match(frames[1]!, /^1\/40 URLs/);
  assert.match(frames[3]!, /^note: hello\n2\/40 URLs/); // the message, then the line redrawn
  assert.match(frames.at(-1)!, /^3\/40 URLs.*\n$/);
  assert.equal(out.text.split('\n').length, 3); // the message, the final line, nothing else
});

test('not a terminal: a plain line at most every interval, and only when something changed', () => {
  const out = capture(false);
  const renderer = new PlainRenderer(out, 5000);
  renderer.update(snapshot({ at: 0, fetched: 1 }));
  renderer.update(snapshot({ at: 1000, fetched: 2 })); // too soon
  renderer.update(snapshot({ at: 6000, fetched: 2 }));
  renderer.update(snapshot({ at: 12_000, fetched: 2, pagesPerSecond: 1 })); // only the rate moved
  renderer.update(snapshot({ at: 18_000, fetched: 2, waiting: 'politeness' }));
  renderer.finish(snapshot({ at: 19_000, fetched: 40 }));
  const lines = out.text.trim().split('\n');
  assert.deepEqual(
    lines.map((line) => line.split(' · ')[0]),
    ['progress: 1/40 URLs', 'progress: 2/40 URLs', 'progress: 2/40 URLs', 'progress: 40/40 URLs'],
  );
  assert.ok(!out.text.includes('\r'));
});

test('--progress json: one parseable event per line, messages too, repeats dropped', () => {
  const out = capture(false);
  const renderer = new JsonRenderer(out, 'c-1');
  renderer.message('crawl c-1: starting');
  renderer.update(snapshot({ at: Date.UTC(2026, 0, 1), fetched: 1 }));
  renderer.update(snapshot({ at: Date.UTC(2026, 0, 1, 0, 0, 1), fetched: 1 }));
  renderer.finish(snapshot({ fetched: 40, known: 40, etaSeconds: undefined }));
  const events = out.text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(events[0], { type: 'message', crawlId: 'c-1', text: 'crawl c-1: starting' });
  assert.equal(events.length, 3);
  assert.equal(events[1]?.type, 'progress');
  assert.equal(events[1]?.at, '2026-01-01T00:00:00.000Z');
  assert.equal(events[1]?.fetched, 1);
  assert.equal(events[1]?.pagesPerSecond, 3.5);
  assert.equal(events[2]?.fetched, 40);
});

test('modes: auto picks the line on a terminal and plain lines elsewhere; quiet prints nothing', () => {
  assert.ok(createRenderer('auto', false, capture(true), 'c') instanceof LineRenderer);
  assert.ok(createRenderer('auto', false, capture(false), 'c') instanceof PlainRenderer);
  assert.ok(createRenderer('line', false, capture(false), 'c') instanceof LineRenderer);
  const quiet = capture(true);
  const renderer = createRenderer('auto', true, quiet, 'c');
  renderer.message('starting');
  renderer.update(snapshot());
  renderer.finish(snapshot());
  assert.equal(quiet.text, '');
  const none = capture(true);
  const messagesOnly = createRenderer('none', false, none, 'c');
  messagesOnly.message('starting');
  messagesOnly.update(snapshot());
  messagesOnly.finish(snapshot());
  assert.equal(none.text, 'starting\n');
});

test('followProgress reads until stopped, looks up the waits only once the crawl stalls, and ends the line', async () => {
  let now = 0;
  let done = 0;
  let waitLookups = 0;
  const out = capture(true, 200);
  const ticker = followProgress(
    {
      read: async () => reading(done, 10),
      waits: async () => {
        waitLookups++;
        return { hosts: [{ host: 'a.test', nextAt: now + 5000 }], robots: [] };
      },
    },
    new LineRenderer(out),
    { delayMs: 1000, intervalMs: 5, stallMs: 3000, now: () => now },
  );
  const tick = async () => {
    const before = out.text.length;
    while (out.text.length === before) await new Promise((resolve) => setTimeout(resolve, 2));
  };
  await tick();
  now = 1000;
  done = 2;
  await tick();
  assert.equal(waitLookups, 0);
  now = 5000; // 4 s without progress
  await tick();
  assert.equal(waitLookups, 1);
  assert.match(out.text, /waiting: politeness: next request to a\.test in 5 s/);
  done = 10;
  now = 6000;
  await ticker.stop();
  assert.match(out.text, /10\/10 URLs[^\r]*\n$/);
});

test('followProgress after windingDown(): says so at once and on every line until stopped', async () => {
  let done = 1;
  const out = capture(true, 300);
  const ticker = followProgress(
    { read: async () => reading(done, 10), waits: async () => ({ hosts: [], robots: [] }) },
    new LineRenderer(out),
    { delayMs: 0, intervalMs: 5 },
  );
  const drawn = () => out.text.split('\r\x1b[2K').slice(1);
  while (drawn().length === 0) await new Promise((resolve) => setTimeout(resolve, 2));
  ticker.windingDown();
  const at = drawn().length;
  assert.match(drawn().at(-1) ?? '', /^winding down/, 'shown at once, not at the next reading');
  done = 4;
  while (!drawn().some((frame, i) => i >= at && frame.includes('4/10'))) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await ticker.stop();
  for (const frame of drawn().slice(at - 1)) assert.match(frame, /^winding down/);
});

test('nothing is read when no progress is shown (--quiet, --progress none)', async () => {
  let reads = 0;
  let closed = 0;
  const source = {
    read: async () => {
      reads++;
      return reading(0, 1);
    },
    waits: async () => ({ hosts: [], robots: [] }),
    close: () => {
      closed++;
    },
  };
  for (const renderer of [
    createRenderer('auto', true, capture(true), 'c'),
    createRenderer('none', false, capture(), 'c'),
  ]) {
    const ticker = followProgress(source, renderer, { delayMs: 0, intervalMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await ticker.stop();
  }
  assert.equal(reads, 0);
  assert.equal(closed, 2);
});

test('a long crawl is announced: one host, thousands of pages, 1 s apart', () => {
  const notice = longCrawlNotice({
    seeds: ['https://example.com/', 'https://example.com/b'],
    maxPages: 3000,
    delayMs: 1000,
    scope: 'host',
  });
  assert.match(notice ?? '', /3000 pages on 1 host at one request every 1 s per host \(--delay 1000\)/);
  assert.match(notice ?? '', /at least ~50 min at this pace/);
  // Spread over hosts, short, unbounded or free to leave the seeds' hosts: nothing to say.
  assert.equal(
    longCrawlNotice({
      seeds: ['https://a.test/', 'https://b.test/'],
      maxPages: 100,
      delayMs: 1000,
      scope: 'host',
    }),
    undefined,
  );
  assert.equal(longCrawlNotice({ seeds: ['https://a.test/'], delayMs: 1000, scope: 'host' }), undefined);
  assert.equal(
    longCrawlNotice({ seeds: ['https://a.test/'], maxPages: 3000, delayMs: 1000, scope: 'domain' }),
    undefined,
  );
  assert.equal(
    longCrawlNotice({ seeds: ['https://a.test/'], maxPages: 3000, delayMs: 0, scope: 'host' }),
    undefined,
  );
});
