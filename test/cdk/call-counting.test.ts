/**
 * `-c callCounting=...` (docs/deploy.md, "Cost"): every function of the stack gets it as
 * CRAWLER_CALL_COUNTING, none does without it (the functions' own default, `estimated`), and a value
 * the functions would refuse fails the synth in one line naming the key and the choices.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Template } from 'aws-cdk-lib/assertions';
import { createCrawlerApp } from '../../cdk/crawler-app.ts';
import { CONTEXT_KEYS } from '../../cdk/limits.ts';
import { CALL_COUNTING, FUNCTION_ENV, IDS } from '../../lambdas/shared/contracts.ts';
import { FetchEnvSchema, loadEnv } from '../../lambdas/shared/env.ts';
import { resource } from './template.ts';

const FUNCTIONS = [IDS.fetchFunction, IDS.aggregateFunction, IDS.renderFunction];

function countingOf(context: Record<string, unknown>): Record<string, unknown> {
  const { stack } = createCrawlerApp({
    skipBundling: true,
    cfnValidation: false,
    context: { [CONTEXT_KEYS.render]: true, ...context },
  });
  const template = Template.fromStack(stack).toJSON();
  return Object.fromEntries(
    FUNCTIONS.map((id) => {
      const properties = resource(template, id, 'AWS::Lambda::Function').Properties;
      const variables = (properties.Environment as { Variables?: Record<string, unknown> }).Variables ?? {};
      return [id, variables[FUNCTION_ENV.callCounting]];
    }),
  );
}

describe('callCounting context', () => {
  it('without it, no function is given CRAWLER_CALL_COUNTING: each counts as its default, estimated', () => {
    assert.deepEqual(countingOf({}), Object.fromEntries(FUNCTIONS.map((id) => [id, undefined])));
    const env = loadEnv(FetchEnvSchema, fetchEnv(), 'test');
    assert.equal(env[FUNCTION_ENV.callCounting], 'estimated');
  });

  for (const mode of CALL_COUNTING) {
    it(`${mode} reaches every function, the render function included, and the function accepts it`, () => {
      assert.deepEqual(
        countingOf({ [CONTEXT_KEYS.callCounting]: mode }),
        Object.fromEntries(FUNCTIONS.map((id) => [id, mode])),
      );
      const env = loadEnv(FetchEnvSchema, { ...fetchEnv(), [FUNCTION_ENV.callCounting]: mode }, 'test');
      assert.equal(env[FUNCTION_ENV.callCounting], mode);
    });
  }

  for (const bad of ['Reported', 'on', '', true, 1]) {
    it(`${JSON.stringify(bad)} fails the synth in one line naming the key and the choices`, () => {
      assert.throws(
        () => countingOf({ [CONTEXT_KEYS.callCounting]: bad }),
        (error: Error) => {
          assert.match(
            error.message,
            /^context callCounting: expected estimated, reported, off, got .*\. Example: npx cdk deploy -c callCounting=reported$/,
          );
          return true;
        },
      );
    });
  }
});

/** The least a fetch function's environment holds. */
function fetchEnv(): Record<string, string> {
  return {
    [FUNCTION_ENV.taskQueueUrl]: 'https://sqs.us-east-1.amazonaws.com/123456789012/tasks',
    [FUNCTION_ENV.taskDlqUrl]: 'https://sqs.us-east-1.amazonaws.com/123456789012/tasks-dlq',
    [FUNCTION_ENV.resultsQueueUrl]: 'https://sqs.us-east-1.amazonaws.com/123456789012/results',
    [FUNCTION_ENV.pageBucket]: 'pages',
    [FUNCTION_ENV.frontierTable]: 'frontier',
  };
}
