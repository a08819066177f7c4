// `--stack NAME`: the stack's names come from CloudFormation DescribeStacks (cli/stack-outputs.ts,
// the real @aws-sdk/client-cloudformation over HTTP). The CloudFormation here is a small stand-in on
// 127.0.0.1 that answers DescribeStacks in AWS's query protocol and passes every other request on to
// a local AWS - one endpoint for all services, as LocalStack after `cdklocal deploy` is. So
// `crawler submit --stack S --endpoint URL` takes the deployed path end to end.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { cancelCommand } from '../../cli/cancel-command.ts';
import type { CliIo } from '../../cli/cli-io.ts';
import { describeStackOutputs, stackOutputsReader } from '../../cli/stack-outputs.ts';
import { statusCommand } from '../../cli/status-command.ts';
import { submitCommand } from '../../cli/submit-command.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { describeStacksAnswer } from '../../local/cloudformation-describe.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';
import { Capture } from '../fixtures/capture.ts';
import { html, startSite, type TestSite } from '../fixtures/site.ts';

const DEPLOYED = 'MyCrawler';
const ROLLED_BACK = 'Broken';

let aws: LocalAws;
let site: TestSite;
let cfn: Server;
let endpoint: string;
const describeCalls: string[] = [];
/** The region each DescribeStacks was signed for (its credential scope). */
const signedRegions: string[] = [];

function cloudFormation(req: IncomingMessage, res: ServerResponse, body: Buffer): boolean {
  const form = new URLSearchParams(body.toString('utf8'));
  if (form.get('Action') !== 'DescribeStacks') return false;
  const name = form.get('StackName') ?? '';
  describeCalls.push(
    `${name} ${String(req.headers.authorization ?? '').includes('Credential=') ? 'signed' : 'unsigned'}`,
  );
  const scope = /Credential=[^/]+\/\d{8}\/([^/]+)\//.exec(String(req.headers.authorization ?? ''));
  if (scope?.[1]) signedRegions.push(scope[1]);
  const stack = (stackName: string, status: string, outputs: Record<string, string>) => ({
    stackName,
    stackId: `arn:aws:cloudformation:us-east-1:000000000000:stack/${stackName}/1`,
    createdAt: new Date('2026-01-01T00:00:00.000Z'),
    status,
    outputs,
  });
  const answer = describeStacksAnswer(form, [
    stack(DEPLOYED, 'UPDATE_COMPLETE', aws.outputs),
    stack(ROLLED_BACK, 'ROLLBACK_COMPLETE', {}),
  ]);
  res.writeHead(answer.status, { 'content-type': 'text/xml' });
  res.end(answer.body);
  return true;
}

before(async () => {
  site = await startSite({ '/': html('<a href="/x">x</a>'), '/x': html('x') });
  // Random instance names: nothing about them can be computed, only read from "CloudFormation".
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    port: 0,
    handlerEnvOverrides: { LOG_LEVEL: 'silent' },
    log: () => {},
  });
  await aws.start();
  const upstream = new URL(aws.endpoints.s3);
  cfn = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (cloudFormation(req, res, body)) return;
      const headers = { ...req.headers, 'content-length': String(body.byteLength) };
      delete headers['transfer-encoding'];
      delete headers.expect;
      const out = request(
        { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', (error) => {
        res.statusCode = 502;
        res.end(error.message);
      });
      out.end(body);
    });
  });
  await new Promise<void>((resolve) => cfn.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(cfn.address() as AddressInfo).port}`;
});

after(async () => {
  cfn?.closeAllConnections();
  await new Promise<void>((resolve) => (cfn ? cfn.close(() => resolve()) : resolve()));
  await aws?.stop();
  await site?.close();
});

async function run(command: (args: string[], io?: Partial<CliIo>) => Promise<number>, ...args: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await command(args, { stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('--stack: outputs from CloudFormation', () => {
  it('describeStackOutputs returns the outputs by key, with a signed DescribeStacks', async () => {
    const outputs = await describeStackOutputs(DEPLOYED, { endpoint });
    assert.deepEqual(outputs, aws.outputs);
    assert.ok(describeCalls.includes(`${DEPLOYED} signed`));
  });

  it('a missing or rolled-back stack is an error that says what to do', async () => {
    await assert.rejects(
      stackOutputsReader(endpoint)('Nope'),
      /stack Nope at http:\/\/127\.0\.0\.1:\d+ does not exist; deploy it \(npx cdk deploy Nope\)/,
    );
    await assert.rejects(
      describeStackOutputs(ROLLED_BACK, { endpoint }),
      /stack Broken at .* is ROLLBACK_COMPLETE: its resources cannot be used/,
    );
  });

  it('submit --stack finds queues, table and bucket by name and the crawl runs; status and cancel too', async () => {
    const submitted = await run(
      submitCommand,
      `${site.origin}/`,
      '--allow-private',
      '--delay',
      '0',
      '--stack',
      DEPLOYED,
      '--endpoint',
      endpoint,
    );
    assert.equal(submitted.code, 0, submitted.stderr);
    const crawlId = submitted.stdout.trim();
    assert.match(submitted.stderr, new RegExp(`submitted to stack ${DEPLOYED} at ${endpoint}`));
    assert.match(submitted.stderr, new RegExp(`crawler status ${crawlId} --stack ${DEPLOYED} --endpoint`));
    await aws.waitForIdle({ timeoutMs: 60_000 });

    // The read commands take CloudFormation as CliIo.describeStackOutputs.
    const stdout = new Capture();
    const code = await statusCommand(['--json', crawlId, '--stack', DEPLOYED, '--endpoint', endpoint], {
      stdout,
      stderr: new Capture(),
      describeStackOutputs: stackOutputsReader(endpoint),
    });
    assert.equal(code, 0);
    const parsed = JSON.parse(stdout.text) as { state: string; byOutcome: Record<string, number> };
    assert.equal(parsed.state, 'complete');
    assert.equal(parsed.byOutcome.fetched, 2);
    const cancel = await run(cancelCommand, crawlId, '--stack', DEPLOYED, '--endpoint', endpoint);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.match(cancel.stdout, /already complete/);
  });

  it('against AWS, AWS_DEFAULT_REGION is honoured as the AWS CLI and the CDK do, and a missing stack names the region searched', async () => {
    const saved = { ...process.env };
    try {
      for (const name of ['AWS_REGION', 'AWS_PROFILE', 'AWS_CONFIG_FILE', 'AWS_SHARED_CREDENTIALS_FILE'])
        delete process.env[name];
      Object.assign(process.env, {
        AWS_DEFAULT_REGION: 'eu-west-3',
        AWS_ENDPOINT_URL_CLOUDFORMATION: endpoint,
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        // No profile region to fall back on: only AWS_DEFAULT_REGION can give one.
        AWS_CONFIG_FILE: '/nonexistent/aws-config',
        AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
      });
      signedRegions.length = 0;
      await assert.rejects(describeStackOutputs('Nope'), (error: unknown) => {
        assert.match(
          String((error as Error).message),
          /^stack Nope does not exist in region eu-west-3; deploy it/,
        );
        return true;
      });
      assert.deepEqual(signedRegions, ['eu-west-3'], 'the request was signed for (and sent to) eu-west-3');
      // AWS_REGION wins over it, as everywhere.
      process.env.AWS_REGION = 'ap-south-2';
      await assert.rejects(describeStackOutputs('Nope'), /does not exist in region ap-south-2;/);
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  });

  it('an unknown --stack is one line on stderr and exit 1', async () => {
    const submitted = await run(submitCommand, `${site.origin}/`, '--stack', 'Nope', '--endpoint', endpoint);
    assert.equal(submitted.code, 1);
    assert.equal(submitted.stdout, '');
    assert.match(submitted.stderr, /^cannot open stack Nope: stack Nope at .* does not exist/);
    assert.equal(submitted.stderr.trim().split('\n').length, 1);
  });
});
