/**
 * The address guard for a browser: every request a rendered page makes leaves Chromium through this
 * proxy on 127.0.0.1 (plain http forwarded, https by CONNECT), which dials only what the guard allows,
 * checked on the address resolved and again on the socket (http-fetcher.ts's guardLookup and block
 * list). Chromium sends each page's requests with that render's own proxy credentials, so the proxy
 * knows which render a request belongs to: its page's host, and what it may reach.
 *
 * What a render may reach: its page's own host (the crawl fetched the page under its own rules, so
 * `--allow-private` holds for it), and public addresses. Never loopback, private, link-local or
 * metadata addresses of any other host, whatever the crawl allows: a script's requests are the page
 * author's, not the crawl's.
 */
import { randomBytes } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, type LookupFunction, type Socket } from 'node:net';

export interface RenderAccount {
  /** `host[:port]` of the page: its requests are dialled under `ownHost`. */
  pageHost: string;
  /** How the page's own host is resolved: the crawl's address policy. */
  ownHost: LookupFunction;
  requests: number;
  sameHostRequests: number;
  refused: number;
  bytes: number;
  /** Requests past this are refused (the render's budget). */
  maxRequests: number;
  /** Response bytes past this end the connection. */
  maxBytes: number;
}

export interface GuardLookups {
  /** Public addresses only: any host but the page's, and the page's own in a crawl without --allow-private. */
  public: LookupFunction;
  /** The page's own host in a crawl with --allow-private (inside Lambda, never this machine's addresses). */
  private: LookupFunction;
}

export class RenderGuardProxy {
  readonly #accounts = new Map<string, RenderAccount>();
  readonly #lookups: GuardLookups;
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;

  constructor(lookups: GuardLookups) {
    this.#lookups = lookups;
  }

  get server(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** Credentials for one render's browser context, and the account its requests are counted in. */
  open(
    pageHost: string,
    budget: { maxRequests: number; maxBytes: number },
    allowPrivate: boolean,
  ): { username: string; password: string; account: RenderAccount } {
    const username = randomBytes(12).toString('hex');
    const account: RenderAccount = {
      pageHost: pageHost.toLowerCase(),
      // Resolved again, under the crawl's policy: a name rebound to loopback since the page's fetch
      // is refused as the crawler's own request would be.
      ownHost: allowPrivate ? this.#lookups.private : this.#lookups.public,
      requests: 0,
      sameHostRequests: 0,
      refused: 0,
      bytes: 0,
      ...budget,
    };
    this.#accounts.set(username, account);
    return { username, password: 'render', account };
  }

  close(username: string): void {
    this.#accounts.delete(username);
  }

  async start(): Promise<void> {
    if (this.#server !== undefined) return;
    const server = createServer((req, res) => this.#forward(req, res));
    server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) =>
      this.#tunnel(req, client, head),
    );
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.#port = (server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    const server = this.#server;
    this.#server = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The render a request belongs to, from its Proxy-Authorization; undefined: not one of ours. */
  #account(req: IncomingMessage): RenderAccount | undefined {
    const header = req.headers['proxy-authorization'];
    const match = typeof header === 'string' ? /^Basic (.+)$/i.exec(header) : null;
    if (match === null) return undefined;
    const user =
      Buffer.from(match[1] ?? '', 'base64')
        .toString('utf8')
        .split(':')[0] ?? '';
    return this.#accounts.get(user);
  }

  /** Whether the account may make one more request to `host` (`host[:port]`), and how it is dialled. */
  #admit(account: RenderAccount, host: string): LookupFunction | undefined {
    if (account.requests >= account.maxRequests || account.bytes >= account.maxBytes) {
      account.refused++;
      return undefined;
    }
    account.requests++;
    const own = host.toLowerCase() === account.pageHost;
    if (own) account.sameHostRequests++;
    return own ? account.ownHost : this.#lookups.public;
  }

  #forward(req: IncomingMessage, res: ServerResponse): void {
    const account = this.#account(req);
    if (account === undefined) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="render"' }).end();
      return;
    }
    const target = URL.canParse(req.url ?? '') ? new URL(req.url ?? '') : undefined;
    const lookup = target?.protocol === 'http:' ? this.#admit(account, target.host) : undefined;
    if (target === undefined || lookup === undefined) {
      res.writeHead(403).end();
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    void resolveGuarded(lookup, target.hostname).then((address) => {
      if (address === undefined) {
        account.refused++;
        res.writeHead(403).end();
        return;
      }
      const path = `${target.pathname}${target.search}`;
      const upstream = httpRequest(
        { host: address, port: target.port || 80, path, method: req.method, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.on('data', (chunk: Buffer) => {
            account.bytes += chunk.byteLength;
            if (account.bytes > account.maxBytes) answer.destroy();
          });
          answer.pipe(res);
        },
      );
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      req.pipe(upstream);
    });
  }

  #tunnel(req: IncomingMessage, client: Socket, head: Buffer): void {
    this.#sockets.add(client);
    const account = this.#account(req);
    if (account === undefined) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="render"\r\n\r\n',
      );
      return;
    }
    const target = req.url ?? '';
    const colon = target.lastIndexOf(':');
    const hostname = target.slice(0, colon).replace(/^\[|\]$/g, '');
    const port = Number(target.slice(colon + 1));
    const lookup =
      colon > 0 && Number.isInteger(port)
        ? this.#admit(account, port === 443 ? hostname : target)
        : undefined;
    if (lookup === undefined) {
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    void resolveGuarded(lookup, hostname).then((address) => {
      if (address === undefined) {
        account.refused++;
        client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
        return;
      }
      const upstream = connect({ host: address, port }, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.on('data', (chunk: Buffer) => {
          account.bytes += chunk.byteLength;
          if (account.bytes > account.maxBytes) upstream.destroy();
        });
        upstream.pipe(client);
        client.pipe(upstream);
      });
      this.#sockets.add(upstream);
      const end = () => {
        upstream.destroy();
        client.destroy();
      };
      upstream.on('error', () => {
        if (!client.destroyed) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      });
      upstream.on('close', end);
      client.on('error', end);
      client.on('close', end);
    });
  }
}

/**
 * The address to dial for `hostname`, through the guarded resolver: an IP literal goes through it too
 * (Node's own connect would skip the lookup for one), so the guard sees every address dialled.
 * Undefined: refused, or not resolved.
 */
function resolveGuarded(lookup: LookupFunction, hostname: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    lookup(hostname, { all: false }, (error, address) => {
      resolve(error === null && typeof address === 'string' && address !== '' ? address : undefined);
    });
  });
}
