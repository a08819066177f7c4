/**
 * `--proxy URL`: an HTTP proxy that tunnels the crawl's requests with CONNECT. Its user and password,
 * if the URL has them, are a secret: they become the `Proxy-Authorization` of the crawl's credentials
 * (credentials.ts) and the config keeps the URL without them.
 */
import { CredentialError } from './credentials.ts';

/** What the config may hold: `http://host[:port]` (with or without a trailing `/`), nothing else. */
export function isProxyUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return (
    url.protocol === 'http:' &&
    url.username === '' &&
    url.password === '' &&
    url.pathname === '/' &&
    url.search === '' &&
    url.hash === '' &&
    !text.includes('@')
  );
}

/** The proxy of `--proxy`, and its Basic `Proxy-Authorization` when the URL names a user. */
export function parseProxyOption(text: string): { url: string; authorization?: string } {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (url === undefined || url.protocol !== 'http:' || url.hostname === '' || url.hostname.length > 253) {
    throw new CredentialError(
      `--proxy: expected http://[user:password@]host:port, got ${JSON.stringify(text.slice(0, 60))}`,
    );
  }
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new CredentialError(
      '--proxy: expected http://[user:password@]host:port, with no path, query or fragment',
    );
  }
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  if (/\p{Cc}/u.test(user + password) || user.includes(':')) {
    throw new CredentialError(
      '--proxy: the user may not hold a colon, nor the user or password control characters',
    );
  }
  const origin = `http://${url.host}`;
  if (user === '' && password === '') return { url: origin };
  return {
    url: origin,
    authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`,
  };
}
