// The local AWS as a web page in a browser on the same machine sees it: every attack on `crawler
// local`'s endpoint (and on the emulators' own loopback ports) is refused with a 403 before anything
// reaches an emulator, while the SDK, signed query-protocol forms and the AWS CLI keep working; and
// each state dir has its own unpredictable queue, bucket and table names.
//
// The endpoint is composed as `crawler local` composes it (cli/local-command.ts: the state dir's local
// AWS on a free port behind the public SQS query gateway) but without starting the pollers, so the
// task queue's depth shows exactly what was sent to it.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { type IncomingHttpHeaders, request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { type AwsClients, createClients, destroyClients, endpointsFromUrl } from '../../local/aws-clients.ts';
import { startEmulators } from '../../local/emulators.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { physicalName } from '../../local/physical-names.ts';
import { type SqsQueryGateway, startSqsQueryGateway } from '../../local/sqs-query-gateway.ts';
import { locateStack } from '../../local/stack-locator.ts';
import { LOCAL_INSTANCE_ID } from '../../local/state-dir.ts';
import { tempDir, tempStateDir } from '../fixtures/local-state.ts';
import { BUCKET, testTemplate } from '../fixtures/local-template.ts';

const STACK = 'LocalTest';
const SIG = '0'.repeat(64);
/** Shaped like the SDK's; never verified (local credentials are dummies). */
const SIGNED = `AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/sqs/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=${SIG}`;
const FORM = 'application/x-www-form-urlencoded; charset=utf-8';
const SECRET_KEY = 'secret/page.warc.gz';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One plain HTTP request to 127.0.0.1:port, with exactly the Host and headers given. */
function send(
  port: number,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  body = '',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const out = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    out.on('error', reject);
    out.end(body);
  });
}

function assertRefused(answer: Answer, reason: RegExp): void {
  assert.equal(answer.status, 403, answer.body);
  assert.match(answer.body, /<Code>AccessDenied<\/Code>|"__type":"AccessDeniedException"/);
  assert.match(answer.body, reason);
  const cors = Object.keys(answer.headers).filter((name) => name.startsWith('access-control-'));
  assert.deepEqual(cors, [], 'no CORS header ever');
}

function findAwsCli(): string | undefined {
  if (process.env.CRAWLER_TEST_AWS_CLI) return process.env.CRAWLER_TEST_AWS_CLI;
  const found = spawnSync('sh', ['-c', 'command -v aws'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() !== '' ? found.stdout.trim() : undefined;
}

describe('crawler local endpoint: what a web page sends is refused, nothing reaches the queue', () => {
  let local: LocalAws;
  let gateway: SqsQueryGateway;
  let port: number;
  let queueUrl: string;
  let bucket: string;
  let work: string;
  const cleanup: Array<() => Promise<unknown>> = [];

  before(async () => {
    work = await tempDir({ after: (fn) => cleanup.push(async () => fn()) }, 'endpoint-guard-');
    local = await startLocalAws({
      template: testTemplate(),
      stackName: STACK,
      stateDir: join(work, 'state'),
      port: 0,
    });
    gateway = await startSqsQueryGateway({
      upstream: local.endpoints.sqs,
      port: 0,
      rewriteOrigins: [local.endpoints.sqs, local.endpoints.s3, local.endpoints.dynamodb],
    });
    port = gateway.port;
    queueUrl = `${gateway.url}${new URL(local.outputs.TaskQueueUrl ?? '').pathname}`;
    bucket = local.outputs.PageBucketName ?? '';
    await local.clients.s3.send(new PutObjectCommand({ Bucket: bucket, Key: SECRET_KEY, Body: 'page' }));
  });

  after(async () => {
    await gateway?.stop();
    await local?.stop();
    for (const fn of cleanup.reverse()) await fn();
  });

  async function queueDepth(): Promise<number> {
    const { Attributes } = await local.clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: local.outputs.TaskQueueUrl, AttributeNames: ['All'] }),
    );
    return (
      Number(Attributes?.ApproximateNumberOfMessages) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible) +
      Number(Attributes?.ApproximateNumberOfMessagesDelayed)
    );
  }

  const sendMessageForm = () =>
    new URLSearchParams({
      Action: 'SendMessage',
      Version: '2012-11-05',
      QueueUrl: queueUrl,
      MessageBody: 'http://attacker.example/',
    }).toString();

  it('refuses a form POST of SendMessage from a foreign Origin (a cross-site form, no credentials)', async () => {
    const host = `127.0.0.1:${port}`;
    for (const path of ['/', new URL(queueUrl).pathname]) {
      const answer = await send(
        port,
        'POST',
        path,
        { host, origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
        sendMessageForm(),
      );
      assertRefused(answer, /Origin "http:\/\/evil\.example" is not this endpoint/);
      assert.match(answer.headers['content-type'] ?? '', /xml/);
    }
    // Even with a forged signature: a foreign Origin is a web page.
    const signed = await send(
      port,
      'POST',
      '/',
      { host, origin: 'http://evil.example', 'content-type': FORM, authorization: SIGNED },
      sendMessageForm(),
    );
    assertRefused(signed, /Origin/);
    assert.equal(await queueDepth(), 0);
  });

  it('refuses an unsigned form POST of SendMessage (no Origin: an old browser, a no-referrer form)', async () => {
    for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
      const answer = await send(
        port,
        'POST',
        '/',
        { host: `127.0.0.1:${port}`, 'content-type': type },
        sendMessageForm(),
      );
      assertRefused(answer, /request not signed/);
    }
    // The JSON protocol unsigned (what a preflighted fetch, were it allowed, would send).
    const json = await send(
      port,
      'POST',
      '/',
      {
        host: `localhost:${port}`,
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.SendMessage',
      },
      JSON.stringify({ QueueUrl: queueUrl, MessageBody: 'http://attacker.example/' }),
    );
    assertRefused(json, /request not signed/);
    assert.match(json.headers['content-type'] ?? '', /json/);
    assert.equal(await queueDepth(), 0);
  });

  it('refuses an S3 listing through a DNS-rebinding Host, even with a (same-origin, so settable) signature', async () => {
    for (const host of [`${bucket}.rebind.attacker.example:${port}`, `rebind.attacker.example:${port}`]) {
      const path = host.startsWith(bucket) ? '/?list-type=2' : `/${bucket}?list-type=2`;
      const answer = await send(port, 'GET', path, {
        host,
        authorization: SIGNED.replace('/sqs/', '/s3/'),
        'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
      });
      assertRefused(answer, /Host ".*rebind\.attacker\.example:\d+" is not this endpoint/);
      assert.doesNotMatch(answer.body, /secret/, 'no key of the bucket in the answer');
    }
    // Virtual-hosted style on a loopback name: nothing here uses it (path style everywhere).
    const virtual = await send(port, 'GET', '/?list-type=2', {
      host: `${bucket}.localhost:${port}`,
      authorization: SIGNED,
    });
    assertRefused(virtual, /is not this endpoint/);
  });

  it('refuses every CORS preflight, with no Access-Control-Allow-* header', async () => {
    const answer = await send(port, 'OPTIONS', '/', {
      host: `127.0.0.1:${port}`,
      origin: 'http://evil.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type,x-amz-date,x-amz-target',
    });
    assertRefused(answer, /CORS preflight refused/);
    assert.equal(await queueDepth(), 0);
  });

  it('still serves the SDK, signed query-protocol forms, presigned reads and the AWS CLI: the queue holds exactly their messages', async (t) => {
    const sdk: AwsClients = createClients(endpointsFromUrl(gateway.url));
    t.after(() => destroyClients(sdk));
    await sdk.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'from-sdk' }));
    const put = await sdk.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'sdk.txt', Body: 'ok' }));
    assert.equal(put.$metadata.httpStatusCode, 200);

    // The query protocol of older AWS CLIs and SDKs: a form POST, signed.
    const form = await send(
      port,
      'POST',
      '/',
      {
        host: `127.0.0.1:${port}`,
        'content-type': FORM,
        authorization: SIGNED,
        'x-amz-date': '20250101T000000Z',
      },
      new URLSearchParams({
        Action: 'SendMessage',
        QueueUrl: queueUrl,
        MessageBody: 'from-query-form',
      }).toString(),
    );
    assert.equal(form.status, 200, form.body);
    assert.match(form.body, /<SendMessageResponse[^>]*><SendMessageResult><MessageId>/);

    // An S3 presigned GET (SigV4 query): what `curl <presigned URL>` sends.
    const presigned = await send(
      port,
      'GET',
      `/${bucket}/${SECRET_KEY}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=test%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=${SIG}`,
      { host: `localhost:${port}` },
    );
    assert.equal(presigned.status, 200, presigned.body);
    assert.equal(presigned.body, 'page');

    const expected = ['from-query-form', 'from-sdk'];
    const cli = findAwsCli();
    if (cli) {
      const config = join(work, 'aws-config');
      await writeFile(config, '[default]\nregion = us-east-1\n');
      const env = {
        PATH: process.env.PATH,
        HOME: work,
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_DEFAULT_REGION: 'us-east-1',
        AWS_CONFIG_FILE: config,
        AWS_SHARED_CREDENTIALS_FILE: join(work, 'no-credentials'),
        AWS_PAGER: '',
        AWS_EC2_METADATA_DISABLED: 'true',
      };
      const aws = (...args: string[]) =>
        promisify(execFile)(cli, ['--endpoint-url', gateway.url, ...args], { env, timeout: 60_000 });
      await aws('sqs', 'send-message', '--queue-url', queueUrl, '--message-body', 'from-aws-cli');
      expected.push('from-aws-cli');
      const { stdout } = await aws('s3', 'ls', `s3://${bucket}/secret/`);
      assert.match(stdout, /page\.warc\.gz/);
    } else {
      t.diagnostic(
        'aws CLI not installed: its part is skipped (test/e2e/crawler-local.test.ts covers it in CI)',
      );
    }

    // Every message in the queue is one of these: none of the attacks above got through.
    const bodies: string[] = [];
    for (;;) {
      const got = await local.clients.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: local.outputs.TaskQueueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 0,
        }),
      );
      if (!got.Messages?.length) break;
      bodies.push(...got.Messages.map((m) => m.Body ?? ''));
    }
    assert.deepEqual(bodies.sort(), expected.sort());
  });
});

describe('the emulators’ own loopback listeners (crawler crawl, random ports)', () => {
  it('refuse the same attacks, and serve signed SDK clients', async (t) => {
    const emulators = await startEmulators();
    const clients = createClients(emulators.endpoints);
    t.after(async () => {
      destroyClients(clients);
      await emulators.stop();
    });
    const fauxqs = Number(new URL(emulators.endpoints.sqs).port);
    const dynalite = Number(new URL(emulators.endpoints.dynamodb).port);
    assert.notEqual(fauxqs, dynalite);
    const dynamoJson = {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'DynamoDB_20120810.ListTables',
    };
    for (const port of [fauxqs, dynalite]) {
      const here = `127.0.0.1:${port}`;
      assertRefused(
        await send(
          port,
          'POST',
          '/',
          { host: `rebind.attacker.example:${port}`, authorization: SIGNED, ...dynamoJson },
          '{}',
        ),
        /rebind\.attacker\.example/,
      );
      assertRefused(await send(port, 'POST', '/', { host: here, ...dynamoJson }, '{}'), /request not signed/);
      assertRefused(
        await send(
          port,
          'POST',
          '/',
          { host: here, origin: 'http://evil.example', 'content-type': FORM },
          'Action=ListQueues',
        ),
        /Origin/,
      );
      assertRefused(
        await send(port, 'OPTIONS', '/', {
          host: here,
          origin: 'http://evil.example',
          'access-control-request-method': 'POST',
        }),
        /CORS preflight/,
      );
    }
    // Signed clients (the handlers, the pollers, the CLI commands) are served as before.
    const tables = await clients.dynamodb.send(new ListTablesCommand({}));
    assert.deepEqual(tables.TableNames, []);
  });
});

describe('physical names of a state dir', () => {
  it('are unpredictable (a random instance id per state dir), kept across restarts, and found by --endpoint clients', async (t) => {
    const names = async (stateDir: string) => {
      const local = await startLocalAws({ template: testTemplate(), stackName: STACK, stateDir, port: 0 });
      try {
        return {
          instanceId: local.stack.instanceId,
          queue: new URL(local.outputs.TaskQueueUrl ?? '').pathname.split('/').pop(),
          bucket: local.outputs.PageBucketName,
          table: local.outputs.FrontierTableName,
        };
      } finally {
        await local.stop();
      }
    };
    const dirA = await tempStateDir(t);
    const a = await names(dirA);
    const b = await names(await tempStateDir(t));
    // Nothing in common between two machines (or two state dirs), nor with the old fixed id.
    assert.notEqual(a.instanceId, b.instanceId);
    assert.notEqual(a.queue, b.queue);
    assert.notEqual(a.bucket, b.bucket);
    assert.notEqual(a.table, b.table);
    assert.notEqual(a.instanceId, LOCAL_INSTANCE_ID);
    assert.notEqual(a.bucket, physicalName('bucket', STACK, BUCKET, LOCAL_INSTANCE_ID));
    // The same state dir finds its resources again.
    assert.deepEqual(await names(dirA), a);

    // A client given only the endpoint (`crawler status --endpoint URL`) finds the names there.
    const local = await startLocalAws({
      template: testTemplate(),
      stackName: STACK,
      stateDir: dirA,
      port: 0,
    });
    t.after(() => local.stop());
    const gateway = await startSqsQueryGateway({
      upstream: local.endpoints.sqs,
      port: 0,
      rewriteOrigins: [local.endpoints.sqs],
    });
    t.after(() => gateway.stop());
    const located = await locateStack({
      endpoint: gateway.url,
      stateDir: join(dirA, 'unused'),
      template: testTemplate(),
      localStackName: STACK,
    });
    t.after(() => located.close());
    assert.equal(located.outputs.PageBucketName, a.bucket);
    assert.equal(located.outputs.TaskQueueUrl, `${gateway.url}/000000000000/${a.queue}`);
  });
});
