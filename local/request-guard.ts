// Who may talk to the local AWS over HTTP: programs on this machine that sign requests as the AWS
// SDKs and CLIs do - not web pages. Any page open in a browser here can reach loopback ports: by DNS
// rebinding (its own domain re-resolved to 127.0.0.1, so reads are same-origin for the browser but
// carry a foreign Host), by cross-site "simple" requests (a form POST or an image GET: sent without
// a CORS preflight, e.g. a form-encoded SQS SendMessage), or by preflighted fetches. So a request
// must name this endpoint in Host, carry no foreign Origin, and be signed with AWS SigV4: an
// Authorization header (a header no browser sends cross-site without a preflight, and every
// preflight is refused) or S3 query presigning. Signatures are not verified - the local credentials
// are dummies - only their shape, which is what a page cannot produce.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GuardedRequest {
  method: string;
  /** Path and query, as on the request line. */
  url: string;
  headers: IncomingHttpHeaders;
}

export interface GuardOptions {
  /**
   * The port Host must carry: the listener's own, or `any` for listeners behind our own proxies,
   * which forward the public endpoint's Host (fauxqs builds queue URLs from it). The host name is
   * checked either way: that is what stops DNS rebinding.
   */
  port: number | 'any';
}

export type Verdict = { allowed: true } | { allowed: false; reason: string };

/** Host names of this machine's loopback endpoint, as clients may write them. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
// `AWS4-HMAC-SHA256 Credential=KEY/YYYYMMDD/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=HEX`
const SIGV4_HEADER =
  /^AWS4-HMAC-SHA256 Credential=[^/\s,]+\/\d{8}\/[a-z0-9-]+\/[a-z0-9-]+\/aws4_request, ?SignedHeaders=[a-z0-9-]+(;[a-z0-9-]+)*, ?Signature=[0-9a-f]{64}$/i;
const SIGV4_CREDENTIAL = /^[^/\s]+\/\d{8}\/[a-z0-9-]+\/[a-z0-9-]+\/aws4_request$/i;
const SIGNATURE = /^[0-9a-f]{64}$/i;
/** Content types a web form (or a no-preflight fetch) can send. */
const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/** Allowed, or refused with one sentence saying why. Pure: decided from method, url and headers. */
export function judgeRequest(request: GuardedRequest, options: GuardOptions): Verdict {
  const { headers } = request;
  const host = parseHost(one(headers.host));
  if (!host || !LOOPBACK.has(host.name) || (options.port !== 'any' && host.port !== options.port)) {
    const expected = options.port === 'any' ? '' : ` on port ${options.port}`;
    return refused(
      `Host ${JSON.stringify(one(headers.host) ?? '')} is not this endpoint (127.0.0.1, localhost or [::1]${expected})`,
    );
  }
  if (request.method === 'OPTIONS')
    return refused('CORS preflight refused: web pages may not call this endpoint');
  const origin = one(headers.origin);
  if (origin !== undefined && !isOwnOrigin(origin, host.port)) {
    return refused(`Origin ${JSON.stringify(origin)} is not this endpoint: web pages may not call it`);
  }
  const site = one(headers['sec-fetch-site']);
  if (site === 'cross-site' || site === 'same-site') {
    return refused(`request sent by a web page of another site (Sec-Fetch-Site: ${site}) refused`);
  }
  const authorization = one(headers.authorization);
  if (authorization !== undefined) {
    return SIGV4_HEADER.test(authorization)
      ? { allowed: true }
      : refused(
          'Authorization is not AWS SigV4 (AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...)',
        );
  }
  if (isPresigned(request.url)) {
    // A presigned GET/HEAD is a read the browser would not let a foreign page see; a presigned POST
    // with a form body (or none) is what any page's form can send, so it is no proof of a client.
    const type = (one(headers['content-type']) ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (request.method === 'POST' && (type === '' || FORM_TYPES.has(type))) {
      return refused('presigned POST with a form body refused: any web page could send it');
    }
    return { allowed: true };
  }
  return refused('request not signed: an AWS SigV4 Authorization header or presigned URL is required');
}

/**
 * Puts the guard in front of every 'request' listener of `server` (ours, fastify's, dynalite's):
 * refused requests get a 403 and never reach them. `port: 'own'` reads the bound port per request.
 */
export function guardServer(server: Server, options: { port: 'own' | 'any' }): void {
  const listeners = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const port = options.port === 'any' ? 'any' : (server.address() as AddressInfo).port;
    const verdict = judgeRequest(
      { method: req.method ?? '', url: req.url ?? '/', headers: req.headers },
      { port },
    );
    if (!verdict.allowed) {
      refuse(req, res, verdict.reason);
      return;
    }
    for (const listener of listeners) listener.call(server, req, res);
  });
}

/** A 403 in the error shape of the protocol the request speaks; no CORS headers, ever. */
export function refuse(req: IncomingMessage, res: ServerResponse, reason: string): void {
  const requestId = randomUUID();
  const type = String(req.headers['content-type'] ?? '');
  let contentType: string;
  let body: string;
  if (req.headers['x-amz-target'] !== undefined) {
    // JSON protocols (SQS, DynamoDB): the SDKs read the code from __type.
    contentType = 'application/x-amz-json-1.0';
    body = JSON.stringify({ __type: 'AccessDeniedException', message: reason });
  } else if (type.startsWith('application/x-www-form-urlencoded')) {
    // Query protocol (SQS of older clients).
    contentType = 'text/xml';
    body =
      `<?xml version="1.0"?><ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>` +
      `<Message>${escapeXml(reason)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`;
  } else {
    // S3 REST.
    contentType = 'application/xml';
    body =
      `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>` +
      `<Message>${escapeXml(reason)}</Message><RequestId>${requestId}</RequestId></Error>`;
  }
  res.writeHead(403, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': requestId,
    'x-amzn-query-error': 'AccessDenied;Sender',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function refused(reason: string): Verdict {
  return { allowed: false, reason };
}

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** `name[:port]` of a Host header, the name lower-cased; port 80 when absent (plain http). */
function parseHost(value: string | undefined): { name: string; port: number } | undefined {
  const match = value === undefined ? null : /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(value);
  if (!match?.[1]) return undefined;
  return { name: match[1].toLowerCase(), port: match[2] === undefined ? 80 : Number(match[2]) };
}

/** An origin of this endpoint: http, a loopback name, the port the Host names. */
function isOwnOrigin(origin: string, port: number): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (sandboxed frames, file:) and garbage
  }
  return (
    url.protocol === 'http:' &&
    url.origin === origin.toLowerCase() &&
    LOOPBACK.has(url.hostname) &&
    Number(url.port || 80) === port
  );
}

function isPresigned(url: string): boolean {
  let query: URLSearchParams;
  try {
    query = new URL(url, 'http://local.invalid').searchParams;
  } catch {
    return false;
  }
  return (
    query.get('X-Amz-Algorithm') === 'AWS4-HMAC-SHA256' &&
    SIGV4_CREDENTIAL.test(query.get('X-Amz-Credential') ?? '') &&
    SIGNATURE.test(query.get('X-Amz-Signature') ?? '')
  );
}

// Element text only (no attributes), so quotes stay readable.
function escapeXml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
