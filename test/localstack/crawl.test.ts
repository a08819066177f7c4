/**
 * The end-to-end suite against the real stack deployed into LocalStack (`docker compose up -d`,
 * `scripts/localstack/deploy.sh`): the `crawler` CLI finds the stack by its CloudFormation outputs
 * (`--stack NAME --endpoint URL`), submits crawls of a site on this machine, and reads status,
 * results and pages; the fetch and aggregate functions run as Lambda functions in LocalStack.
 *
 * Run with `npm run test:localstack`; not part of `npm test`. When no LocalStack answers it says so
 * in one line and skips.
 *
 * Environment: LOCALSTACK_ENDPOINT (default http://localhost:4566), CRAWLER_STACK (default
 * ServerlessCrawler), CRAWLER_LOCALSTACK_SITE_HOST: the name the Lambda containers reach this
 * machine by (default host.docker.internal; docker-compose.yml maps it to the host gateway). The test
 * site listens on all interfaces for that reason, on a random port, for the length of the suite.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describeStackOutputs } from '../../cli/stack-outputs.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { createClients, destroyClients, endpointsFromUrl } from '../../local/aws-clients.ts';
import { runCli } from '../fixtures/run-cli.ts';

const ENDPOINT = new URL(process.env.LOCALSTACK_ENDPOINT ?? 'http://localhost:4566').origin;
const STACK = process.env.CRAWLER_STACK ?? 'ServerlessCrawler';
const SITE_HOST = process.env.CRAWLER_LOCALSTACK_SITE_HOST ?? 'host.docker.internal';
/** Lambda containers start slowly in LocalStack (image pull, cold starts). */
const CRAWL_TIMEOUT_MS = 5 * 60_000;
const MANY = 20;

async function localStackAnswers(): Promise<boolean> {
  try {
    const response = await fetch(`${ENDPOINT}/_localstack/health`, { signal: AbortSignal.timeout(2_000) });
    return response.ok;
  } catch {
    return false;
  }
}

const available = await localStackAnswers();

if (!available) {
  test(`LocalStack suite: no LocalStack answers at ${ENDPOINT} (docker compose up -d && scripts/localstack/deploy.sh); skipped`, {
    skip: true,
  }, () => {});
} else {
  suite();
}

function suite(): void {
  const pages: Record<string, string> = {
    '/': '<html><body>localstack home <a href="/a">a</a></body></html>',
    '/a': '<html><body>page a</body></html>',
    '/plain': '<html><body>plain</body></html>',
    '/many/': Array.from({ length: MANY }, (_, i) => `<a href="/many/${i}">${i}</a>`).join(' '),
  };
  for (let i = 0; i < MANY; i++) pages[`/many/${i}`] = `many ${i}`;
  const hits = new Map<string, number>();
  let server: Server;
  let origin: string;
  let outputs: Record<string, string>;

  before(async () => {
    try {
      outputs = await describeStackOutputs(STACK, { endpoint: ENDPOINT });
    } catch (error) {
      throw new Error(
        `LocalStack answers at ${ENDPOINT}, but stack ${STACK} cannot be read: ${(error as Error).message}. ` +
          'Deploy it first: scripts/localstack/deploy.sh',
      );
    }
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const path = request.url ?? '/';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const body = pages[path];
      response.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(body ?? 'not found');
    });
    // All interfaces: the Lambda containers come in through the Docker bridge, not loopback.
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    origin = `http://${SITE_HOST}:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  const target = () => ['--stack', STACK, '--endpoint', ENDPOINT];

  async function crawler(...args: string[]) {
    const run = await runCli([...args, ...target()], { timeoutMs: 120_000 });
    assert.ok(!run.timedOut, `crawler ${args.join(' ')} timed out`);
    return run;
  }

  async function statusOf(crawlId: string) {
    const run = await crawler('status', crawlId, '--json');
    assert.equal(run.code, 0, run.stderr);
    return JSON.parse(run.stdout) as {
      state: string;
      queued: number;
      pending: number;
      byOutcome: Record<string, number>;
    };
  }

  async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + CRAWL_TIMEOUT_MS;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline)
        throw new Error(`timed out after ${CRAWL_TIMEOUT_MS} ms waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }

  describe(`the deployed stack ${STACK} in LocalStack at ${ENDPOINT}`, () => {
    it('has the outputs the CLI needs', () => {
      for (const key of ['TaskQueueUrl', 'ResultsQueueUrl', 'PageBucketName', 'FrontierTableName']) {
        assert.ok(outputs[key], `output ${key}`);
      }
    });

    it('crawler submit --stack runs a crawl in the Lambda functions; status, results and get read it', async () => {
      const submitted = await crawler('submit', `${origin}/`, '--allow-private', '--delay', '0');
      assert.equal(submitted.code, 0, submitted.stderr);
      const crawlId = submitted.stdout.trim();
      const status = await until('the crawl to complete', async () => {
        const s = await statusOf(crawlId);
        return s.state === 'complete' ? s : undefined;
      });
      assert.equal(status.byOutcome.fetched, 2, JSON.stringify(status));

      const results = await crawler('results', crawlId);
      assert.equal(results.code, 0, results.stderr);
      const urls = results.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { url: string }).url)
        .sort();
      assert.deepEqual(urls, [`${origin}/`, `${origin}/a`]);
      const page = await crawler('get', `${origin}/a`, '--crawl', crawlId);
      assert.equal(page.code, 0, page.stderr);
      assert.equal(page.stdout, pages['/a']);
      assert.equal(hits.get('/a'), 1, 'fetched once');
    });

    it('a plain URL message joins the default crawl, which never reaches private addresses', async () => {
      const clients = createClients(endpointsFromUrl(ENDPOINT));
      try {
        const url = `${origin}/plain?${Date.now()}`;
        await clients.sqs.send(new SendMessageCommand({ QueueUrl: outputs.TaskQueueUrl, MessageBody: url }));
        const blobs = new S3Blobs(clients.s3, outputs.PageBucketName!);
        const line = await until('the plain URL result', async () => {
          for await (const key of blobs.list('results/default/')) {
            const text = gunzipSync(await blobs.get(key)).toString('utf8');
            for (const raw of text.split('\n').filter(Boolean)) {
              const parsed = JSON.parse(raw) as { url: string; outcome: string; code?: string };
              if (parsed.url === url) return parsed;
            }
          }
          return undefined;
        });
        assert.equal(line.outcome, 'blocked');
        assert.equal(line.code, 'address-blocked');
        assert.equal(hits.get(new URL(url).pathname + new URL(url).search), undefined, 'never contacted');
      } finally {
        destroyClients(clients);
      }
    });

    it('crawler cancel stops a running crawl; its queued tasks end as cancelled', async () => {
      const submitted = await crawler('submit', `${origin}/many/`, '--allow-private', '--delay', '1000');
      assert.equal(submitted.code, 0, submitted.stderr);
      const crawlId = submitted.stdout.trim();
      await until('the first page to be crawled', async () =>
        (await statusOf(crawlId)).queued > MANY ? true : undefined,
      );
      const cancel = await crawler('cancel', crawlId);
      assert.equal(cancel.code, 0, cancel.stderr);
      assert.equal((await statusOf(crawlId)).state, 'cancelled');
      const final = await until('the cancelled crawl to drain', async () => {
        const s = await statusOf(crawlId);
        return s.pending === 0 ? s : undefined;
      });
      assert.equal(final.state, 'cancelled');
      assert.ok((final.byOutcome.cancelled ?? 0) > 0, JSON.stringify(final));
    });
  });
}
