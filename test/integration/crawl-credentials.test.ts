/**
 * Where a crawl's credentials live (issue 27, point 2): the submitter writes them to an SSM
 * SecureString parameter under the stack's prefix and the crawl's config names only the parameter, so
 * no DynamoDB item holds a secret; the fetch function's reader gets them back, and answers a missing
 * or damaged parameter with a `credentials-unavailable` result. The local SSM (local/ssm-server.ts) is
 * checked over the SDK: as strict as SSM on names, sizes, overwrites and decryption, and kept in a
 * file of mode 0600.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import {
  DeleteParameterCommand,
  GetParameterCommand,
  GetParametersByPathCommand,
  ParameterAlreadyExists,
  ParameterNotFound,
  PutParameterCommand,
  SSMClient,
} from '@aws-sdk/client-ssm';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { SsmCredentialStore } from '../../lambdas/adapters/credential-store.ts';
import { CREDENTIAL_LIMITS, PermanentError } from '../../lambdas/core/base/index.ts';
import { type CredentialBundle, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { credentialsPrefix, OUTPUTS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import { clientConfig, clientSettings } from '../../local/aws-clients.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import type { RunningServer } from '../../local/fauxqs-server.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { LocalParameterStore, startSsmServer } from '../../local/ssm-server.ts';

const SECRET = 'tok-8f3a1c9e-secret';
const BUNDLE: CredentialBundle = {
  v: 1,
  headers: [{ name: 'authorization', value: `Bearer ${SECRET}`, hosts: ['127.0.0.2:8080'] }],
  cookies: [
    {
      domain: '127.0.0.2',
      subdomains: false,
      path: '/',
      secure: false,
      expires: 0,
      name: 'sid',
      value: SECRET,
    },
  ],
};

describe('crawl credentials on a stack', () => {
  let aws: LocalAws;
  before(async () => {
    aws = await startLocalAws({
      template: parseTemplate(synthesizeTemplate()),
      stackName: STACK_NAME,
      handlerEnvOverrides: { LOG_LEVEL: 'silent' },
      log: () => {},
    });
  });
  after(async () => aws?.stop());

  it('are kept in an SSM SecureString parameter; no DynamoDB item holds them', async () => {
    const stack = { clients: aws.clients, outputs: aws.outputs };
    assert.equal(aws.outputs[OUTPUTS.credentialsPrefix], credentialsPrefix(STACK_NAME));
    const config = parseCrawlConfig({
      crawlId: 'with-creds',
      seeds: ['http://127.0.0.2:8080/'],
      allowPrivate: true,
    });
    await submitCrawl(stack, config, [], { credentials: BUNDLE });
    const parameter = `${credentialsPrefix(STACK_NAME)}with-creds`;
    const items = await aws.clients.dynamodb.send(
      new ScanCommand({ TableName: aws.outputs[OUTPUTS.frontierTableName] }),
    );
    const text = JSON.stringify(items.Items);
    assert.ok(!text.includes(SECRET), 'a DynamoDB item holds the secret');
    assert.ok(text.includes(parameter), 'the config names the parameter');
    const ssm = aws.clients.ssm;
    assert.ok(ssm);
    const encrypted = await ssm.send(new GetParameterCommand({ Name: parameter }));
    assert.equal(encrypted.Parameter?.Type, 'SecureString');
    assert.ok(!encrypted.Parameter?.Value?.includes(SECRET), 'read back in clear without WithDecryption');
    assert.deepEqual(await new SsmCredentialStore(ssm).read(parameter), BUNDLE);
  });

  it('are refused in one line by a stack deployed before them, before anything is stored', async () => {
    const { [OUTPUTS.credentialsPrefix]: _prefix, ...older } = aws.outputs;
    const config = parseCrawlConfig({
      crawlId: 'older-stack',
      seeds: ['http://127.0.0.2:8080/'],
      allowPrivate: true,
    });
    await assert.rejects(
      submitCrawl({ clients: aws.clients, outputs: older }, config, [], { credentials: BUNDLE }),
      (error: Error) => {
        assert.match(
          error.message,
          /has no CredentialsParameterPrefix output \(deployed before credentials\): deploy it again/,
        );
        return true;
      },
    );
    const items = await aws.clients.dynamodb.send(
      new ScanCommand({ TableName: aws.outputs[OUTPUTS.frontierTableName] }),
    );
    assert.ok(!JSON.stringify(items.Items).includes('older-stack'), 'nothing of the crawl was stored');
  });
});

describe('the local SSM Parameter Store', () => {
  const store = new LocalParameterStore();
  let server: RunningServer;
  let client: SSMClient;
  let dir: string;
  let file: string;
  let now = 1_000_000;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'local-ssm-'));
    file = join(dir, 'parameters.json');
    await store.configure({ region: 'us-east-1', accountId: '000000000000', file });
    server = await startSsmServer(store);
    client = new SSMClient(clientConfig(server.url, clientSettings({ maxAttempts: 1 })));
  });
  after(async () => {
    client?.destroy();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('puts, reads (in clear only WithDecryption), refuses an overwrite not asked for, and deletes', async () => {
    const name = '/Crawler/credentials/a';
    assert.equal(
      (await client.send(new PutParameterCommand({ Name: name, Value: 'v1', Type: 'SecureString' }))).Version,
      1,
    );
    await assert.rejects(
      client.send(new PutParameterCommand({ Name: name, Value: 'v2', Type: 'SecureString' })),
      ParameterAlreadyExists,
    );
    assert.equal(
      (
        await client.send(
          new PutParameterCommand({ Name: name, Value: 'v2', Type: 'SecureString', Overwrite: true }),
        )
      ).Version,
      2,
    );
    const clear = await client.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
    assert.equal(clear.Parameter?.Value, 'v2');
    assert.equal(clear.Parameter?.ARN, 'arn:aws:ssm:us-east-1:000000000000:parameter/Crawler/credentials/a');
    assert.notEqual((await client.send(new GetParameterCommand({ Name: name }))).Parameter?.Value, 'v2');
    assert.equal((await stat(file)).mode & 0o777, 0o600, 'the file is readable by its owner only');
    // Kept across a restart.
    await store.configure({ region: 'us-east-1', accountId: '000000000000', file });
    assert.equal(
      (await client.send(new GetParameterCommand({ Name: name, WithDecryption: true }))).Parameter?.Value,
      'v2',
    );
    await client.send(new DeleteParameterCommand({ Name: name }));
    await assert.rejects(client.send(new GetParameterCommand({ Name: name })), ParameterNotFound);
    await assert.rejects(client.send(new DeleteParameterCommand({ Name: name })), ParameterNotFound);
  });

  it('refuses what SSM refuses, with one error each', async () => {
    const refused = async (input: { Name: string; Value: string }, pattern: RegExp) =>
      assert.rejects(
        client.send(new PutParameterCommand({ ...input, Type: 'SecureString' })),
        (error: Error) => {
          assert.equal(error.name, 'ValidationException');
          assert.match(error.message, pattern);
          return true;
        },
      );
    await refused({ Name: '/a b', Value: 'v' }, /expected a parameter name/);
    await refused({ Name: `/${'x'.repeat(1100)}`, Value: 'v' }, /expected a parameter name/);
    await refused(
      { Name: '/big', Value: 'x'.repeat(CREDENTIAL_LIMITS.bundleBytes + 1) },
      /at most 4096 bytes/,
    );
    await assert.rejects(
      client.send(new GetParametersByPathCommand({ Path: '/Crawler' })),
      (error: Error) => {
        assert.equal(error.name, 'UnknownOperationException');
        return true;
      },
    );
    // Unsigned: refused, as every local emulator refuses a request without SigV4.
    const raw = await fetch(server.url, {
      method: 'POST',
      headers: { 'x-amz-target': 'AmazonSSM.GetParameter', 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({ Name: '/Crawler/credentials/a' }),
    });
    assert.equal(raw.status, 403);
  });

  it('refuses a damaged file, naming it', async () => {
    await writeFile(file, '{not json');
    await assert.rejects(
      store.configure({ region: 'us-east-1', accountId: '000000000000', file }),
      (error: Error) => {
        assert.match(error.message, /parameters\.json: not the local parameter store's JSON; remove it/);
        return true;
      },
    );
    await rm(file);
    await store.configure({ region: 'us-east-1', accountId: '000000000000', file });
  });

  it('the fetch side: a missing or damaged parameter is a permanent failure; a read is kept for a while', async () => {
    const reader = new SsmCredentialStore(client, () => now);
    await assert.rejects(reader.read('/Crawler/credentials/none'), (error: Error) => {
      assert.ok(error instanceof PermanentError);
      assert.equal(error.code, 'credentials-unavailable');
      return true;
    });
    await client.send(
      new PutParameterCommand({ Name: '/Crawler/credentials/junk', Value: 'not json', Type: 'SecureString' }),
    );
    await assert.rejects(reader.read('/Crawler/credentials/junk'), /does not hold a crawl's credentials/);
    const name = '/Crawler/credentials/good';
    await client.send(
      new PutParameterCommand({ Name: name, Value: JSON.stringify(BUNDLE), Type: 'SecureString' }),
    );
    assert.deepEqual(await reader.read(name), BUNDLE);
    await client.send(new DeleteParameterCommand({ Name: name }));
    assert.deepEqual(await reader.read(name), BUNDLE, 'within the cache time no call is made');
    now += CREDENTIAL_LIMITS.cacheSeconds * 1000;
    await assert.rejects(reader.read(name), PermanentError);
    assert.ok((await readFile(file, 'utf8')).includes('junk'));
  });
});
