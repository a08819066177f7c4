// The CDK app entry that cdk.json runs: the crawler stack with the cdk-nag AwsSolutions checks.
import { ContextError } from '../cdk/context.ts';
import { createCrawlerApp } from '../cdk/crawler-app.ts';

try {
  createCrawlerApp({ nag: true });
} catch (error) {
  // A bad `-c` value is the user's to fix: one line, not the app's stack. Exit now: the app would
  // synthesize its half-built stack when the process ends.
  if (!(error instanceof ContextError)) throw error;
  console.error(error.message);
  process.exit(1);
}
