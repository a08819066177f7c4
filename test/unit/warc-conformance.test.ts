/**
 * The independent WARC verifier (test/fixtures/warc-verify.ts) against webrecorder/warcio's own test
 * files and the expectations of `warcio check` / `warcio test` (test/data/warc-cases.json).
 * If the verifier agrees with warcio here, its verdict on our writer's files can be trusted.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { verifyWarc } from '../fixtures/warc-verify.ts';

interface WarcCase {
  name: string;
  sha256: string;
  content_base64: string;
  expected: {
    exit_code: number;
    records?: number;
    payload_digest_failures?: number;
    verbose_digest_pass_count?: number;
    records_reported_verbose?: number;
    expected_output?: string;
  };
}

const cases = JSON.parse(
  readFileSync(new URL('../data/warc-cases.json', import.meta.url), 'utf8'),
) as WarcCase[];

function load(name: string): { bytes: Buffer; expected: WarcCase['expected'] } {
  const found = cases.find((c) => c.name === name);
  assert.ok(found, `conformance case ${name}`);
  const bytes = Buffer.from(found.content_base64, 'base64');
  assert.equal(
    createHash('sha256').update(bytes).digest('hex'),
    found.sha256,
    `${name} is the upstream file`,
  );
  return { bytes, expected: found.expected };
}

interface ExpectedRecord {
  recordId: string | undefined;
  type: string;
  errors: string[];
  digestNotes: string[];
}

/** Parses the text `warcio test` printed: records with their "error:" lines, exceptions, global comments. */
function parseTesterOutput(output: string) {
  const records: ExpectedRecord[] = [];
  const exceptions: string[] = [];
  const globalComments: string[] = [];
  const patterns: Array<[RegExp, (value: string) => void]> = [
    [
      /^ {2}WARC-Record-ID (.*)$/,
      (id) =>
        records.push({ recordId: id === 'None' ? undefined : id, type: '', errors: [], digestNotes: [] }),
    ],
    [/^ {4}WARC-Type (.*)$/, (type) => (records.at(-1)!.type = type)],
    [/^ {4}error: (.*)$/, (error) => records.at(-1)!.errors.push(error)],
    [/^ {4}(unknown hash algorithm.*)$/, (note) => records.at(-1)!.digestNotes.push(note)],
    [/^ {2}saw exception \w+: (.*)$/, (message) => exceptions.push(message)],
    [
      /^ {2}comment: (WARC-(?:Warcinfo-ID|Concurrent-To) not found: .*)$/,
      (comment) => globalComments.push(comment),
    ],
  ];
  for (const line of output.split('\n')) {
    for (const [pattern, take] of patterns) {
      const match = pattern.exec(line);
      if (match) {
        take(match[1]!);
        break;
      }
    }
  }
  return { records, exceptions, globalComments };
}

/** One gzip member per record, like our writer and Common Crawl (split where warcio says records start). */
async function perRecordGzip(bytes: Uint8Array): Promise<{ gz: Buffer; offsets: number[] }> {
  const members: Buffer[] = [];
  const offsets: number[] = [];
  let size = 0;
  for (const { offset, length } of (await verifyWarc(bytes)).records) {
    offsets.push(size);
    const member = gzipSync(bytes.subarray(offset!, offset! + length!));
    members.push(member);
    size += member.length;
  }
  return { gz: Buffer.concat(members), offsets };
}

describe('WARC verifier vs warcio test data', () => {
  it('example.warc: valid, response digests verify, revisit payload not checked (warcio check exits 0)', async () => {
    const { bytes, expected } = load('example.warc');
    const { gz, offsets } = await perRecordGzip(bytes);
    for (const [label, input] of [
      ['example.warc', bytes],
      ['example.warc.gz', gz],
    ] as const) {
      const report = await verifyWarc(input);
      assert.equal(expected.exit_code, 0);
      assert.deepEqual(report.errors, [], label);
      assert.equal(report.records.length, expected.records, label);
      assert.deepEqual(
        report.records.map((r) => r.type),
        ['warcinfo', 'warcinfo', 'response', 'request', 'revisit', 'request'],
      );
      const [info1, info2, response, request1, revisit, request2] = report.records;
      assert.equal(response!.blockDigestOk, true);
      assert.equal(response!.payloadDigestOk, true);
      assert.equal(revisit!.blockDigestOk, true);
      assert.equal(revisit!.payloadDigestOk, undefined, 'a revisit payload is not stored, so not checked');
      for (const record of [info1, info2, request1, request2]) {
        assert.equal(record!.blockDigestOk, null);
        assert.equal(record!.payloadDigestOk, undefined);
      }
      // `warcio check -v` prints "digest pass" twice per file
      assert.equal(report.records.filter((r) => r.blockDigestOk === true).length, 2);
      assert.deepEqual(report.warnings, []);
      if (input === gz) {
        assert.deepEqual(
          report.records.map((r) => r.offset),
          offsets,
          'offsets are gzip member offsets',
        );
      }
    }
  });

  it('example-digest.warc: one bad payload digest fails, base32/base64/base64url all pass (exit 1)', async () => {
    const { bytes, expected } = load('example-digest.warc');
    const report = await verifyWarc(bytes);
    assert.equal(report.records.length, expected.records_reported_verbose);
    assert.equal(expected.exit_code, 1);
    assert.equal(report.errors.length, expected.payload_digest_failures);
    assert.match(report.errors[0]!, /^#0 .*payload digest failed: sha1:1112H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ$/);
    assert.deepEqual(
      report.records.map((r) => [r.blockDigestOk, r.payloadDigestOk]),
      [
        [true, false],
        [true, true],
        [true, true],
        [true, true],
      ],
    );
    const passing = report.records.filter((r) => r.blockDigestOk !== false && r.payloadDigestOk !== false);
    assert.equal(passing.length, expected.verbose_digest_pass_count);
  });

  it('standard-torture-validate-record.warc: flags exactly the errors `warcio test` reports', async () => {
    const { bytes, expected } = load('standard-torture-validate-record.warc');
    const want = parseTesterOutput(expected.expected_output!);
    assert.equal(want.records.length, 17);
    const report = await verifyWarc(bytes);
    assert.deepEqual(report.errors, []);
    assert.equal(report.records.length, want.records.length);
    for (const [index, record] of report.records.entries()) {
      const expectedRecord = want.records[index]!;
      assert.equal(record.recordId, expectedRecord.recordId);
      assert.equal(record.type, expectedRecord.type);
      assert.deepEqual([...record.problems].sort(), [...expectedRecord.errors].sort(), `record ${index}`);
    }
  });

  it('standard-torture-validate-field.warc (CRLF line ends): same errors, exception and global comments', async () => {
    const { bytes, expected } = load('standard-torture-validate-field.warc');
    // The upstream file uses bare LF line ends, which python warcio tolerates and warcio.js does not
    // (see the next test). Its records all have Content-Length 0, so CRLF line ends change nothing else.
    const crlf = Buffer.from(bytes.toString('latin1').replace(/\n/g, '\r\n'), 'latin1');
    const want = parseTesterOutput(expected.expected_output!);
    assert.equal(want.records.length, 3);
    const report = await verifyWarc(crlf);
    assert.equal(report.records.length, want.records.length);
    for (const [index, record] of report.records.entries()) {
      const expectedRecord = want.records[index]!;
      assert.equal(record.recordId, expectedRecord.recordId);
      assert.equal(record.type, expectedRecord.type);
      assert.deepEqual([...record.problems].sort(), [...expectedRecord.errors].sort(), `record ${index}`);
      for (const note of expectedRecord.digestNotes) {
        assert.ok(
          report.warnings.some((warning) => warning.startsWith(`#${index} `) && warning.endsWith(note)),
          note,
        );
      }
    }
    assert.deepEqual(want.exceptions, ['Invalid WARC record, first line: WARC/invalid']);
    assert.deepEqual(report.errors, want.exceptions);
    for (const comment of want.globalComments) assert.ok(report.warnings.includes(comment), comment);
  });

  it('standard-torture-validate-field.warc (as published, LF-only): no crash, flags the line ends', async () => {
    const { bytes, expected } = load('standard-torture-validate-field.warc');
    const want = parseTesterOutput(expected.expected_output!);
    const report = await verifyWarc(bytes);
    assert.ok(report.errors.some((error) => /must end with CRLF/.test(error)));
    // the first record is still checked in full
    assert.deepEqual([...report.records[0]!.problems].sort(), [...want.records[0]!.errors].sort());
  });
});
