/**
 * A crawl's credentials (core/crawl/credentials.ts) in SSM Parameter Store: one SecureString parameter per
 * crawl, written by the submitter and read by the fetch function, so the values are never in the
 * crawl's config item, a queue message or a log.
 *
 * The fetch function keeps what it read for CREDENTIAL_LIMITS.cacheSeconds per parameter: one read a
 * container, not one a page.
 */
import { GetParameterCommand, PutParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { CREDENTIAL_LIMITS, PermanentError, RetryableError } from '../core/base/index.ts';
import { type CredentialBundle, CredentialBundleSchema, type CredentialReader } from '../core/crawl/index.ts';

/** Answers SSM gives when retrying cannot help: the parameter is gone or not ours to read. */
const GONE = new Set([
  'ParameterNotFound',
  'ParameterVersionNotFound',
  'AccessDeniedException',
  'InvalidKeyId',
]);

export class SsmCredentialStore implements CredentialReader {
  readonly #client: SSMClient;
  readonly #now: () => number;
  readonly #cache = new Map<string, { bundle: CredentialBundle; until: number }>();

  constructor(client: SSMClient, now: () => number = Date.now) {
    this.#client = client;
    this.#now = now;
  }

  /** Stores `bundle` under `parameter`, replacing an earlier one (a crawl submitted again). */
  async write(parameter: string, bundle: CredentialBundle): Promise<void> {
    await this.#client.send(
      new PutParameterCommand({
        Name: parameter,
        Value: JSON.stringify(bundle),
        Type: 'SecureString',
        Overwrite: true,
        Description: 'serverless-crawler: a crawl credentials (headers, cookies)',
      }),
    );
  }

  async read(parameter: string): Promise<CredentialBundle> {
    const cached = this.#cache.get(parameter);
    if (cached !== undefined && cached.until > this.#now()) return cached.bundle;
    let value: string | undefined;
    try {
      const answer = await this.#client.send(
        new GetParameterCommand({ Name: parameter, WithDecryption: true }),
      );
      value = answer.Parameter?.Value;
    } catch (error) {
      const name = (error as Error).name;
      if (GONE.has(name)) {
        throw new PermanentError(
          'failed',
          'credentials-unavailable',
          `the crawl's credentials ${parameter} cannot be read: ${name}`,
        );
      }
      throw new RetryableError(
        'credentials-unreadable',
        `reading the crawl's credentials ${parameter} failed: ${name}`,
      );
    }
    const bundle = parseBundle(value, parameter);
    this.#cache.set(parameter, { bundle, until: this.#now() + CREDENTIAL_LIMITS.cacheSeconds * 1000 });
    return bundle;
  }
}

function parseBundle(value: string | undefined, parameter: string): CredentialBundle {
  let json: unknown;
  try {
    json = JSON.parse(value ?? '');
  } catch {
    json = undefined;
  }
  const parsed = CredentialBundleSchema.safeParse(json);
  if (!parsed.success) {
    throw new PermanentError(
      'failed',
      'credentials-unavailable',
      `the parameter ${parameter} does not hold a crawl's credentials (expected the JSON the crawler writes)`,
    );
  }
  return parsed.data;
}
