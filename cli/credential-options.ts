/**
 * `--header`, `--cookie`, `--cookie-file`, `--basic-auth` and `--credentials-hosts`: the crawl's
 * credentials (lambdas/core/crawl/credentials.ts), each scoped to the hosts named, or to the seeds' hosts;
 * `--proxy` and `--proxy-hosts`: its proxy (lambdas/core/crawl/proxy-url.ts), whose user and password join
 * the credentials.
 */
import { readFileSync, statSync } from 'node:fs';
import { CREDENTIAL_LIMITS } from '../lambdas/core/base/index.ts';
import {
  basicAuthHeader,
  type CredentialBundle,
  CredentialError,
  checkBundleSize,
  parseCookieFile,
  parseCookieOption,
  parseHeaderOption,
  parseProxyOption,
} from '../lambdas/core/crawl/index.ts';
import { UsageError } from './usage-error.ts';

export interface CredentialValues {
  header?: string[] | undefined;
  cookie?: string[] | undefined;
  'cookie-file'?: string | undefined;
  'basic-auth'?: string | undefined;
  'credentials-hosts'?: string | undefined;
  proxy?: string | undefined;
  'proxy-hosts'?: string | undefined;
}

/** What the crawl's requests carry besides the defaults: its credentials and its proxy. */
export interface CrawlAccess {
  credentials: CredentialBundle | undefined;
  proxy: { url: string; hosts?: string[] } | undefined;
}

/** The credentials and proxy the options give. `seeds`: the seed URLs on the command line. */
export function crawlAccess(values: CredentialValues, seeds: readonly string[]): CrawlAccess {
  try {
    const proxy = values.proxy === undefined ? undefined : parseProxyOption(values.proxy);
    if (values['proxy-hosts'] !== undefined && proxy === undefined) {
      throw new UsageError('--proxy-hosts says which hosts go through --proxy: give --proxy with it');
    }
    const proxyHosts =
      values['proxy-hosts'] === undefined ? undefined : hostList(values['proxy-hosts'], '--proxy-hosts');
    const credentials = credentialBundle(values, seeds, proxy?.authorization);
    return {
      credentials,
      proxy:
        proxy === undefined
          ? undefined
          : { url: proxy.url, ...(proxyHosts === undefined ? {} : { hosts: proxyHosts }) },
    };
  } catch (error) {
    if (error instanceof CredentialError) throw new UsageError(error.message);
    throw error;
  }
}

function credentialBundle(
  values: CredentialValues,
  seeds: readonly string[],
  proxyAuthorization: string | undefined,
): CredentialBundle | undefined {
  const given =
    (values.header?.length ?? 0) > 0 ||
    (values.cookie?.length ?? 0) > 0 ||
    values['cookie-file'] !== undefined ||
    values['basic-auth'] !== undefined;
  if (!given && values['credentials-hosts'] !== undefined) {
    throw new UsageError(
      '--credentials-hosts scopes --header, --cookie and --basic-auth: give one of them with it',
    );
  }
  if (!given && proxyAuthorization === undefined) return undefined;
  const bundle: CredentialBundle = {
    v: 1,
    headers: [],
    cookies: [],
    ...(proxyAuthorization === undefined ? {} : { proxyAuthorization }),
  };
  if (given) {
    const hosts = scopeHosts(values['credentials-hosts'], seeds);
    bundle.headers = (values.header ?? []).map((text) => ({ ...parseHeaderOption(text), hosts }));
    if (values['basic-auth'] !== undefined)
      bundle.headers.push({ ...basicAuthHeader(values['basic-auth']), hosts });
    const hostnames = [...new Set(hosts.map((host) => new URL(`http://${host}`).hostname))];
    bundle.cookies = (values.cookie ?? []).flatMap((text) => {
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
    if (file !== undefined) bundle.cookies.push(...parseCookieFile(readCookieFile(file), file));
  }
  checkBundleSize(bundle);
  return bundle;
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
  return hostList(list, '--credentials-hosts');
}

/** A comma-separated `host[:port]` list, as URLs name hosts (lower case, default port dropped). */
function hostList(list: string, option: string): string[] {
  return list.split(',').map((entry) => {
    const text = entry.trim().toLowerCase();
    const host = URL.canParse(`http://${text}`) ? new URL(`http://${text}`).host : undefined;
    if (text === '' || host !== text) {
      throw new UsageError(
        `${option}: ${JSON.stringify(entry)} is not a host[:port]; expected e.g. docs.example.com,127.0.0.2:8080`,
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
