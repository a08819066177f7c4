// The AWS SDK's requests to the embedded emulators, handed to their servers in this thread: no
// socket, no HTTP written or parsed on either side. The request still goes through everything a
// server does with it (request-guard.ts, the strict layer, the emulator), so its answers are the
// wire's; only the bytes on loopback are skipped. For `crawler crawl` (local/README.md).
import type { IncomingHttpHeaders, Server } from 'node:http';
import { Readable } from 'node:stream';
import { buildQueryString } from '@smithy/core/protocols';
import type { HttpRequest, RequestSigningArguments } from '@smithy/types';
import inject from 'light-my-request';
import type { AwsRequestHandler, AwsTransport } from '../lambdas/shared/aws-clients.ts';

/** Calls to `servers` (by the origin each listens on), in this thread and unsigned. */
export function inProcessTransport(servers: ReadonlyMap<string, Server>): AwsTransport {
  return { requestHandler: inProcessRequestHandler(servers), signer: placeholderSigner };
}

/**
 * In place of SigV4: the shape request-guard.ts and dynalite check, with a placeholder signature.
 * Nothing local verifies signatures (the credentials are dummies); computing one was a quarter of
 * the SDK's CPU in a local crawl.
 */
const placeholderSigner: AwsTransport['signer'] = {
  async sign(request: HttpRequest, options: RequestSigningArguments = {}) {
    const amzDate = new Date(options.signingDate ?? Date.now()).toISOString().replace(/[-:]|\.\d{3}/g, '');
    const scope = `${amzDate.slice(0, 8)}/${options.signingRegion ?? 'us-east-1'}/${options.signingService ?? 'aws'}`;
    request.headers['x-amz-date'] = amzDate;
    request.headers.authorization =
      `AWS4-HMAC-SHA256 Credential=local/${scope}/aws4_request, ` +
      `SignedHeaders=host;x-amz-date, Signature=${PLACEHOLDER_SIGNATURE}`;
    return request;
  },
};

const PLACEHOLDER_SIGNATURE = '0'.repeat(64);

/**
 * Requests for one of `servers` (by the origin they listen on) go to its `request` listeners;
 * any other origin is a mistake of the caller's wiring, answered with an error, never sent.
 */
function inProcessRequestHandler(servers: ReadonlyMap<string, Server>): AwsRequestHandler {
  return {
    async handle(request, options = {}) {
      const origin = `${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ''}`;
      const server = servers.get(origin);
      if (!server) throw new Error(`in-process AWS: nothing serves ${origin} in this process`);
      const signal = options.abortSignal;
      if (signal?.aborted) throw abortError();
      const answer = inject((req, res) => server.emit('request', req, res), {
        method: request.method,
        url: pathAndQuery(request),
        headers: request.headers,
        remoteAddress: '127.0.0.1',
        // Answered at its head, the body streamed as a socket's would be: buffered, light-my-request
        // would also decode every body to a string (most of a GetObject's cost).
        payloadAsStream: true,
        ...(request.body === undefined || request.body === null ? {} : { payload: payloadOf(request.body) }),
      });
      const res = await (signal ? raceAbort(answer, signal) : answer);
      return {
        response: {
          statusCode: res.statusCode,
          reason: res.statusMessage,
          headers: flatHeaders(res.headers),
          body: res.stream(),
        },
      };
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {},
  };
}

/** The request target as NodeHttpHandler writes it: the SDK's own query encoding. */
function pathAndQuery(request: HttpRequest): string {
  const query = request.query ? buildQueryString(request.query) : '';
  return query ? `${request.path}?${query}` : request.path;
}

// light-my-request sends a Buffer, a string or a stream as they are; any other object as JSON.
function payloadOf(body: unknown): string | Buffer | Readable {
  if (typeof body === 'string' || Buffer.isBuffer(body) || body instanceof Readable) return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new Error(`in-process AWS: a request body of type ${typeof body} cannot be sent`);
}

/** A repeated header's values joined with ',', as NodeHttpHandler hands them to the SDK. */
function flatHeaders(headers: IncomingHttpHeaders | Record<string, unknown>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    flat[name] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return flat;
}

/** As NodeHttpHandler rejects an aborted request: the SDK's callers know the AbortError name. */
function abortError(): Error {
  const error = new Error('Request aborted');
  error.name = 'AbortError';
  return error;
}

interface AbortSignalLike {
  aborted: boolean;
  addEventListener?: (type: 'abort', listener: () => void, options?: { once: boolean }) => void;
  removeEventListener?: (type: 'abort', listener: () => void) => void;
  onabort?: unknown;
}

/**
 * The answer is left to the server (an emulator's long poll ends on its own); the caller stops
 * waiting. Like NodeHttpHandler: the signal's listener if it has them, else its `onabort`.
 */
function raceAbort<T>(answer: Promise<T>, signal: AbortSignalLike): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError());
    if (typeof signal.addEventListener === 'function')
      signal.addEventListener('abort', onAbort, { once: true });
    else signal.onabort = onAbort;
    const settle = () => {
      if (typeof signal.removeEventListener === 'function') signal.removeEventListener('abort', onAbort);
      else if (signal.onabort === onAbort) signal.onabort = null;
    };
    answer.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
}
