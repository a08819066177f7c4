import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { WARCParser, WARCRecord, WARCSerializer } from 'warcio';
import {
  base32Encode,
  iterateWarcFile,
  parseHttpMessage,
  prepareResponse,
  readWarcRecord,
  sha1Digest,
  verifyDigest,
  WarcFileBuilder,
  WarcFormatError,
  type WarcRecordRef,
} from '../../lambdas/core/archive/index.ts';
import { verifyWarc } from '../fixtures/warc-verify.ts';

const DATE = new Date('2024-05-01T12:34:56.789Z');
const HTML = '<!doctype html><html><head><title>Hello</title></head><body><a href="/b">b</a></body></html>';

interface Page {
  targetUri: string;
  ip: string;
  status: number;
  statusText: string;
  headers: Array<[string, string]>;
  body: Uint8Array;
  truncated?: 'length' | 'time';
}

interface Written {
  page: Page;
  response: WarcRecordRef & { payloadDigest: string; payloadSha1Hex: string };
  request: WarcRecordRef;
  metadata: WarcRecordRef;
}

const binary = Buffer.alloc(4096, 0);
for (let i = 0; i < binary.length; i++) binary[i] = (i * 7 + (i >> 8)) & 0xff;
const fullBody = Buffer.from('x'.repeat(5000));

const PAGES: Page[] = [
  {
    // gzip content coding (kept) and chunked transfer coding (removed; header renamed)
    targetUri: 'https://example.com/',
    ip: '93.184.216.34',
    status: 200,
    statusText: 'OK',
    headers: [
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Content-Encoding', 'gzip'],
      ['Transfer-Encoding', 'chunked'],
      ['Set-Cookie', 'a=1'],
      ['Set-Cookie', 'b=2'],
      ['X-Evil', 'bad\r\nInjected: yes'],
    ],
    body: gzipSync(Buffer.from(HTML)),
  },
  {
    targetUri: 'https://example.com/logo.png',
    ip: '2606:2800:220:1:248:1893:25c8:1946',
    status: 200,
    statusText: 'OK',
    headers: [
      ['Content-Type', 'image/png'],
      ['Content-Length', String(binary.length)],
    ],
    body: binary,
  },
  {
    // windows-1252 bytes that are not UTF-8, and a latin1 header value (a ByteString)
    targetUri: 'https://example.com/caf%C3%A9',
    ip: '93.184.216.34',
    status: 200,
    statusText: 'OK',
    headers: [
      ['Content-Type', 'text/html; charset=windows-1252'],
      ['X-Latin', 'caf\u00e9 \u0080\u0093'],
    ],
    body: Buffer.from('caf\u00e9 \u0080 \u0093quoted\u0094 \u00ff', 'latin1'),
  },
  {
    // truncated at 1000 of 5000 bytes: Content-Length stays as received
    targetUri: 'https://example.com/big',
    ip: '93.184.216.34',
    status: 200,
    statusText: 'OK',
    headers: [
      ['Content-Type', 'text/plain'],
      ['Content-Length', '5000'],
    ],
    body: fullBody.subarray(0, 1000),
    truncated: 'length',
  },
  {
    targetUri: 'https://example.com/missing',
    ip: '93.184.216.34',
    status: 404,
    statusText: 'Not Found',
    headers: [['Content-Length', '0']],
    body: new Uint8Array(0),
  },
];

function requestLineOf(page: Page): string {
  return `GET ${new URL(page.targetUri).pathname} HTTP/1.1`;
}

function requestHeadersOf(page: Page): Array<[string, string]> {
  return [
    ['Host', new URL(page.targetUri).host],
    ['User-Agent', 'serverless-crawler/0.1 (+https://example.com/bot)'],
    ['Accept-Encoding', 'gzip, br'],
  ];
}

/** warcinfo, then per page request + response + metadata (alternating both orders). */
function buildSample(): {
  builder: WarcFileBuilder;
  bytes: Uint8Array;
  warcinfo: WarcRecordRef;
  written: Written[];
} {
  const builder = new WarcFileBuilder({ filename: 'crawl-123/20240501123456-abc.warc.gz' });
  const warcinfo = builder.addWarcinfo(
    {
      software: 'serverless-crawler/0.1.0',
      hostname: 'lambda',
      isPartOf: 'crawl-123',
      'http-header-user-agent': 'serverless-crawler/0.1 (+https://example.com/bot)',
      robots: 'obey',
    },
    DATE,
  );
  const written = PAGES.map((page, index): Written => {
    const responseInput = {
      targetUri: page.targetUri,
      date: DATE,
      httpVersion: '1.1',
      status: page.status,
      statusText: page.statusText,
      headers: page.headers,
      body: page.body,
      ip: page.ip,
      ...(page.truncated ? { truncated: page.truncated } : {}),
    };
    const requestInput = {
      targetUri: page.targetUri,
      date: DATE,
      requestLine: requestLineOf(page),
      headers: requestHeadersOf(page),
      ip: page.ip,
    };
    let request: WarcRecordRef;
    let response: Written['response'];
    if (index % 2 === 0) {
      // request first (Common Crawl order), linked to the response id allocated up front
      const responseId = builder.newRecordId();
      request = builder.addRequest({ ...requestInput, concurrentTo: responseId });
      response = builder.addResponse({ ...responseInput, recordId: responseId });
    } else {
      // response first (Heritrix order)
      response = builder.addResponse(responseInput);
      request = builder.addRequest({ ...requestInput, concurrentTo: response.recordId });
    }
    const metadata = builder.addMetadata({
      targetUri: page.targetUri,
      date: DATE,
      concurrentTo: response.recordId,
      fields: [
        ['fetchTimeMs', '123'],
        ['outlink', 'https://example.com/b'],
        ['note', 'line one\r\nline two'],
      ],
    });
    return { page, response, request, metadata };
  });
  return { builder, bytes: builder.toBytes(), warcinfo, written };
}

const sample = buildSample();

function allRefs(): WarcRecordRef[] {
  return [sample.warcinfo, ...sample.written.flatMap((w) => [w.request, w.response, w.metadata])].sort(
    (a, b) => a.offset - b.offset,
  );
}

async function warcioRecords(bytes: Uint8Array) {
  const parser = new WARCParser([bytes]);
  const out: Array<{ offset: number; record: WARCRecord; payload: Uint8Array }> = [];
  for await (const record of parser) {
    out.push({ offset: parser.offset, record, payload: await record.readFully() });
  }
  return out;
}

const sha1Hex = (bytes: Uint8Array) => createHash('sha1').update(bytes).digest('hex');

describe('WarcFileBuilder', () => {
  it('writes a file warcio reads, with the right fields in every record', async () => {
    const records = await warcioRecords(sample.bytes);
    assert.equal(records.length, sample.builder.recordCount);
    assert.equal(records.length, 1 + 3 * PAGES.length);
    const byId = new Map(records.map((entry) => [entry.record.warcHeader('WARC-Record-ID'), entry]));

    const info = byId.get(sample.warcinfo.recordId)!;
    assert.equal(info.record.warcType, 'warcinfo');
    assert.equal(info.record.warcHeaders.statusline, 'WARC/1.1');
    assert.equal(info.record.warcHeader('WARC-Filename'), 'crawl-123/20240501123456-abc.warc.gz');
    assert.equal(info.record.warcContentType, 'application/warc-fields');
    assert.equal(info.record.warcDate, '2024-05-01T12:34:56.789Z');
    assert.equal(info.record.warcTargetURI, null);
    const infoText = Buffer.from(info.payload).toString('utf8');
    assert.match(infoText, /^format: WARC File Format 1\.1\r\n/);
    assert.match(infoText, /\r\nsoftware: serverless-crawler\/0\.1\.0\r\n/);

    for (const { page, response, request, metadata } of sample.written) {
      const res = byId.get(response.recordId)!;
      assert.equal(res.record.warcHeaders.statusline, 'WARC/1.1');
      assert.equal(res.record.warcType, 'response');
      assert.equal(res.record.warcTargetURI, page.targetUri);
      assert.equal(res.record.warcDate, DATE.toISOString());
      assert.equal(res.record.warcContentType, 'application/http; msgtype=response');
      assert.equal(res.record.warcHeader('WARC-IP-Address'), page.ip);
      assert.equal(res.record.warcHeader('WARC-Warcinfo-ID'), sample.warcinfo.recordId);
      assert.equal(res.record.warcHeader('WARC-Truncated') ?? undefined, page.truncated);
      assert.equal(res.record.warcPayloadDigest, response.payloadDigest);
      assert.equal(response.payloadSha1Hex, sha1Hex(page.body));
      assert.equal(res.record.httpHeaders?.statusline, `HTTP/1.1 ${page.status} ${page.statusText}`);
      assertBytes(res.payload, page.body, 'warcio payload = body as given');

      const req = byId.get(request.recordId)!;
      assert.equal(req.record.warcType, 'request');
      assert.equal(req.record.warcContentType, 'application/http; msgtype=request');
      assert.equal(req.record.warcTargetURI, page.targetUri);
      assert.equal(req.record.warcHeader('WARC-IP-Address'), page.ip);
      assert.equal(req.record.httpHeaders?.statusline, requestLineOf(page));
      assert.equal(req.record.httpHeaders?.headers.get('user-agent'), requestHeadersOf(page)[1]![1]);

      const meta = byId.get(metadata.recordId)!;
      assert.equal(meta.record.warcType, 'metadata');
      assert.equal(meta.record.warcContentType, 'application/warc-fields');
      assert.equal(meta.record.warcTargetURI, page.targetUri);
      assert.equal(
        Buffer.from(meta.payload).toString('utf8'),
        'fetchTimeMs: 123\r\noutlink: https://example.com/b\r\nnote: line one line two\r\n',
      );
    }

    // gzip-encoded, chunked page: content coding kept, Transfer-Encoding renamed, header injection defused
    const gz = byId.get(sample.written[0]!.response.recordId)!;
    const headers = gz.record.httpHeaders!.headers;
    assert.equal(headers.get('content-encoding'), 'gzip');
    assert.equal(headers.get('transfer-encoding'), null);
    assert.equal(headers.get('x-crawler-transfer-encoding'), 'chunked');
    assert.equal(headers.get('x-evil'), 'bad Injected: yes');
    assert.equal(headers.get('injected'), null);
    assert.equal(headers.get('set-cookie'), 'a=1, b=2');
    // a reader that decodes content coding gets the page back
    const [decoded] = (await warcioRecords(sliceOf(sample.bytes, sample.written[0]!.response))).map(
      (e) => e.record,
    );
    assert.equal(await decoded!.contentText(), HTML);

    // truncated page: stored bytes are what we got, Content-Length is what the server said
    const truncated = byId.get(sample.written[3]!.response.recordId)!;
    assert.equal(truncated.record.warcHeader('WARC-Truncated'), 'length');
    assert.equal(truncated.record.httpHeaders!.headers.get('content-length'), '5000');
    assert.equal(truncated.payload.length, 1000);

    // latin1 header bytes are stored as the bytes they stand for
    const latin = byId.get(sample.written[2]!.response.recordId)!;
    const block = readWarcRecord(sliceOf(sample.bytes, sample.written[2]!.response)).block;
    assert.ok(Buffer.from(block).includes(Buffer.from('X-Latin: caf\u00e9 \u0080\u0093\r\n', 'latin1')));
    assertBytes(latin.payload, PAGES[2]!.body);
  });

  it('writes digests that an independent warcio-based verifier accepts', async () => {
    const report = await verifyWarc(sample.bytes);
    assert.deepEqual(report.errors, []);
    assert.deepEqual(report.problems, [], 'no `warcio test` errors');
    assert.deepEqual(report.warnings, [], 'every WARC-Concurrent-To / WARC-Warcinfo-ID resolves');
    assert.equal(report.records.length, sample.builder.recordCount);
    for (const record of report.records) {
      assert.equal(record.blockDigestOk, true, `${record.type} ${record.recordId} block digest`);
      if (record.type === 'response') assert.equal(record.payloadDigestOk, true);
    }
    // warcio's own member offsets are ours
    assert.deepEqual(
      report.records.map((r) => [r.recordId, r.offset, r.length]),
      allRefs().map((ref) => [ref.recordId, ref.offset, ref.length]),
    );
  });

  it('lets any record be read alone from its {offset, length}, as a ranged GET would', async () => {
    const refs = allRefs();
    let expectedOffset = 0;
    for (const ref of refs) {
      assert.equal(ref.offset, expectedOffset, 'members are contiguous');
      expectedOffset += ref.length;
    }
    assert.equal(expectedOffset, sample.bytes.length);
    assert.equal(sample.builder.byteLength, sample.bytes.length);

    const bodies = new Map(sample.written.map((w) => [w.response.recordId, w.page.body]));
    for (const ref of refs) {
      const member = sliceOf(sample.bytes, ref);
      // warcio, given only that slice, finds exactly that record
      const alone = await warcioRecords(member);
      assert.equal(alone.length, 1);
      assert.equal(alone[0]!.record.warcHeader('WARC-Record-ID'), ref.recordId);
      // and so does our reader, gzip or not
      const plain = gunzipSync(member);
      assert.equal(plain.subarray(-4).toString('latin1'), '\r\n\r\n', 'record ends with CRLF CRLF');
      for (const bytes of [member, plain]) {
        const record = readWarcRecord(bytes);
        assert.equal(record.header('warc-record-id'), ref.recordId);
        const body = bodies.get(ref.recordId);
        if (body) {
          assertBytes(parseHttpMessage(record.block).body, body);
          assertBytes(alone[0]!.payload, body);
        }
      }
    }
    assert.equal(refs.length, 1 + 3 * PAGES.length);
  });

  it('links request and metadata to their response, and every record to the warcinfo', async () => {
    const records = [...iterateWarcFile(sample.bytes)].map((entry) => entry.record);
    const ids = new Set(records.map((record) => record.header('WARC-Record-ID')));
    assert.equal(ids.size, records.length, 'record ids are unique');
    for (const record of records) {
      assert.match(record.header('WARC-Record-ID')!, /^<urn:uuid:[0-9a-f-]{36}>$/);
      if (record.header('WARC-Type') === 'warcinfo') continue;
      assert.equal(record.header('WARC-Warcinfo-ID'), sample.warcinfo.recordId);
      for (const [name, value] of record.headers) {
        if (name === 'WARC-Concurrent-To' || name === 'WARC-Warcinfo-ID')
          assert.ok(ids.has(value), `${name} ${value}`);
      }
    }
    const byId = new Map(records.map((record) => [record.header('WARC-Record-ID'), record]));
    for (const { response, request, metadata } of sample.written) {
      assert.equal(byId.get(request.recordId)!.header('WARC-Concurrent-To'), response.recordId);
      assert.equal(byId.get(metadata.recordId)!.header('WARC-Concurrent-To'), response.recordId);
      assert.equal(byId.get(response.recordId)!.header('WARC-Concurrent-To'), undefined);
    }
  });

  it('round-trips through our own reader', async () => {
    const entries = [...iterateWarcFile(sample.bytes)];
    assert.deepEqual(
      entries.map((entry) => [entry.record.header('WARC-Record-ID'), entry.offset, entry.length]),
      allRefs().map((ref) => [ref.recordId, ref.offset, ref.length]),
    );
    const byId = new Map(entries.map((entry) => [entry.record.header('WARC-Record-ID'), entry.record]));
    for (const { page, response, request } of sample.written) {
      const record = byId.get(response.recordId)!;
      assert.equal(record.version, 'WARC/1.1');
      assert.equal(record.header('Content-Length'), String(record.block.length));
      assert.ok(verifyDigest(record.header('WARC-Block-Digest')!, record.block));
      const http = parseHttpMessage(record.block);
      assert.equal(http.startLine, `HTTP/1.1 ${page.status} ${page.statusText}`);
      const expectedHeaders = page.headers.map(([name, value]): [string, string] => [
        name === 'Transfer-Encoding' ? 'X-Crawler-Transfer-Encoding' : name,
        value.replace(/[\r\n]+/g, ' '),
      ]);
      assert.deepEqual(http.headers, expectedHeaders);
      assertBytes(http.body, page.body);
      assert.equal(sha1Digest(http.body), record.header('WARC-Payload-Digest'));
      assert.equal(record.header('WARC-Payload-Digest'), response.payloadDigest);

      const req = parseHttpMessage(byId.get(request.recordId)!.block);
      assert.equal(req.startLine, requestLineOf(page));
      assert.deepEqual(req.headers, requestHeadersOf(page));
      assert.equal(req.header('HOST'), 'example.com');
      assert.equal(req.body.length, 0);
    }

    // the same file uncompressed: same records, offsets in the uncompressed bytes (as warcio sees them)
    const plain = gunzipSync(sample.bytes);
    const plainEntries = [...iterateWarcFile(plain)];
    const report = await verifyWarc(plain);
    assert.deepEqual(report.errors, []);
    assert.deepEqual(
      plainEntries.map((entry) => [entry.record.header('WARC-Record-ID'), entry.offset, entry.length]),
      report.records.map((record) => [record.recordId, record.offset, record.length]),
    );
  });

  it('reads a third-party WARC/1.0 file (warcio example.warc) the way warcio does', async () => {
    const cases = JSON.parse(
      readFileSync(new URL('../data/warc-cases.json', import.meta.url), 'utf8'),
    ) as Array<{ name: string; content_base64: string }>;
    const bytes = Buffer.from(cases.find((c) => c.name === 'example.warc')!.content_base64, 'base64');
    const ours = [...iterateWarcFile(bytes)];
    const theirs = await warcioRecords(bytes);
    assert.equal(ours.length, theirs.length);
    for (const [index, entry] of ours.entries()) {
      const other = theirs[index]!;
      assert.equal(entry.offset, other.offset);
      assert.equal(entry.record.header('WARC-Record-ID'), other.record.warcHeader('WARC-Record-ID'));
      if (other.record.httpHeaders) {
        assertBytes(parseHttpMessage(entry.record.block).body, other.payload);
      }
    }
  });

  it('writes the digests warcio writes for the same record', async () => {
    const body = Buffer.from('hello, world\n');
    const record = WARCRecord.create(
      {
        url: 'https://example.com/',
        date: DATE.toISOString(),
        type: 'response',
        warcVersion: 'WARC/1.1',
        httpHeaders: { 'Content-Type': 'text/plain', 'Content-Length': String(body.length) },
        statusline: 'HTTP/1.1 200 OK',
      },
      [body],
    );
    const bytes = await WARCSerializer.serialize(record, {
      digest: { algo: 'sha-1', prefix: 'sha1:', base32: true },
    });
    const [entry] = [...iterateWarcFile(bytes)];
    const written = entry!.record;
    assert.equal(sha1Digest(written.block), written.header('WARC-Block-Digest'));
    assert.equal(sha1Digest(parseHttpMessage(written.block).body), written.header('WARC-Payload-Digest'));
  });

  it('handles a 10 MB body', async () => {
    const body = randomBytes(10 * 1024 * 1024);
    const builder = new WarcFileBuilder({ filename: 'big.warc.gz' });
    builder.addWarcinfo({ software: 'test' }, DATE);
    const response = builder.addResponse({
      targetUri: 'https://example.com/big.bin',
      date: DATE,
      httpVersion: '1.1',
      status: 200,
      statusText: 'OK',
      headers: [['Content-Type', 'application/octet-stream']],
      body,
      ip: '192.0.2.1',
    });
    const bytes = builder.toBytes();
    assert.equal(response.payloadSha1Hex, sha1Hex(body));
    const record = readWarcRecord(sliceOf(bytes, response));
    assert.ok(Buffer.from(parseHttpMessage(record.block).body).equals(body));
    const report = await verifyWarc(bytes);
    assert.deepEqual(report.errors, []);
    assert.equal(report.records[1]!.payloadDigestOk, true);
  });

  it('is deterministic in structure', () => {
    const again = buildSample();
    assertBytes(sample.builder.toBytes(), sample.bytes, 'toBytes twice gives the same bytes');
    const normalize = (bytes: Uint8Array) => {
      const entries = [...iterateWarcFile(bytes)];
      const names = new Map(
        entries.map((entry, index) => [entry.record.header('WARC-Record-ID'), `<id-${index}>`]),
      );
      const rename = (text: string) =>
        text.replace(/<urn:uuid:[0-9a-f-]+>/g, (id) => names.get(id) ?? '<unknown>');
      return entries.map((entry) => ({
        version: entry.record.version,
        headers: entry.record.headers.map(([name, value]) => [name, rename(value)]),
        block: Buffer.from(entry.record.block).toString('base64'),
      }));
    };
    assert.deepEqual(normalize(again.bytes), normalize(sample.bytes));
  });

  it('keeps hostile input from breaking the format', async () => {
    const builder = new WarcFileBuilder({ filename: 'evil\r\nWARC-Type: response.warc.gz' });
    builder.addWarcinfo({ 'bad name:\r\n': 'x', ok: 'a\r\nb' }, DATE);
    const response = builder.addResponse({
      targetUri: 'https://example.com/a b\r\nWARC-Type: x',
      date: DATE,
      httpVersion: '1.1',
      status: 200,
      statusText: 'OK\r\nX-Injected: 1',
      headers: [
        ['Bad Name', 'v'],
        ['\r\n', 'dropped'],
        ['X-Unicode', 'snowman \u2603'],
      ],
      body: Buffer.from('body'),
      ip: 'not-an-ip',
    });
    const bytes = builder.toBytes();
    const report = await verifyWarc(bytes);
    assert.deepEqual(report.errors, []);
    assert.equal(report.records.length, 2);
    const info = readWarcRecord(bytes.subarray(0, response.offset));
    assert.equal(info.header('WARC-Filename'), 'evil WARC-Type: response.warc.gz');
    assert.equal(Buffer.from(info.block).toString('utf8').split('\r\n').at(-2), 'ok: a b');
    const record = readWarcRecord(sliceOf(bytes, response));
    assert.equal(record.headers.filter(([name]) => name === 'WARC-Type').length, 1);
    assert.equal(record.header('WARC-Target-URI'), 'https://example.com/a%20b%0D%0AWARC-Type:%20x');
    assert.equal(record.header('WARC-IP-Address'), undefined);
    const http = parseHttpMessage(record.block);
    assert.equal(http.startLine, 'HTTP/1.1 200 OK X-Injected: 1');
    assert.deepEqual(
      http.headers.map(([name]) => name),
      ['BadName', 'X-Unicode'],
    );
    assert.ok(Buffer.from(record.block).includes(Buffer.from('snowman \u2603', 'utf8')));
    assert.throws(() => builder.addResponse({ ...baseResponse(), status: 42 }), RangeError);
    assert.throws(
      () => builder.addMetadata({ targetUri: 'x:y', date: DATE, concurrentTo: 'nope', fields: [] }),
      RangeError,
    );
    assert.throws(() => builder.addResponse({ ...baseResponse(), date: new Date(Number.NaN) }), RangeError);
  });

  it('adds a prepared response to any file: compressed once, linked to that file’s warcinfo', async () => {
    const body = Buffer.concat([randomBytes(100_000), Buffer.alloc(300_000, 'a')]);
    const prepared = prepareResponse({
      targetUri: 'https://example.com/p',
      date: DATE,
      httpVersion: '1.1',
      status: 200,
      statusText: 'OK',
      headers: [['Transfer-Encoding', 'chunked']],
      body,
      ip: '192.0.2.1',
      truncated: 'length',
    });
    for (const name of ['one.warc.gz', 'two.warc.gz']) {
      const builder = new WarcFileBuilder({ filename: name });
      const info = builder.addWarcinfo({ software: 'test' }, DATE);
      const ref = builder.addPreparedResponse(prepared);
      const bytes = builder.toBytes();
      const member = sliceOf(bytes, ref);
      // One gzip member, whose CRC and size gunzip checks.
      assert.ok(gunzipSync(member).byteLength > body.byteLength);
      const record = readWarcRecord(member);
      assert.equal(record.header('WARC-Warcinfo-ID'), info.recordId);
      assert.equal(record.header('WARC-Record-ID'), prepared.recordId);
      assert.equal(record.header('WARC-Truncated'), 'length');
      assert.equal(record.header('WARC-IP-Address'), '192.0.2.1');
      assert.equal(record.header('WARC-Payload-Digest'), ref.payloadDigest);
      const http = parseHttpMessage(record.block);
      assert.ok(Buffer.from(http.body).equals(body));
      assert.equal(http.header('X-Crawler-Transfer-Encoding'), 'chunked');
      const report = await verifyWarc(bytes);
      assert.deepEqual([...report.errors, ...report.problems], []);
      assert.equal(report.records[1]!.payloadDigestOk, true);
      assert.equal(report.records[1]!.blockDigestOk, true);
    }
    // Compressed about as well as one gzip of the record (the segments cost a few bytes each).
    const whole = gzipSync(Buffer.concat([Buffer.from('x'.repeat(400)), body])).byteLength;
    const segments = prepared.deflated.reduce((sum, part) => sum + part.byteLength, 0);
    assert.ok(segments < whole + 100, `${segments} vs ${whole}`);
  });

  it('rolls back the records added after a point, but never its warcinfo', () => {
    const builder = new WarcFileBuilder({ filename: 'r.warc.gz' });
    builder.addWarcinfo({ software: 'test' }, DATE);
    const request = builder.addRequest({
      targetUri: 'https://example.com/',
      date: DATE,
      requestLine: 'GET / HTTP/1.1',
      headers: [['Host', 'example.com']],
    });
    const kept = builder.toBytes();
    builder.addResponse({ ...baseResponse(), body: randomBytes(5000) });
    builder.rollback(2);
    assert.equal(builder.recordCount, 2);
    assert.equal(builder.byteLength, request.offset + request.length);
    assertBytes(builder.toBytes(), kept, 'the file as it was');
    assert.throws(() => builder.rollback(0), /warcinfo/);
    assert.throws(() => builder.rollback(3), RangeError);
  });
});

describe('WARC reader', () => {
  it('rejects what is not a whole WARC record', () => {
    const { bytes, written } = sample;
    const member = sliceOf(bytes, written[0]!.response);
    assert.throws(() => readWarcRecord(member.subarray(0, member.length - 10)), WarcFormatError);
    const plain = gunzipSync(member);
    assert.throws(() => readWarcRecord(plain.subarray(0, plain.length - 100)), /truncated/);
    assert.throws(() => readWarcRecord(Buffer.from('HTTP/1.1 200 OK\r\n\r\n')), /not a WARC record/);
    assert.throws(() => readWarcRecord(Buffer.from('WARC/1.1\r\nWARC-Type: x\r\n\r\n')), /Content-Length/);
    assert.throws(() => [...iterateWarcFile(Buffer.concat([bytes, Buffer.from('junk')]))], WarcFormatError);
    assert.throws(() => parseHttpMessage(Buffer.from('HTTP/1.1 200 OK\r\nA: b')), WarcFormatError);
  });

  it('accepts LF-only lines and folded header lines', () => {
    const record = readWarcRecord(
      Buffer.from('WARC/1.0\nWARC-Type: resource\nX-Folded: a\n  b\nContent-Length: 3\n\nabc\n\n'),
    );
    assert.equal(record.header('x-folded'), 'a b');
    assert.deepEqual(Buffer.from(record.block).toString(), 'abc');
    const http = parseHttpMessage(Buffer.from('HTTP/1.0 200 OK\nA: 1\n\nbody'));
    assert.deepEqual(http.headers, [['A', '1']]);
    assert.equal(Buffer.from(http.body).toString(), 'body');
  });
});

describe('WARC digests', () => {
  it('encodes base32 per RFC 4648', () => {
    const vectors: Array<[string, string]> = [
      ['', ''],
      ['f', 'MY======'],
      ['fo', 'MZXQ===='],
      ['foo', 'MZXW6==='],
      ['foob', 'MZXW6YQ='],
      ['fooba', 'MZXW6YTB'],
      ['foobar', 'MZXW6YTBOI======'],
    ];
    for (const [input, output] of vectors) assert.equal(base32Encode(Buffer.from(input)), output);
  });

  it('writes sha1:BASE32 and verifies every encoding warcio accepts', () => {
    assert.equal(sha1Digest(new Uint8Array(0)), 'sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ');
    const data = Buffer.from('hello');
    const raw = createHash('sha1').update(data).digest();
    const spellings = [
      sha1Digest(data),
      sha1Digest(data).toLowerCase().replace('sha1:', 'SHA1:'),
      `sha1:${raw.toString('hex')}`,
      `sha1:${raw.toString('hex').toUpperCase()}`,
      `sha1:${raw.toString('base64')}`,
      `sha1:${raw.toString('base64url')}`,
      `sha256:${createHash('sha256').update(data).digest('hex')}`,
    ];
    for (const spelling of spellings) assert.ok(verifyDigest(spelling, data), spelling);
    for (const bad of ['sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ', 'nope:AAAA', 'sha1', 'sha1:', '']) {
      assert.equal(verifyDigest(bad, data), false, bad);
    }
  });
});

function assertBytes(actual: Uint8Array, expected: Uint8Array, message?: string): void {
  assert.ok(Buffer.from(actual).equals(Buffer.from(expected)), message ?? 'bytes differ');
}

function sliceOf(bytes: Uint8Array, ref: WarcRecordRef): Uint8Array {
  return bytes.subarray(ref.offset, ref.offset + ref.length);
}

function baseResponse() {
  return {
    targetUri: 'https://example.com/',
    date: DATE,
    httpVersion: '1.1',
    status: 200,
    statusText: 'OK',
    headers: [] as Array<[string, string]>,
    body: new Uint8Array(0),
  };
}
