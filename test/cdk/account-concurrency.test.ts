/**
 * The deploy fails, with one line saying what to do, when the account's unreserved Lambda concurrency
 * is below what the stack's event sources may run at once (cdk/account-concurrency.ts): the template
 * wires the check, and its handler, run as Lambda runs it, answers CloudFormation.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Template } from 'aws-cdk-lib/assertions';
import { ACCOUNT_CHECK_ID, ACCOUNT_CHECK_SOURCE, ACCOUNT_CHECK_TYPE } from '../../cdk/account-concurrency.ts';
import { createCrawlerApp } from '../../cdk/crawler-app.ts';
import {
  AGGREGATE_EVENT_SOURCE,
  CONTEXT_KEYS,
  FETCH_EVENT_SOURCE,
  RENDER_EVENT_SOURCE,
} from '../../cdk/limits.ts';
import { synthesizeStack } from '../../cdk/synth.ts';
import { getAttTarget, isRecord, ofType, resourcesOf, roleStatements, statementsOf } from './template.ts';

let json: Record<string, unknown>;
before(() => {
  json = Template.fromStack(synthesizeStack().stack).toJSON();
});

function checkOf(template: Record<string, unknown>) {
  const found = ofType(template, ACCOUNT_CHECK_TYPE);
  assert.equal(found.length, 1, 'one account concurrency check');
  return found[0]!;
}

describe('the account concurrency check in the template', () => {
  it('asks for the sum of the event sources’ maximum concurrency, from the deployed settings', () => {
    const [, check] = checkOf(json);
    assert.deepEqual(check.Properties.Needs, {
      fetch: FETCH_EVENT_SOURCE.maxConcurrency,
      aggregate: AGGREGATE_EVENT_SOURCE.maxConcurrency,
      render: RENDER_EVENT_SOURCE.maxConcurrency,
    });
    const { stack } = createCrawlerApp({
      skipBundling: true,
      cfnValidation: false,
      context: { [CONTEXT_KEYS.fetchConcurrency]: '12' },
    });
    const [, other] = checkOf(Template.fromStack(stack).toJSON());
    assert.deepEqual(other.Properties.Needs, { fetch: 12, aggregate: AGGREGATE_EVENT_SOURCE.maxConcurrency });
  });

  it('is served by an inline nodejs24.x function running the checked source', () => {
    const [, check] = checkOf(json);
    const fnId = getAttTarget(check.Properties.ServiceToken) ?? '';
    assert.ok(fnId.startsWith(ACCOUNT_CHECK_ID));
    const fn = resourcesOf(json)[fnId];
    assert.ok(fn && fn.Type === 'AWS::Lambda::Function');
    assert.equal(fn.Properties.Runtime, 'nodejs24.x');
    assert.equal(fn.Properties.Handler, 'index.handler');
    assert.ok(isRecord(fn.Properties.Code));
    assert.equal(fn.Properties.Code.ZipFile, ACCOUNT_CHECK_SOURCE);
    assert.ok(ACCOUNT_CHECK_SOURCE.length < 4096, 'CloudFormation takes inline code up to 4 KB');
  });

  it('comes first: every other resource of the stack waits for it, so a failed check creates nothing to retain', () => {
    const [checkId] = checkOf(json);
    const raw = json.Resources as Record<string, { DependsOn?: string | string[]; Type: string }>;
    const mustWait = Object.entries(raw).filter(([id]) => !id.startsWith(ACCOUNT_CHECK_ID));
    assert.ok(mustWait.some(([, r]) => r.Type === 'AWS::DynamoDB::Table'));
    assert.ok(mustWait.some(([, r]) => r.Type === 'AWS::S3::Bucket'));
    for (const [id, resource] of mustWait) {
      assert.ok(
        [resource.DependsOn ?? []].flat().includes(checkId),
        `${id} (${resource.Type}) waits for the check`,
      );
    }
  });

  it('its role may read the account settings and write its own log group, nothing else', () => {
    const [, check] = checkOf(json);
    const fnId = getAttTarget(check.Properties.ServiceToken)!;
    const statements = roleStatements(json, fnId);
    const actions = statements.flatMap((s) => s.Actions).sort();
    assert.deepEqual(actions, ['lambda:GetAccountSettings', 'logs:CreateLogStream', 'logs:PutLogEvents']);
    const settings = statements.find((s) => s.Actions.includes('lambda:GetAccountSettings'));
    assert.deepEqual(settings?.Actions, ['lambda:GetAccountSettings']);
    // The only statement of the stack on "*": GetAccountSettings has no resource-level permissions.
    const onAny = [...ofType(json, 'AWS::IAM::Policy'), ...ofType(json, 'AWS::IAM::ManagedPolicy')]
      .flatMap(([, p]) => statementsOf(p.Properties.PolicyDocument))
      .filter((s) => s.Resources.includes('*'));
    assert.deepEqual(onAny, [settings]);
  });
});

interface CfnResponse {
  Status: string;
  Reason: string;
  PhysicalResourceId: string;
  StackId: string;
  RequestId: string;
  LogicalResourceId: string;
}

describe('the account concurrency check as Lambda runs it', () => {
  let server: Server;
  let responseUrl: string;
  const responses: CfnResponse[] = [];
  const requests: Array<{ method: string | undefined; contentType: string | undefined }> = [];
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        requests.push({ method: req.method, contentType: req.headers['content-type'] });
        responses.push(JSON.parse(body));
        res.end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    responseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cfn-response?signed`;
  });
  after(() => server.close());

  /** The handler module with `@aws-sdk/client-lambda` answering GetAccountSettings with `answer`. */
  function handlerWith(answer: () => unknown): { handler: (event: unknown) => Promise<void>; calls: number } {
    const state = { calls: 0 };
    class GetAccountSettingsCommand {}
    class LambdaClient {
      async send(command: unknown) {
        assert.ok(command instanceof GetAccountSettingsCommand);
        state.calls++;
        return answer();
      }
    }
    const module = { exports: {} as { handler: (event: unknown) => Promise<void> } };
    const require = (name: string) => {
      assert.equal(name, '@aws-sdk/client-lambda');
      return { LambdaClient, GetAccountSettingsCommand };
    };
    new Function('require', 'module', 'exports', ACCOUNT_CHECK_SOURCE)(require, module, module.exports);
    return {
      handler: module.exports.handler,
      get calls() {
        return state.calls;
      },
    };
  }

  /** CloudFormation sends property values as strings. */
  const event = (requestType: string, fetch = '10') => ({
    RequestType: requestType,
    ResponseURL: responseUrl,
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/ServerlessCrawler/x',
    RequestId: `req-${requestType}-${fetch}`,
    LogicalResourceId: 'AccountConcurrencyCheckResource',
    ResourceProperties: { ServiceToken: 'arn', Needs: { fetch, aggregate: '2' } },
  });

  async function run(answer: () => unknown, e: ReturnType<typeof event>) {
    const before = responses.length;
    const check = handlerWith(answer);
    process.env.AWS_REGION = 'eu-west-1';
    await check.handler(e);
    assert.equal(responses.length, before + 1, 'one response to CloudFormation');
    // A PUT to the pre-signed S3 URL, which is signed without a content type (fetch's default
    // text/plain would not match it).
    assert.deepEqual(requests.at(-1), { method: 'PUT', contentType: '' });
    return { response: responses.at(-1)!, calls: check.calls };
  }

  const account = (unreserved: number) => () => ({
    AccountLimit: { ConcurrentExecutions: unreserved, UnreservedConcurrentExecutions: unreserved },
  });

  it('fails a new account of 10 for fetch 10 + aggregate 2, saying what to request or deploy', async () => {
    const { response } = await run(account(10), event('Create'));
    assert.equal(response.Status, 'FAILED');
    assert.doesNotMatch(response.Reason, /\n/);
    assert.match(
      response.Reason,
      /unreserved Lambda concurrency of this account in eu-west-1 is 10, below the 12 /,
    );
    assert.match(response.Reason, /\(fetch 10 \+ aggregate 2\)/);
    assert.match(
      response.Reason,
      /request 12 or more for Lambda "Concurrent executions" \(quota code L-B99A9384\)/,
    );
    assert.match(response.Reason, /or deploy with -c fetchConcurrency=8 /);
    assert.equal(response.RequestId, 'req-Create-10');
    assert.equal(response.LogicalResourceId, 'AccountConcurrencyCheckResource');
  });

  it('passes when the sum fits, on create and on update', async () => {
    for (const type of ['Create', 'Update']) {
      const { response, calls } = await run(account(12), event(type));
      assert.equal(response.Status, 'SUCCESS', response.Reason);
      assert.equal(calls, 1);
      assert.equal(
        response.PhysicalResourceId,
        'account-concurrency',
        'the same resource: an update never replaces it',
      );
    }
  });

  it('suggests no fetch concurrency below Lambda’s minimum of 2', async () => {
    const { response } = await run(account(3), event('Create'));
    assert.equal(response.Status, 'FAILED');
    assert.doesNotMatch(response.Reason, /fetchConcurrency/);
  });

  it('lets a delete through without asking', async () => {
    const { response, calls } = await run(account(1), event('Delete'));
    assert.equal(response.Status, 'SUCCESS');
    assert.equal(calls, 0);
  });

  it('fails, with the reason, when the settings cannot be read (it still answers)', async () => {
    const { response } = await run(() => {
      throw new Error('User is not authorized to perform: lambda:GetAccountSettings');
    }, event('Create'));
    assert.equal(response.Status, 'FAILED');
    assert.match(
      response.Reason,
      /^Could not read the account's Lambda concurrency \(lambda:GetAccountSettings\): User is not/,
    );
  });
});
