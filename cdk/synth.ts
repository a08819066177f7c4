/**
 * In-process synthesis for the local runtime and tests: builds the same app as `bin/app.ts` with
 * esbuild bundling and CDK's built-in template validation skipped (those run in `cdk synth` and in
 * test/cdk), so it takes well under a second after import. The local stack has the render function
 * (`-c render=true`): `--render` works out of the box on this machine.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { type CrawlerApp, createCrawlerApp } from './crawler-app.ts';
import { CONTEXT_KEYS } from './limits.ts';

/** The app and stack, bundling and validation skipped; for `Template.fromStack` and construct-level checks. */
export function synthesizeStack(): CrawlerApp {
  return createCrawlerApp({
    skipBundling: true,
    cfnValidation: false,
    context: { [CONTEXT_KEYS.render]: true },
  });
}

/** The stack's CloudFormation template as JSON, bundling skipped. */
export function synthesizeTemplate(): Record<string, unknown> {
  return Template.fromStack(synthesizeStack().stack).toJSON();
}
