import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { STACK_NAME } from '../lambdas/shared/contracts.ts';
import { CrawlerStack } from './crawler-stack.ts';
import { applyNag } from './nag.ts';
import { fromRoot } from './paths.ts';

export interface CrawlerAppOptions {
  /** Skip esbuild bundling (assets point at the sources): fast, for tests and the local runtime. */
  readonly skipBundling?: boolean;
  /** Run the cdk-nag AwsSolutions checks at synth (fails synth on unacknowledged findings). */
  readonly nag?: boolean;
  /** CDK's built-in CloudFormation template validation (~2 s); on unless a fast synth is wanted. */
  readonly cfnValidation?: boolean;
  /** Cloud assembly directory; CDK picks a temp dir (or the CLI's) by default. */
  readonly outdir?: string;
  /**
   * Context over cdk.json's, as `-c key=value` gives it to `cdk synth` (e.g. `fetchConcurrency`,
   * `alarmEmail`; see context.ts). The CLI's own `-c` values still win.
   */
  readonly context?: Record<string, unknown>;
}

export interface CrawlerApp {
  readonly app: App;
  readonly stack: CrawlerStack;
}

/**
 * The context in cdk.json (feature flags). The CLI passes it to `bin/app.ts` anyway; reading it here
 * too makes an in-process synth produce the same template as `cdk synth`.
 */
export function cdkJsonContext(): Record<string, unknown> {
  const parsed: unknown = JSON.parse(readFileSync(fromRoot('cdk.json'), 'utf8'));
  if (typeof parsed !== 'object' || parsed === null || !('context' in parsed)) return {};
  const { context } = parsed;
  return typeof context === 'object' && context !== null ? { ...context } : {};
}

/** Builds the CDK app with the crawler stack: the one composition `bin/app.ts`, tests and the local runtime share. */
export function createCrawlerApp(options: CrawlerAppOptions = {}): CrawlerApp {
  const context: Record<string, unknown> = { ...cdkJsonContext(), ...options.context };
  if (options.skipBundling) context['aws:cdk:bundling-stacks'] = [];
  const app = new App({
    context,
    builtinCloudFormationValidation: options.cfnValidation ?? true,
    ...(options.outdir ? { outdir: options.outdir } : {}),
  });
  const stack = new CrawlerStack(app, STACK_NAME);
  if (options.nag) applyNag(app, stack);
  return { app, stack };
}
