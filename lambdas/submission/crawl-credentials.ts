/**
 * A crawl's credentials, kept where its fetch function reads them: the SSM SecureString parameter
 * `<CredentialsParameterPrefix><crawlId>` (core/crawl/credentials.ts). The config names the parameter only.
 */
import type { SSMClient } from '@aws-sdk/client-ssm';
import { SsmCredentialStore } from '../adapters/credential-store.ts';
import { type CredentialBundle, checkBundleSize } from '../core/crawl/index.ts';
import { OUTPUTS } from '../shared/contracts.ts';

/** Writes `bundle` (replacing the crawl's earlier one) and returns the parameter's name. */
export async function storeCredentials(
  stack: { clients: { ssm?: SSMClient }; outputs: Record<string, string> },
  crawlId: string,
  bundle: CredentialBundle,
): Promise<string> {
  checkBundleSize(bundle);
  const prefix = stack.outputs[OUTPUTS.credentialsPrefix];
  if (prefix === undefined || stack.clients.ssm === undefined) {
    throw new Error(
      `the stack has no ${OUTPUTS.credentialsPrefix} output (deployed before credentials): deploy it again to crawl with --header, --cookie or --basic-auth`,
    );
  }
  const parameter = `${prefix}${crawlId}`;
  await new SsmCredentialStore(stack.clients.ssm).write(parameter, bundle);
  return parameter;
}
