import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HTML_BODY_REASON, parseTaskMessage } from '../../lambdas/core/crawl/index.ts';

test('a JSON task is parsed with its fields', () => {
  const parsed = parseTaskMessage(
    JSON.stringify({ v: 1, crawlId: 'c1', url: 'https://example.com/', depth: 2, attempt: 1 }),
  );
  assert.deepEqual(parsed, {
    ok: true,
    task: { v: 1, crawlId: 'c1', url: 'https://example.com/', depth: 2, attempt: 1 },
  });
});

test('a plain URL string joins the default crawl at depth 0', () => {
  assert.deepEqual(parseTaskMessage(' https://example.com/a \n'), {
    ok: true,
    task: { v: 1, crawlId: 'default', url: 'https://example.com/a', depth: 0 },
  });
});

test('a plain non-http URL string still parses; the fetcher rejects its scheme later', () => {
  const parsed = parseTaskMessage('ftp://example.com/file');
  assert.equal(parsed.ok, true);
});

test('text that is neither JSON nor a URL is invalid with a reason quoting it', () => {
  const parsed = parseTaskMessage('hello world');
  assert.equal(parsed.ok, false);
  if (!parsed.ok) {
    assert.equal(parsed.code, 'invalid-task');
    assert.match(parsed.reason, /neither a task JSON object nor a URL: "hello world"/);
    assert.equal(parsed.crawlId, 'default');
  }
});

test('broken JSON is invalid and says so', () => {
  const parsed = parseTaskMessage('{"v":1,');
  assert.equal(parsed.ok, false);
  if (!parsed.ok) assert.match(parsed.reason, /not valid JSON/);
});

test('wrong fields name each field and keep the crawl id and url for the result record', () => {
  const parsed = parseTaskMessage(JSON.stringify({ v: 1, crawlId: 'c1', url: 'https://x.test/', depth: -1 }));
  assert.equal(parsed.ok, false);
  if (!parsed.ok) {
    assert.match(parsed.reason, /depth/);
    assert.match(parsed.reason, /expected \{v:1, crawlId, url, depth/);
    assert.equal(parsed.crawlId, 'c1');
    assert.equal(parsed.url, 'https://x.test/');
  }
});

test('a task of per-URL scheduling (redriven from a DLQ) still parses: its held slot is dropped', () => {
  const body = { v: 1, crawlId: 'c1', url: 'https://x.test/a', depth: 2, attempt: 1 };
  const parsed = parseTaskMessage(
    JSON.stringify({ ...body, notBefore: 1_700_000_000_000, slotDelayMs: 1000 }),
  );
  assert.deepEqual(parsed, { ok: true, task: body });
});

test('a huge URL in a bad task is clipped in the reason, not copied whole', () => {
  const url = `https://x.test/${'a'.repeat(100_000)}`;
  const parsed = parseTaskMessage(JSON.stringify({ v: 2, crawlId: 'c1', url, depth: 0 }));
  assert.equal(parsed.ok, false);
  if (!parsed.ok) {
    assert.ok(parsed.reason.length < 1000);
    assert.ok((parsed.url ?? '').length < 300);
  }
});

test('an HTML page as the body (AWS CLI v1 fetched the URL it was given) is invalid with a reason that says so', () => {
  for (const body of [
    '<!DOCTYPE html>\n<html><head><title>Example Domain</title></head><body></body></html>',
    '\ufeff<!doctype html><html lang="en">',
    '  <html>\n<body>hi</body></html>',
    '<!-- served by nginx -->\n<html>',
  ]) {
    const parsed = parseTaskMessage(body);
    assert.equal(parsed.ok, false);
    if (parsed.ok) continue;
    assert.equal(parsed.code, 'invalid-task');
    assert.equal(parsed.reason, HTML_BODY_REASON);
    assert.match(parsed.reason, /AWS CLI v1/);
    assert.match(parsed.reason, /cli_follow_urlparam = false/);
    assert.match(parsed.reason, /"crawlId":"default"/);
  }
  // Other text keeps the generic reason, quoting the body.
  const other = parseTaskMessage('hello <b>world</b>');
  assert.ok(!other.ok && /neither a task JSON object nor a URL: "hello <b>world<\/b>"/.test(other.reason));
  // And the JSON form the reason suggests is a valid task of the default crawl.
  const suggested = parseTaskMessage('{"v":1,"crawlId":"default","url":"https://example.com/","depth":0}');
  assert.ok(
    suggested.ok && suggested.task.crawlId === 'default' && suggested.task.url === 'https://example.com/',
  );
});
