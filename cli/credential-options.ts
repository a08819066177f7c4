/**
 * `--header`, `--cookie`, `--cookie-file`, `--basic-auth` and `--credentials-hosts`: the crawl's
 * credentials (lambdas/core/credentials.ts), each scoped to the hosts named, or to the seeds' hosts.
 */
import { readFileSync, statSync } from 'node:fs';
import {
  basicAuthHeader,
  type CredentialBundle,
  CredentialError,
  checkBundleSize,
  parseCookieFile,
  parseCookieOption,
  parseHeaderOption,
} from '../lambdas/core/credentials.ts';
import { CREDENTIAL_LIMITS } from '../lambdas/core/limits.ts';
import { UsageError } from './usage-error.ts';

export interface CredentialValues {
  header?: string[] | undefined;
  cookie?: string[] | undefined;
  'cookie-file'?: string | undefined;
  'basic-auth'?: string | undefined;
  'credentials-hosts'?: string | undefined;
}

/** The bundle the options make, or undefined when none is given. `seeds`: the seed URLs on the command line. */
export function credentialBundle(
  values: CredentialValues,
  seeds: readonly string[],
): CredentialBundle | undefined {
  const given =
    (values.header?.length ?? 0) > 0 ||
    (values.cookie?.length ?? 0) > 0 ||
    values['cookie-file'] !== undefined ||
    values['basic-auth'] !== undefined;
  if (!given) {
    if (values['credentials-hosts'] !== undefined) {
      throw new UsageError(
        '--credentials-hosts scopes --header, --cookie and --basic-auth: give one of them with it',
      );
    }
    return undefined;
  }
  try {
    const hosts = scopeHosts(values['credentials-hosts'], seeds);
    const headers = (values.header ?? []).map((text) => ({ ...parseHeaderOption(text), hosts }));
    if (values['basic-auth'] !== undefined) headers.push({ ...basicAuthHeader(values['basic-auth']), hosts });
    const hostnames = [...new Set(hosts.map((host) => new URL(`http://${host}`).hostname))];
    const cookies = (values.cookie ?? []).flatMap((text) => {
      const { name, value } = parseCookieOption(text);
      return hostnames.map((domain) => ({
        domain,
        subdomains: false,
        path: '/',
        secure: false,
        expires: 0,
        name,
        value,
      }));
    });
    const file = values['cookie-file'];
    if (file !== undefined) cookies.push(...parseCookieFile(readCookieFile(file), file));
    const bundle: CredentialBundle = { v: 1, headers, cookies };
    checkBundleSize(bundle);
    return bundle;
  } catch (error) {
    if (error instanceof CredentialError) throw new UsageError(error.message);
    throw error;
  }
}

/** `host[:port]` list of --credentials-hosts, else each seed's host. */
function scopeHosts(list: string | undefined, seeds: readonly string[]): string[] {
  if (list === undefined) {
    if (seeds.length === 0) {
      throw new UsageError(
        'with --seeds-file only, name the hosts that get the credentials: --credentials-hosts HOST,...',
      );
    }
    const hosts = seeds.flatMap((seed) => (URL.canParse(seed) ? [new URL(seed).host.toLowerCase()] : []));
    return [...new Set(hosts)];
  }
  return list.split(',').map((entry) => {
    const text = entry.trim().toLowerCase();
    let host: string | undefined;
    try {
      host = new URL(`http://${text}`).host;
    } catch {
      host = undefined;
    }
    if (text === '' || host !== text) {
      throw new UsageError(
        `--credentials-hosts: ${JSON.stringify(entry)} is not a host[:port]; expected e.g. docs.example.com,127.0.0.2:8080`,
      );
    }
    return host;
  });
}

function readCookieFile(path: string): string {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined || !stat.isFile()) throw new UsageError(`--cookie-file ${path}: no such file`);
  // Anything larger cannot fit the bundle anyway; reading it whole would only cost memory.
  if (stat.size > 16 * CREDENTIAL_LIMITS.bundleBytes) {
    throw new UsageError(
      `--cookie-file ${path}: ${stat.size} bytes; the crawl's credentials hold at most ${CREDENTIAL_LIMITS.bundleBytes} (keep only the cookies the site needs)`,
    );
  }
  return readFileSync(path, 'utf8');
}
