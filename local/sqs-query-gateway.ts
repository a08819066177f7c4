// The public endpoint of `crawler local`: everything is passed through to the local AWS (the
// endpoint router: SQS JSON, S3 REST, DynamoDB), except SQS requests in the query protocol, which are
// translated to the JSON protocol and back, and CloudFormation DescribeStacks, answered for the local
// stack (local/cloudformation-describe.ts).
//
// Why: SQS speaks two protocols. The AWS SDKs and CLIs since late 2023 use JSON (what fauxqs
// implements); older clients - Debian 12's `awscli` 2.9, boto3 < 1.34, the Java SDK v1 - send
// `Action=SendMessage&QueueUrl=...` forms and expect XML. SQS itself still answers both, so the local
// AWS must too for "the AWS CLI works against it as against AWS" to hold. The translation's text
// work (forms, XML) is sqs-query-protocol.ts; here, the requests and answers.
//
// Covered: SendMessage(Batch), ReceiveMessage, DeleteMessage(Batch), ChangeMessageVisibility(Batch),
// GetQueueUrl, ListQueues, GetQueueAttributes, SetQueueAttributes, CreateQueue, DeleteQueue,
// PurgeQueue, ListQueueTags, TagQueue, UntagQueue. Another query action is answered with an
// InvalidAction error naming it.
import { randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type ServerResponse,
} from 'node:http';
import { describeStacksAnswer, type LocalStackDescription } from './cloudformation-describe.ts';
import { listenOnLoopback } from './loopback-listen.ts';
import { guardServer } from './request-guard.ts';
import { queryErrorXml, queryResponseXml, toJsonInput } from './sqs-query-protocol.ts';

export interface SqsQueryGateway {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface SqsQueryGatewayOptions {
  /** The local AWS (SQS JSON, S3, DynamoDB on one URL), e.g. the endpoint router. */
  upstream: string;
  /** 0 = any free port. */
  port: number;
  /**
   * Default 127.0.0.1: nothing outside this machine reaches the local AWS. The guard accepts only
   * loopback names in Host, whatever the bind address.
   */
  host?: string;
  /**
   * Origins (the upstream's own) that SQS answers may carry in queue URLs (fauxqs keeps the URL a
   * queue was created with): rewritten to the origin the client used, so every URL a client sees
   * names this endpoint.
   */
  rewriteOrigins?: readonly string[];
  /** The stack CloudFormation DescribeStacks answers with (once it is provisioned). */
  stack?: () => LocalStackDescription | undefined;
}

const SQS_ACTIONS = new Set([
  'SendMessage',
  'SendMessageBatch',
  'ReceiveMessage',
  'DeleteMessage',
  'DeleteMessageBatch',
  'ChangeMessageVisibility',
  'ChangeMessageVisibilityBatch',
  'GetQueueUrl',
  'ListQueues',
  'GetQueueAttributes',
  'SetQueueAttributes',
  'CreateQueue',
  'DeleteQueue',
  'PurgeQueue',
  'ListQueueTags',
  'TagQueue',
  'UntagQueue',
]);

/** Query actions of SQS that exist but are not translated (answered with a clear error). */
const OTHER_SQS_ACTIONS = new Set([
  'ListDeadLetterSourceQueues',
  'AddPermission',
  'RemovePermission',
  'StartMessageMoveTask',
  'CancelMessageMoveTask',
  'ListMessageMoveTasks',
]);

// Hop-by-hop headers, and Expect (the body is streamed through instead of negotiating 100-continue).
const DROPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'expect']);
const MAX_FORM_BYTES = 2 * 1024 * 1024;

export async function startSqsQueryGateway(options: SqsQueryGatewayOptions): Promise<SqsQueryGateway> {
  const upstream = new URL(options.upstream);
  const origins = [
    ...new Set([upstream.origin, ...(options.rewriteOrigins ?? []).map((o) => new URL(o).origin)]),
  ];
  const server = createServer((req, res) => {
    const type = String(req.headers['content-type'] ?? '');
    const target = String(req.headers['x-amz-target'] ?? '');
    const rewrite = (json: Record<string, unknown>) => rewriteQueueUrls(json, origins, req.headers.host);
    if (req.method === 'POST' && type.includes('application/x-www-form-urlencoded') && !target) {
      void handleForm(req, res, upstream, rewrite, options.stack).catch((error: unknown) => fail(res, error));
      return;
    }
    if (target.startsWith('AmazonSQS.')) {
      void relaySqsJson(req, res, upstream, rewrite).catch((error: unknown) => fail(res, error));
      return;
    }
    pipeThrough(req, res, upstream);
  });
  // The public endpoint: Host must carry its own port (local/request-guard.ts says what else).
  guardServer(server, { port: 'own' });
  const running = await listenOnLoopback(server, options.port, options.host);
  return { url: running.url, port: Number(new URL(running.url).port), stop: running.stop };
}

type Rewrite = (json: Record<string, unknown>) => Record<string, unknown>;

/** Queue URLs in an SQS answer (QueueUrl, QueueUrls, queueUrls) named by the origin the client used. */
function rewriteQueueUrls(
  json: Record<string, unknown>,
  origins: readonly string[],
  host: string | undefined,
): Record<string, unknown> {
  if (host === undefined) return json;
  const fix = (url: unknown) => {
    if (typeof url !== 'string') return url;
    const origin = origins.find((o) => url.startsWith(`${o}/`));
    return origin === undefined ? url : `http://${host}${url.slice(origin.length)}`;
  };
  const out = { ...json };
  if ('QueueUrl' in out) out.QueueUrl = fix(out.QueueUrl);
  for (const key of ['QueueUrls', 'queueUrls']) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map(fix);
  }
  return out;
}

/** SQS in JSON: passed through, with queue URLs in the answer naming this endpoint. */
async function relaySqsJson(
  req: IncomingMessage,
  res: ServerResponse,
  upstream: URL,
  rewrite: Rewrite,
): Promise<void> {
  const body = await readBody(req);
  const answer = await call(
    upstream,
    req.method ?? 'POST',
    req.url ?? '/',
    forwardable(req.headers, body),
    body,
  );
  let text = answer.body.toString('utf8');
  if (answer.status < 300 && text !== '') {
    try {
      text = JSON.stringify(rewrite(JSON.parse(text) as Record<string, unknown>));
    } catch {
      // Not JSON: passed on as it came.
    }
  }
  const headers = { ...answer.headers, 'content-length': String(Buffer.byteLength(text)) };
  delete headers['transfer-encoding'];
  delete headers.connection;
  res.writeHead(answer.status, headers);
  res.end(text);
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function call(
  upstream: URL,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const out = request(
      { hostname: upstream.hostname, port: upstream.port, method, path, headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 502,
            headers: response.headers,
            body: Buffer.concat(chunks),
          }),
        );
        response.on('error', reject);
      },
    );
    out.on('error', reject);
    out.end(body);
  });
}

function pipeThrough(req: IncomingMessage, res: ServerResponse, upstream: URL, body?: Buffer): void {
  // The Host header is kept: fauxqs builds queue URLs from it, so they name this endpoint.
  const out = request(
    {
      hostname: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: forwardable(req.headers, body),
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', (error) => fail(res, error));
  if (body === undefined) req.pipe(out);
  else out.end(body);
}

function forwardable(headers: IncomingHttpHeaders, body?: Buffer): IncomingHttpHeaders {
  const out = Object.fromEntries(Object.entries(headers).filter(([name]) => !DROPPED.has(name)));
  if (body !== undefined) {
    delete out['transfer-encoding'];
    out['content-length'] = String(body.byteLength);
  }
  return out;
}

function fail(res: ServerResponse, error: unknown): void {
  if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
  res.end(`local AWS gateway: ${error instanceof Error ? error.message : String(error)}`);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength;
    if (size > MAX_FORM_BYTES) throw new Error(`form body larger than ${MAX_FORM_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function handleForm(
  req: IncomingMessage,
  res: ServerResponse,
  upstream: URL,
  rewrite: Rewrite,
  stack: SqsQueryGatewayOptions['stack'],
): Promise<void> {
  const body = await readBody(req);
  const form = new URLSearchParams(body.toString('utf8'));
  const action = form.get('Action') ?? '';
  const described = action === 'DescribeStacks' ? stack?.() : undefined;
  if (described) {
    const answer = describeStacksAnswer(form, [described]);
    res.writeHead(answer.status, { 'content-type': 'text/xml' });
    res.end(answer.body);
    return;
  }
  if (!SQS_ACTIONS.has(action)) {
    if (OTHER_SQS_ACTIONS.has(action)) {
      sendXmlError(res, 400, 'InvalidAction', `${action} is not available on the local AWS`, 'Sender');
      return;
    }
    // Not SQS (STS GetCallerIdentity, SNS...): the local AWS answers it as it can.
    pipeThrough(req, res, upstream, body);
    return;
  }
  const answer = await callSqsJson(req, upstream, action, sqsJsonInput(req, upstream, action, form));
  sendQueryAnswer(res, action, answer, rewrite);
}

/** The query form as the JSON protocol's input, with what JSON names differently or carries elsewhere. */
function sqsJsonInput(
  req: IncomingMessage,
  upstream: URL,
  action: string,
  form: URLSearchParams,
): Record<string, unknown> {
  const input = toJsonInput(form);
  // CreateQueue names its tag map `tags` in the JSON protocol (TagQueue: `Tags`).
  if (action === 'CreateQueue' && input.Tags !== undefined) {
    input.tags = input.Tags;
    delete input.Tags;
  }
  // A query request may name the queue only by the URL it was posted to.
  if (input.QueueUrl === undefined && req.url && req.url !== '/' && !req.url.startsWith('/?')) {
    input.QueueUrl = `http://${req.headers.host ?? upstream.host}${req.url.split('?')[0]}`;
  }
  return input;
}

/** The action sent to the local SQS in the JSON protocol. */
function callSqsJson(
  req: IncomingMessage,
  upstream: URL,
  action: string,
  input: Record<string, unknown>,
): Promise<Answer> {
  const payload = Buffer.from(JSON.stringify(input));
  return call(
    upstream,
    'POST',
    '/',
    {
      host: req.headers.host ?? upstream.host,
      // The client's signature (checked by the guard) goes along: the guards upstream want one too.
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `AmazonSQS.${action}`,
      'content-length': String(payload.byteLength),
    },
    payload,
  );
}

/** The local SQS's JSON answer given to the query client as XML: its result, or its error. */
function sendQueryAnswer(res: ServerResponse, action: string, answer: Answer, rewrite: Rewrite): void {
  let json: Record<string, unknown> = {};
  try {
    json =
      answer.body.byteLength > 0
        ? rewrite(JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>)
        : {};
  } catch {
    sendXmlError(
      res,
      500,
      'InternalFailure',
      `unreadable answer from the local SQS: ${answer.body.toString('utf8').slice(0, 200)}`,
      'Receiver',
    );
    return;
  }
  if (answer.status >= 400) {
    const header = String(answer.headers['x-amzn-query-error'] ?? '');
    const [queryCode, fault] = header.split(';');
    const jsonCode =
      String(json.__type ?? 'InternalFailure')
        .split('#')
        .pop() ?? 'InternalFailure';
    sendXmlError(
      res,
      answer.status,
      queryCode || jsonCode,
      String(json.message ?? json.Message ?? ''),
      fault === 'Receiver' ? 'Receiver' : 'Sender',
    );
    return;
  }
  const xml = queryResponseXml(action, json);
  res.writeHead(200, { 'content-type': 'text/xml', 'x-amzn-requestid': randomUUID() });
  res.end(xml);
}

function sendXmlError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  type: string,
): void {
  res.writeHead(status, { 'content-type': 'text/xml' });
  res.end(queryErrorXml(code, message, type));
}
