import { Duration } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { LOGS, PAGE_STORE } from './limits.ts';

export interface PageStoreProps {
  /** Keep old versions of overwritten objects (index parts, summaries) for a while. Off: WARC keys are write-once. */
  readonly versioned?: boolean;
}

/** Settings every bucket of the stack shares: private, encrypted, TLS 1.2+ only. */
function secureBucketProps(): s3.BucketProps {
  return {
    encryption: s3.BucketEncryption.S3_MANAGED,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    enforceSSL: true,
    minimumTLSVersion: 1.2,
  };
}

/**
 * The S3 bucket for WARC files, results index parts, the robots cache and crawl summaries.
 * No physical name (CloudFormation generates one, so stacks never collide); server access logs go
 * to a sibling bucket `<id>AccessLogs`. Retained on stack deletion: it holds the users' data.
 */
export class PageStore extends s3.Bucket {
  readonly accessLogs: s3.Bucket;

  constructor(scope: Construct, id: string, props: PageStoreProps = {}) {
    // Sibling, not child, so the page store's own construct id stays exactly `id` in the stack.
    const accessLogs = new s3.Bucket(scope, `${id}AccessLogs`, {
      ...secureBucketProps(),
      lifecycleRules: [{ expiration: Duration.days(LOGS.accessLogExpirationDays) }],
    });
    const versioned = props.versioned ?? false;
    super(scope, id, {
      ...secureBucketProps(),
      versioned,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'page-store/',
      lifecycleRules: [
        {
          abortIncompleteMultipartUploadAfter: Duration.days(PAGE_STORE.abortIncompleteUploadDays),
          ...(versioned
            ? { noncurrentVersionExpiration: Duration.days(PAGE_STORE.noncurrentVersionExpirationDays) }
            : {}),
        },
      ],
    });
    this.accessLogs = accessLogs;
  }
}
