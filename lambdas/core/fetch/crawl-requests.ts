/**
 * What a crawl adds to each request of its visits (robots.txt, its redirects and the pages): its
 * credentials' headers and its proxy, each only for the hosts it is scoped to (credentials.ts), and
 * the redaction of the secrets from what the WARC request record keeps. One place, so no request of
 * a visit goes around it.
 */

import { PermanentError } from '../base/index.ts';
import {
  type CrawlConfig,
  type CredentialBundle,
  type CredentialReader,
  credentialHeaders,
  type PageFetcher,
  type PageRequest,
  redactHeaders,
  secretHeaderNames,
} from '../crawl/index.ts';

/** `fetcher` with the crawl's credentials and proxy applied to every request. */
export function crawlRequests(
  fetcher: PageFetcher,
  config: CrawlConfig,
  reader: CredentialReader | undefined,
  now: () => number,
): PageFetcher {
  if (config.credentials === undefined && config.proxy === undefined) return fetcher;
  return {
    fetch: async (request) => {
      const bundle = await crawlCredentials(config, reader);
      const headers = {
        ...request.headers,
        ...credentialHeaders(bundle, request.url, Math.floor(now() / 1000)),
      };
      const proxy = proxyFor(config, bundle, request.url);
      const response = await fetcher.fetch({
        ...request,
        headers,
        ...(proxy === undefined ? {} : { proxy }),
      });
      const secret = secretHeaderNames(bundle);
      return secret.size === 0
        ? response
        : { ...response, requestHeaders: redactHeaders(response.requestHeaders, secret) };
    },
  };
}

/** The bundle the crawl's config names, if any (read through the reader's cache). */
async function crawlCredentials(
  config: CrawlConfig,
  reader: CredentialReader | undefined,
): Promise<CredentialBundle | undefined> {
  if (config.credentials === undefined) return undefined;
  if (reader === undefined) {
    throw new PermanentError(
      'failed',
      'credentials-unavailable',
      'this fetch function has no access to credentials',
    );
  }
  return reader.read(config.credentials.parameter);
}

/** The crawl's proxy for `url`: for every host, or for those `proxy.hosts` lists. */
function proxyFor(config: CrawlConfig, bundle: CredentialBundle | undefined, url: URL): PageRequest['proxy'] {
  const proxy = config.proxy;
  if (proxy === undefined) return undefined;
  if (proxy.hosts !== undefined && !proxy.hosts.includes(url.host.toLowerCase())) return undefined;
  const authorization = bundle?.proxyAuthorization;
  return { url: proxy.url, ...(authorization === undefined ? {} : { authorization }) };
}
