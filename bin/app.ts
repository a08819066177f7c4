// The CDK app entry that cdk.json runs: the crawler stack with the cdk-nag AwsSolutions checks.
import { createCrawlerApp } from '../cdk/crawler-app.ts';

createCrawlerApp({ nag: true });
