/**
 * In-process synthesis for the local runtime and tests: builds the same app as `bin/app.ts` with
 * esbuild bundling and CDK's built-in template validation skipped (those run in `cdk synth` and in
 * test/cdk), so it takes well under a second after import.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { type CrawlerApp, createCrawlerApp } from './crawler-app.ts';

/** The app and stack, bundling and validation skipped; for `Template.fromStack` and construct-level checks. */
export function synthesizeStack(): CrawlerApp {
  return createCrawlerApp({ skipBundling: true, cfnValidation: false });
}

/** The stack's CloudFormation template as JSON, bundling skipped. */
export function synthesizeTemplate(): Record<string, unknown> {
  return Template.fromStack(synthesizeStack().stack).toJSON();
}
