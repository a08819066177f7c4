/**
 * `crawler local [--port 4566] [--state-dir DIR] [crawl options]`: a long-running local AWS. The
 * embedded emulators with the synthesized stack provisioned (names as `cdk deploy` shapes them), the
 * event-source pollers running the real handlers, and one endpoint on 127.0.0.1 for SQS, S3 and
 * DynamoDB, so the AWS CLI and SDKs send URLs and read results exactly as against AWS:
 *
 *   aws --endpoint-url http://127.0.0.1:4566 sqs send-message --queue-url <TaskQueueUrl> --message-body https://example.com/
 *   aws --endpoint-url http://127.0.0.1:4566 s3 ls s3://<PageBucketName>/results/default/
 *   crawler submit https://example.com/ --endpoint http://127.0.0.1:4566
 *
 * The crawl options given here are the defaults of crawls started by a plain URL message (the
 * `default` crawl): they reach the fetch and render functions as DEFAULT_CRAWL_CONFIG, as a deployed stack's
 * environment would carry them. SQS answers in both protocols (JSON, and the query protocol of older
 * clients such as Debian's awscli: local/sqs-query-gateway.ts). State persists in the state dir like
 * `crawler crawl`'s (queues, messages, objects, items), so a restart resumes; one process per dir.
 * SIGINT / SIGTERM stop it cleanly (pollers finish their invocations, the lock is released).
 *
 * Only this machine's signed AWS clients are served: web pages in a local browser are refused
 * (foreign Host or Origin, preflights, unsigned requests: local/request-guard.ts), and the names
 * derive from the state dir's random instance id, so none can be guessed (local/README.md).
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { parseCrawlConfig } from '../lambdas/core/crawl/index.ts';
import { FUNCTION_ENV, OUTPUTS, STACK_NAME } from '../lambdas/shared/contracts.ts';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from '../local/aws-clients.ts';
import { parseTemplate } from '../local/cfn-template.ts';
import type { LocalStackDescription } from '../local/cloudformation-describe.ts';
import { type LocalAws, type RuntimeStats, StateDirError, startLocalAws } from '../local/local-aws.ts';
import { type SqsQueryGateway, startSqsQueryGateway } from '../local/sqs-query-gateway.ts';
import { stackTemplate } from '../local/stack-template.ts';
import { resolveStateDir } from '../local/state-dir.ts';
import { CRAWL_OPTIONS_HELP, parseCrawlOptions } from './crawl-options.ts';
import { defineCommand } from './define-command.ts';
import { extractOptions } from './own-options.ts';
import { UsageError } from './usage-error.ts';

export const DEFAULT_LOCAL_PORT = 4566;

export const LOCAL_USAGE = `usage: crawler local [options]
runs a local AWS (SQS, S3, DynamoDB and EventBridge's PutEvents on one endpoint, the stack provisioned, the handlers running)
until Ctrl-C, for the AWS CLI, SDKs and \`crawler submit/status/results/get/cancel --endpoint\`
  --port N             the endpoint's port on 127.0.0.1 (default ${DEFAULT_LOCAL_PORT}, LocalStack's; 0 = any free one);
                       it serves SigV4-signed requests only (the AWS CLI and SDKs), never web pages
  --state-dir DIR      where the local AWS keeps its state (default .crawler, or $CRAWLER_STATE_DIR)
  --log-level L        the handlers' JSON logs on stdout: debug, info, warn (default), error, silent
  --json               print {endpoint, stateDir, outputs, pid} as one JSON line when ready
  --quiet              no progress on stderr
defaults for crawls started by a plain URL message (\`aws sqs send-message --message-body URL\`):
${CRAWL_OPTIONS_HELP.replace(/\n {2}--sitemap[^\n]*/, '').replace(/\n {2}--seeds-file[^\n]*\n[^\n]*/, '')}
  (--concurrency sets the fetch function's concurrent invocations, for every crawl)`;

const OWN = { port: 'string', json: 'boolean', 'log-level': 'string' } as const;
const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'];
/** Stands in for the URL `parseCrawlOptions` requires; `local` takes none. */
const NO_URL = 'http://crawler-local.invalid/';

export interface LocalCommandOptions {
  port: number;
  stateDir: string | undefined;
  json: boolean;
  quiet: boolean;
  logLevel: string;
  concurrency: number | undefined;
  /** DEFAULT_CRAWL_CONFIG: the crawl options given, as a partial crawl config. */
  defaults: Record<string, unknown>;
}

export function parseLocalOptions(args: string[]): LocalCommandOptions {
  const { own, rest } = extractOptions(args, OWN, LOCAL_USAGE);
  const crawl = parseCrawlOptions([...rest, NO_URL], { usage: LOCAL_USAGE, ownOptions: Object.keys(OWN) });
  const urls = crawl.urls.filter((url) => url !== NO_URL);
  if (urls.length > 0) {
    throw new UsageError(
      `local takes no URLs (got ${urls[0]}); send them to its task queue, or \`crawler submit URL --endpoint ...\``,
    );
  }
  for (const [flag, given] of [
    ['--out', crawl.out],
    ['--endpoint', crawl.endpoint],
    ['--sitemap', crawl.sitemap],
    ['--seeds-file', crawl.seedsFile],
    ['--since', crawl.since],
    ['--events', crawl.events],
    // Credentials are a crawl's, kept in its own parameter: a plain URL message has no crawl to own them.
    ['--header, --cookie, --cookie-file, --basic-auth or a --proxy user', crawl.credentials],
  ] as const) {
    if (given !== undefined)
      throw new UsageError(`local has no ${flag}; \`crawler local --help\` lists its options`);
  }
  const portText = own.port ?? String(DEFAULT_LOCAL_PORT);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    throw new UsageError(`--port expects a port number from 0 to 65535, got ${JSON.stringify(portText)}`);
  }
  const logLevel = own['log-level'] ?? 'warn';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new UsageError(
      `--log-level expects one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`,
    );
  }
  // Only what was given: the schema's defaults stay the handler's to apply.
  const defaults: Record<string, unknown> = { ...crawl.config };
  if (defaults.include !== undefined && (defaults.include as string[]).length === 0) delete defaults.include;
  if (defaults.exclude !== undefined && (defaults.exclude as string[]).length === 0) delete defaults.exclude;
  return {
    port,
    stateDir: crawl.stateDir,
    json: own.json ?? false,
    quiet: crawl.quiet,
    logLevel,
    concurrency: crawl.concurrency,
    defaults,
  };
}

export interface LocalServer {
  endpoint: string;
  stateDir: string;
  outputs: Record<string, string>;
  local: LocalAws;
  gateway: SqsQueryGateway;
  stop(): Promise<void>;
}

/** Starts everything `crawler local` runs; the command adds the printing and the signal handling. */
export async function startLocalServer(options: LocalCommandOptions): Promise<LocalServer> {
  // Fail on bad defaults here, not in every fetch invocation.
  parseCrawlConfig({ ...options.defaults, crawlId: 'default' });
  const stateDir = resolveStateDir(options.stateDir);
  const local = await startLocalAws({
    template: parseTemplate(await stackTemplate()),
    stackName: STACK_NAME,
    stateDir,
    // The emulators' own router listens on a free port; the public endpoint is the gateway.
    port: 0,
    handlerEnvOverrides: {
      LOG_LEVEL: options.logLevel,
      [FUNCTION_ENV.defaultCrawlConfig]: JSON.stringify(options.defaults),
    },
    ...(options.concurrency ? { concurrencyOverride: { FetchFunction: options.concurrency } } : {}),
  }).catch((error: unknown) => {
    throw error instanceof StateDirError ? new UsageError(`--state-dir ${error.message}`) : error;
  });
  let gateway: SqsQueryGateway;
  let stack: LocalStackDescription | undefined;
  try {
    gateway = await startSqsQueryGateway({
      upstream: local.endpoints.sqs,
      port: options.port,
      rewriteOrigins: [local.endpoints.sqs, local.endpoints.s3, local.endpoints.dynamodb],
      stack: () => stack,
    });
  } catch (error) {
    await local.stop();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new PortInUseError(
        `port ${options.port} on 127.0.0.1 is in use (LocalStack, another \`crawler local\`?); pass --port N (0 = any free one)`,
      );
    }
    throw error;
  }
  const internal = [local.endpoints.sqs, local.endpoints.s3, local.endpoints.dynamodb].map(
    (u) => new URL(u).origin,
  );
  const outputs = Object.fromEntries(
    Object.entries(local.outputs).map(([key, value]) => {
      const origin = internal.find((o) => value.startsWith(`${o}/`));
      return [key, origin === undefined ? value : `${gateway.url}${value.slice(origin.length)}`];
    }),
  );
  stack = {
    stackName: STACK_NAME,
    stackId: `arn:aws:cloudformation:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:stack/${STACK_NAME}/${randomUUID()}`,
    createdAt: new Date(),
    outputs,
  };
  await local.start();
  // Schedules fire here, on this machine's clock, as long as `crawler local` runs.
  const stopSchedules = local.scheduler?.start();
  let stopping: Promise<void> | undefined;
  return {
    endpoint: gateway.url,
    stateDir,
    outputs,
    local,
    gateway,
    stop: () => {
      stopping ??= (async () => {
        stopSchedules?.();
        try {
          await gateway.stop();
        } finally {
          await local.stop();
        }
      })();
      return stopping;
    },
  };
}

export class PortInUseError extends Error {
  override name = 'PortInUseError';
}

export const localCommand = defineCommand({
  usage: LOCAL_USAGE,
  parse: (args) => ({ options: parseLocalOptions(args) }),
  run: async ({ io, options }) => {
    const progress = options.quiet ? () => {} : (line: string) => io.stderr.write(`${line}\n`);
    progress(`crawler local: starting (state in ${resolveStateDir(options.stateDir)})`);
    let server: LocalServer;
    try {
      server = await startLocalServer(options);
    } catch (error) {
      if (error instanceof PortInUseError) {
        io.stderr.write(`crawler local: ${error.message}\n`);
        return 1;
      }
      throw error;
    }
    io.stdout.write(
      options.json
        ? `${JSON.stringify({ endpoint: server.endpoint, stateDir: server.stateDir, outputs: server.outputs, pid: process.pid })}\n`
        : `${describeReady(server, options)}\n`,
    );

    let last = describeActivity(server.local.stats());
    const ticker = setInterval(() => {
      const line = describeActivity(server.local.stats());
      if (line !== last) progress(`crawler local: ${line}`);
      last = line;
    }, 5_000);
    ticker.unref();

    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
    const stopped = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopped.signal.aborted) {
        io.stderr.write(`crawler local: ${signal} again, exiting now\n`);
        process.exit(130);
      }
      progress(`crawler local: ${signal}: stopping (in-flight invocations finish first)`);
      stopped.abort();
    };
    for (const signal of signals) process.on(signal, onSignal);
    try {
      await once(stopped.signal, 'abort');
      clearInterval(ticker);
      await server.stop();
      progress('crawler local: stopped');
      return 0;
    } finally {
      for (const signal of signals) process.off(signal, onSignal);
    }
  },
});

/** What `crawler local` prints when it is ready (without `--json`): where it is, and commands to try. */
export function describeReady(
  server: Pick<LocalServer, 'endpoint' | 'stateDir' | 'outputs'>,
  options: Pick<LocalCommandOptions, 'defaults'>,
): string {
  const width = Math.max(...Object.keys(server.outputs).map((key) => key.length));
  const outputs = Object.entries(server.outputs)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `  ${key.padEnd(width)}  ${value}`);
  const e = server.endpoint;
  const defaults = Object.keys(options.defaults).length > 0 ? JSON.stringify(options.defaults) : 'none';
  return [
    `crawler local: AWS endpoint ${e} (SQS, S3, DynamoDB, EventBridge PutEvents; region us-east-1, any credentials, signed requests only)`,
    `  state: ${server.stateDir}`,
    'stack outputs:',
    ...outputs,
    `defaults for plain URL messages (crawl "default"): ${defaults}`,
    'try:',
    // The JSON form: AWS CLI v1 downloads a parameter that starts with http:// or https:// and would
    // send the page instead (unless cli_follow_urlparam = false); v2 and the SDKs take a URL as it is.
    `  aws --endpoint-url ${e} sqs send-message --queue-url ${server.outputs[OUTPUTS.taskQueueUrl]} --message-body '${JSON.stringify({ v: 1, crawlId: 'default', url: 'https://example.com/', depth: 0 })}'`,
    `  aws --endpoint-url ${e} s3 ls s3://${server.outputs[OUTPUTS.pageBucketName]}/results/default/`,
    `  crawler submit https://example.com/ --endpoint ${e}`,
    'Ctrl-C stops it.',
  ].join('\n');
}

function describeActivity(stats: RuntimeStats): string {
  return Object.entries(stats.byFunction)
    .map(
      ([fn, s]) =>
        `${fn} ${s.invocations} invocations, ${s.messagesDeleted} messages done, ${s.itemFailures} retried`,
    )
    .join('; ');
}
