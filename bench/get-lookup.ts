/**
 * `npx node bench/get-lookup.ts [--urls 20000] [--lookups 5]`: the time and S3 reads of one
 * `crawler get` on a crawl of that many URLs. The crawl is synthetic (test/fixtures/synthetic-crawl.ts:
 * WARC files and index parts written by the crawler's own writers, 100 lines a part, URL items with
 * their `part`) on the embedded emulators; `get` runs in this process against them (`--endpoint`),
 * for URLs spread over the index (first, last and between).
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { synthesizeTemplate } from '../cdk/synth.ts';
import { getCommand } from '../cli/get-command.ts';
import { diffSnapshots } from '../lambdas/shared/aws-call-counter.ts';
import { STACK_NAME } from '../lambdas/shared/contracts.ts';
import { parseTemplate } from '../local/cfn-template.ts';
import { startLocalAws } from '../local/local-aws.ts';
import { processMeters } from '../local/process-meters.ts';
import { LOCAL_INSTANCE_ID } from '../local/state-dir.ts';
import { plainPages, writeSyntheticCrawl } from '../test/fixtures/synthetic-crawl.ts';

const { values } = parseArgs({
  options: { urls: { type: 'string', default: '20000' }, lookups: { type: 'string', default: '5' } },
});
const urls = Number(values.urls);
const lookups = Math.max(2, Number(values.lookups));

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

const aws = await startLocalAws({
  template: parseTemplate(synthesizeTemplate()),
  stackName: STACK_NAME,
  instanceId: LOCAL_INSTANCE_ID,
  port: 0,
  log: () => {},
});
try {
  const crawlId = `bench-${randomUUID().slice(0, 8)}`;
  const origin = 'http://bench.test';
  const built = Date.now();
  const pages = plainPages(origin, urls);
  const crawl = await writeSyntheticCrawl(
    {
      s3: aws.clients.s3,
      dynamodb: aws.clients.dynamodb,
      bucket: aws.outputs.PageBucketName!,
      table: aws.outputs.FrontierTableName!,
    },
    crawlId,
    pages,
  );
  process.stderr.write(
    `crawl ${crawlId}: ${urls} URLs, ${crawl.parts.length} index parts, built in ${((Date.now() - built) / 1000).toFixed(1)} s\n`,
  );
  const times: number[] = [];
  for (let i = 0; i < lookups; i++) {
    const index = Math.round((i * (urls - 1)) / (lookups - 1));
    const stdout = new Sink();
    const stderr = new Sink();
    const from = processMeters.counter.snapshot();
    const started = performance.now();
    const code = await getCommand([pages[index]!.url, '--crawl', crawlId, '--endpoint', aws.endpoints.s3], {
      stdout,
      stderr,
    });
    const ms = performance.now() - started;
    const ops = diffSnapshots(from, processMeters.counter.snapshot()).operations;
    if (code !== 0 || stdout.text !== Buffer.from(pages[index]!.body).toString())
      throw new Error(`get of URL ${index} failed (exit ${code}): ${stderr.text}`);
    times.push(ms);
    process.stderr.write(
      `get URL #${index}: ${ms.toFixed(0)} ms, S3 GetObject ${ops['S3:GetObject']?.calls ?? 0}, ` +
        `ListObjectsV2 ${ops['S3:ListObjectsV2']?.calls ?? 0}, DynamoDB GetItem ${ops['DynamoDB:GetItem']?.calls ?? 0}\n`,
    );
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(
    `crawler get on ${urls} URLs (${crawl.parts.length} parts): median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, ` +
      `min ${sorted[0]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms over ${lookups} lookups`,
  );
} finally {
  await aws.stop();
}
