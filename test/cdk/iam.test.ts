// Least privilege: each function's role may do what its handler needs, on its own resources only.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Template } from 'aws-cdk-lib/assertions';
import { synthesizeStack } from '../../cdk/synth.ts';
import { credentialsPrefix, DEFAULT_EVENT_BUS, IDS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import {
  allows,
  isRecord,
  ofType,
  resourceTargets,
  roleStatements,
  type Statement,
  statementsOf,
} from './template.ts';

let json: Record<string, unknown>;
let fetch: Statement[];
let aggregate: Statement[];

before(() => {
  json = Template.fromStack(synthesizeStack().stack).toJSON();
  fetch = roleStatements(json, IDS.fetchFunction);
  aggregate = roleStatements(json, IDS.aggregateFunction);
});

/** Statements of every identity policy: the roles' policies and the operator's managed policy. */
/** The default bus's ARN as resourceTargets writes the template's Fn::Join of it. */
/** The crawls' credentials (`/<stack>/credentials/<crawl id>`, lambdas/shared/contracts.ts). */
const CREDENTIALS_ARN = `arn:AWS::Partition:ssm:AWS::Region:AWS::AccountId:parameter${credentialsPrefix(STACK_NAME)}*`;
const DEFAULT_BUS_ARN = `arn:AWS::Partition:events:AWS::Region:AWS::AccountId:event-bus/${DEFAULT_EVENT_BUS}`;

const identityStatements = (): Statement[] =>
  [...ofType(json, 'AWS::IAM::Policy'), ...ofType(json, 'AWS::IAM::ManagedPolicy')].flatMap(([, p]) =>
    statementsOf(p.Properties.PolicyDocument),
  );

const logGroupOf = (functionId: string): string => {
  const fn = ofType(json, 'AWS::Lambda::Function').find(([id]) => id === functionId)?.[1];
  const config = fn?.Properties.LoggingConfig;
  const ref = isRecord(config) && isRecord(config.LogGroup) ? config.LogGroup.Ref : undefined;
  assert.equal(typeof ref, 'string');
  return String(ref);
};

describe('identity policies', () => {
  it('contain no Resource "*" (but lambda:GetAccountSettings alone, which takes none) and no "*" or "service:*" actions', () => {
    const all = identityStatements();
    assert.ok(all.length > 0);
    for (const s of all) {
      // The account concurrency check reads the account's settings: the action has no resource-level permissions.
      const accountSettings = s.Actions.length === 1 && s.Actions[0] === 'lambda:GetAccountSettings';
      assert.ok(!s.Resources.includes('*') || accountSettings, `Resource "*" in ${JSON.stringify(s)}`);
      for (const action of s.Actions) {
        assert.notEqual(action, '*');
        assert.doesNotMatch(action, /^[a-z0-9-]+:\*$/, `service-wide action ${action}`);
      }
    }
  });

  it('name every action: no action wildcards', () => {
    const all = identityStatements();
    assert.ok(all.length > 0);
    for (const s of all)
      for (const action of s.Actions) assert.ok(!/[*?]/.test(action), `wildcard action ${action}`);
  });

  it('are the only permissions of the roles (no managed policies such as AWSLambdaBasicExecutionRole)', () => {
    for (const [id, role] of ofType(json, 'AWS::IAM::Role')) {
      assert.equal(role.Properties.ManagedPolicyArns, undefined, `${id} has managed policies`);
    }
  });

  it('only Allow, and only on resources of this stack (and the event bus its events go to)', () => {
    const ids = new Set(Object.keys(json.Resources as object));
    for (const s of [...fetch, ...aggregate]) {
      assert.equal(s.Effect, 'Allow');
      for (const target of resourceTargets(s)) {
        if (target === DEFAULT_BUS_ARN || target === CREDENTIALS_ARN) continue;
        assert.ok(ids.has(target.replace(/\/\*$/, '')), `${target} is not a resource of this stack`);
      }
    }
  });
});

describe('crawl credentials', () => {
  it("the fetch function may read the stack's credential parameters only, and nothing else of SSM", () => {
    assert.ok(allows(fetch, 'ssm:GetParameter', CREDENTIALS_ARN));
    const actions = fetch.flatMap((s) => s.Actions).filter((a) => a.startsWith('ssm:'));
    assert.deepEqual(actions, ['ssm:GetParameter']);
    assert.deepEqual(
      aggregate.flatMap((s) => s.Actions).filter((a) => a.startsWith('ssm:')),
      [],
      'the aggregate function reads no credentials',
    );
  });
});

describe('crawl events', () => {
  it("both functions may put events on the stack's bus only, and nothing else of EventBridge", () => {
    for (const statements of [fetch, aggregate]) {
      assert.ok(allows(statements, 'events:PutEvents', DEFAULT_BUS_ARN));
      const actions = statements.flatMap((s) => s.Actions).filter((a) => a.startsWith('events:'));
      assert.deepEqual([...new Set(actions)], ['events:PutEvents']);
    }
  });
});

describe('FetchFunction role', () => {
  it('consumes TaskQueue, including ChangeMessageVisibility for its backoff', () => {
    for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']) {
      assert.ok(allows(fetch, action, IDS.taskQueue), action);
    }
  });

  it('sends to TaskQueue (new links, deferred tasks) and ResultsQueue', () => {
    assert.ok(allows(fetch, 'sqs:SendMessage', IDS.taskQueue));
    assert.ok(allows(fetch, 'sqs:SendMessage', IDS.resultsQueue));
  });

  it('does not consume ResultsQueue and cannot touch ResultsDLQ', () => {
    assert.ok(!allows(fetch, 'sqs:ReceiveMessage', IDS.resultsQueue));
    assert.ok(!fetch.some((s) => resourceTargets(s).includes(IDS.resultsDlq)));
  });

  it('may only send to TaskDLQ (a malformed task is parked at once), never read, delete or purge it', () => {
    assert.ok(allows(fetch, 'sqs:SendMessage', IDS.taskDlq));
    const actions = fetch.filter((s) => resourceTargets(s).includes(IDS.taskDlq)).flatMap((s) => s.Actions);
    assert.deepEqual([...new Set(actions)].sort(), ['sqs:SendMessage']);
  });

  it('reads and puts page store objects, lists the bucket, but cannot delete', () => {
    assert.ok(allows(fetch, 's3:GetObject', `${IDS.pageStore}/*`));
    assert.ok(allows(fetch, 's3:PutObject', `${IDS.pageStore}/*`));
    assert.ok(allows(fetch, 's3:ListBucket', IDS.pageStore));
    assert.ok(!allows(fetch, 's3:DeleteObject', `${IDS.pageStore}/*`));
  });

  it('reads and writes the frontier table', () => {
    for (const action of ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query']) {
      assert.ok(allows(fetch, action, IDS.frontierTable), action);
    }
  });

  it('writes logs to its own log group only', () => {
    const group = logGroupOf(IDS.fetchFunction);
    assert.ok(allows(fetch, 'logs:PutLogEvents', group));
    assert.ok(!allows(fetch, 'logs:PutLogEvents', logGroupOf(IDS.aggregateFunction)));
  });
});

describe('AggregateFunction role', () => {
  it('consumes ResultsQueue', () => {
    for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']) {
      assert.ok(allows(aggregate, action, IDS.resultsQueue), action);
    }
  });

  it('sends only to ResultsQueue (results it had no time to start; SQS parks a malformed result in ResultsDLQ after maxReceiveCount) and TaskQueue (a visit of a host awaiting the results it wrote), and touches no DLQ', () => {
    const sends = aggregate.filter((s) => s.Actions.includes('sqs:SendMessage'));
    assert.deepEqual(
      sends.flatMap((s) => resourceTargets(s)).sort(),
      [IDS.resultsQueue, IDS.taskQueue].sort(),
    );
    const onTaskQueue = aggregate.filter((s) => resourceTargets(s).includes(IDS.taskQueue));
    assert.deepEqual(
      onTaskQueue.flatMap((s) => s.Actions),
      ['sqs:SendMessage'],
      'it never receives or deletes tasks',
    );
    for (const queue of [IDS.taskDlq, IDS.resultsDlq]) {
      assert.ok(!aggregate.some((s) => resourceTargets(s).includes(queue)), queue);
    }
  });

  it('reads and puts page store objects (index parts, summaries) and reads/writes the frontier table', () => {
    assert.ok(allows(aggregate, 's3:GetObject', `${IDS.pageStore}/*`));
    assert.ok(allows(aggregate, 's3:PutObject', `${IDS.pageStore}/*`));
    assert.ok(allows(aggregate, 'dynamodb:UpdateItem', IDS.frontierTable));
    assert.ok(allows(aggregate, 'dynamodb:GetItem', IDS.frontierTable));
    assert.ok(allows(aggregate, 'dynamodb:Query', IDS.frontierTable));
    assert.ok(
      !allows(aggregate, 'dynamodb:BatchGetItem', IDS.frontierTable),
      'nothing it does reads in batches',
    );
  });
});

describe('resource policies', () => {
  it('never Allow an anonymous principal: statements with Principal "*" are TLS Denies', () => {
    const docs = [
      ...ofType(json, 'AWS::SQS::QueuePolicy').map(([, p]) => p.Properties.PolicyDocument),
      ...ofType(json, 'AWS::S3::BucketPolicy').map(([, p]) => p.Properties.PolicyDocument),
      ...ofType(json, 'AWS::SNS::TopicPolicy').map(([, p]) => p.Properties.PolicyDocument),
    ];
    assert.ok(docs.length >= 5);
    for (const s of docs.flatMap(statementsOf)) {
      const anonymous = s.Principal === '*' || (isRecord(s.Principal) && s.Principal.AWS === '*');
      if (anonymous) assert.equal(s.Effect, 'Deny', JSON.stringify(s));
    }
  });
});
