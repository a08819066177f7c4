// One endpoint for all services, like LocalStack: requests carrying a DynamoDB X-Amz-Target go to
// dynalite, an EventBridge one (AWSEvents.*) to the local event bus, those signed for `scheduler` to
// the local Scheduler, an SSM one (AmazonSSM.*) to the local Parameter Store, everything else (SQS JSON protocol, S3 REST) to fauxqs. Used when a fixed port is wanted
// (`crawler local`), so `--endpoint URL` clients need just that one URL.
import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import type { RunningServer } from './fauxqs-server.ts';
import { listenOnLoopback } from './loopback-listen.ts';
import { guardServer } from './request-guard.ts';

export interface RouterTargets {
  /** fauxqs: SQS and S3. */
  sqsAndS3: string;
  dynamodb: string;
  /** The local EventBridge (eventbridge-server.ts). */
  events: string;
  /** The local EventBridge Scheduler (scheduler-server.ts). */
  scheduler: string;
  /** The local SSM Parameter Store (ssm-server.ts). */
  ssm: string;
}

// Hop-by-hop headers, and Expect (we stream the body straight through instead of negotiating 100-continue).
const DROPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'expect']);

export async function startEndpointRouter(targets: RouterTargets, port: number): Promise<RunningServer> {
  const fauxqs = new URL(targets.sqsAndS3);
  const dynalite = new URL(targets.dynamodb);
  const events = new URL(targets.events);
  const scheduler = new URL(targets.scheduler);
  const ssm = new URL(targets.ssm);
  const server = createServer((req, res) => {
    const amzTarget = String(req.headers['x-amz-target'] ?? '');
    // Scheduler's REST calls carry no X-Amz-Target: their signature's scope names the service.
    const signedFor = /Credential=[^/]+\/[^/]+\/[^/]+\/([^/]+)\//.exec(
      String(req.headers.authorization ?? ''),
    )?.[1];
    const target = amzTarget.startsWith('DynamoDB_')
      ? dynalite
      : amzTarget.startsWith('AWSEvents.')
        ? events
        : amzTarget.startsWith('AmazonSSM.')
          ? ssm
          : signedFor === 'scheduler'
            ? scheduler
            : fauxqs;
    // The Host header is kept: fauxqs builds queue URLs from it, so they point at this router.
    const upstream = request(
      {
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: forwardable(req.headers),
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`local endpoint router: ${err.message}`);
    });
    req.pipe(upstream);
  });
  // Any port in Host: `crawler local`'s public endpoint forwards its own Host through this router.
  guardServer(server, { port: 'any' });
  return listenOnLoopback(server, port);
}

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !DROPPED.has(name)));
}
