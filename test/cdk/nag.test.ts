// cdk-nag AwsSolutions: no unacknowledged finding, and every acknowledgment narrow and reasoned.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { createCrawlerApp } from '../../cdk/crawler-app.ts';
import { isRecord } from './template.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function outdir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'crawler-nag-'));
  dirs.push(dir);
  return dir;
}

/** `plugin: rule` of every violation in the cloud assembly's validation report. */
function violations(dir: string): string[] {
  const report: unknown = JSON.parse(readFileSync(join(dir, 'validation-report.json'), 'utf8'));
  assert.ok(isRecord(report) && Array.isArray(report.pluginReports), 'a validation report');
  return report.pluginReports.flatMap((plugin: unknown) => {
    assert.ok(isRecord(plugin));
    const list = Array.isArray(plugin.violations) ? plugin.violations : [];
    return list.map(
      (v: unknown) => `${String(plugin.pluginName)}: ${isRecord(v) ? String(v.ruleName) : '?'}`,
    );
  });
}

/** [construct path, acknowledged id, reason] for every acknowledgment in the app. */
function acknowledgments(root: ReturnType<typeof createCrawlerApp>['app']): Array<[string, string, unknown]> {
  const out: Array<[string, string, unknown]> = [];
  for (const construct of root.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY || !isRecord(entry.data)) continue;
      for (const [id, reason] of Object.entries(entry.data)) out.push([construct.node.path, id, reason]);
    }
  }
  return out;
}

describe('cdk-nag AwsSolutions', () => {
  it('synthesizes with zero unacknowledged findings (and passes CDK template validation)', () => {
    const dir = outdir();
    const { app } = createCrawlerApp({ skipBundling: true, nag: true, outdir: dir });
    app.synth(); // throws ValidationFailed on any unacknowledged error
    assert.deepEqual(violations(dir), []);
  });

  it('acknowledges findings one by one, on the identity policies only (functions, operator), each with a real reason', () => {
    const { app } = createCrawlerApp({ skipBundling: true, nag: true, outdir: outdir() });
    const acks = acknowledgments(app);
    assert.ok(acks.length > 0);
    for (const [path, id, reason] of acks) {
      assert.match(
        path,
        /^ServerlessCrawler\/((Fetch|Aggregate)FunctionServiceRole\/DefaultPolicy|OperatorPolicy|AccountConcurrencyCheck\/ServiceRole\/DefaultPolicy)$/,
        path,
      );
      // The account check's one wildcard: GetAccountSettings takes no resource (its statement is
      // asserted alone in account-concurrency.test.ts).
      if (path.startsWith('ServerlessCrawler/AccountConcurrencyCheck/'))
        assert.match(id, /^(Annotation::)?AwsSolutions-IAM5\[Resource::\*\]$/);
      assert.match(id, /\[Resource::/, `${id}: only resource wildcards are acknowledged, never actions`);
      assert.match(
        id,
        /AwsSolutions-IAM5\[(Action|Resource)::.+\]$/,
        `${id}: a single finding, not a whole rule`,
      );
      assert.equal(typeof reason, 'string');
      assert.ok(String(reason).trim().length >= 30, `${path} ${id}: reason too short: ${String(reason)}`);
    }
  });

  it('still fails synthesis on a new wildcard permission', () => {
    const dir = outdir();
    const { app, stack } = createCrawlerApp({
      skipBundling: true,
      nag: true,
      cfnValidation: false,
      outdir: dir,
    });
    stack.fetchFunction.addToRolePolicy(new iam.PolicyStatement({ actions: ['sqs:*'], resources: ['*'] }));
    assert.throws(() => app.synth(), /ValidationFailed/);
    assert.deepEqual(violations(dir).sort(), [
      'AwsSolutions: AwsSolutions-IAM5[Action::sqs:*]',
      'AwsSolutions: AwsSolutions-IAM5[Resource::*]',
    ]);
  });
});
