// Fault injection: the whole pipeline (embedded emulators provisioned from the synthesized stack, the
// real fetch and aggregate handlers behind the local event-source pollers) crawls a generated site of
// 1,000+ pages on 127.0.0.1 while AWS misbehaves: tasks delivered twice, handlers crashing mid-batch,
// SQS/S3/DynamoDB calls failing (before or after they took effect), a slow emulator. The faults come
// from a proxy in front of the emulators (test/fixtures/fault-proxy.ts) and from a crashing wrapper of
// the real handler (test/fixtures/faulty-handler.ts); no product code is changed.
//
// Under each fault the crawl must end, and then: every discovered URL has exactly one result in the
// index (raw lines counted per key in the S3 parts: at most one, except the documented crash-window
// duplicate, which readers drop), the results equal the site's plan, the counters item and
// summary.json equal the index, nothing sits in a DLQ, and completion was detected once (the summary
// written once, counted at the proxy).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { QueryCommand, ScanCommand, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { FETCH_EVENT_SOURCE } from '../../cdk/limits.ts';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { redrive } from '../../cli/redrive-command.ts';
import { crawlShardPks } from '../../lambdas/adapters/frontier-schema.ts';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { type IndexLine, readCrawlResults } from '../../lambdas/core/archive/index.ts';
import { OUTCOMES } from '../../lambdas/core/base/index.ts';
import { type CrawlConfig, parseCrawlConfig } from '../../lambdas/core/crawl/index.ts';
import { resultsPrefix, STACK_NAME, summaryKey } from '../../lambdas/shared/contracts.ts';
import { requiredOutput } from '../../lambdas/shared/required-output.ts';
import { submitCrawl } from '../../lambdas/submission/submit-crawl.ts';
import { type AwsClients, createClients, destroyClients } from '../../local/aws-clients.ts';
import { type CfnTemplate, parseTemplate } from '../../local/cfn-template.ts';
import { type Emulators, startEmulators } from '../../local/emulators.ts';
import type { IdleSnapshot } from '../../local/idle.ts';
import { type LocalAws, type RuntimeStats, startLocalAws } from '../../local/local-aws.ts';
import {
  type CallInfo,
  type FaultProxy,
  type FaultProxyStats,
  type FaultRule,
  seededRandom,
  startFaultProxy,
} from '../fixtures/fault-proxy.ts';
import {
  type CrashLog,
  crashLog,
  type FaultyHandlerSettings,
  useFaultyHandler,
} from '../fixtures/faulty-handler.ts';
import {
  diffAgainstPlan,
  type GeneratedSite,
  type SiteExpectation,
  startGeneratedSite,
} from '../fixtures/generated-site.ts';
import { patchProperties } from '../fixtures/local-template.ts';
import { type RuntimeProcessOptions, spawnRuntime } from '../fixtures/runtime-process.ts';

const FETCH = 'FetchFunction';
const AGGREGATE = 'AggregateFunction';
const MAX_DEPTH = 6;

interface Scenario {
  name: string;
  pages: number;
  seed: number;
  /** Forward links per page (the site's default 8); fewer make more layers. */
  linksPerPage?: number;
  /** Fetch slots (local "containers"). */
  fetchSlots: number;
  /** Proxy rules, made once the stack is provisioned (they may name its queues). */
  rules: (outputs: Record<string, string>) => FaultRule[];
  /** Handler env AWS_MAX_ATTEMPTS; undefined = the SDK's default (3). */
  sdkAttempts?: number;
  crash?: Partial<Record<typeof FETCH | typeof AGGREGATE, Omit<FaultyHandlerSettings, 'runId'>>>;
  idleTimeoutMs: number;
  /** Both functions' Timeout (s); both queues' VisibilityTimeout is 6x it (the stack's rule). Default 10. */
  functionTimeoutSeconds?: number;
  /**
   * Both queues' VisibilityTimeout (s), when not 6x the function timeout: it is how long a message
   * lost in a failed ReceiveMessage (the response lost after SQS took effect) stays hidden.
   */
  visibilityTimeoutSeconds?: number;
  /**
   * Faults so frequent that some messages use up their receives: once the pipeline is idle the faults
   * stop and both DLQs are redriven (`crawler redrive`'s function), as an operator would, and the
   * crawl must then end exact.
   */
  redriveAfterFaults?: boolean;
  /**
   * The compute runs in a child process that is SIGKILLed `count` times, each `[minMs, maxMs]` after
   * it started polling (a whole-process kill: what a Lambda timeout or OOM does to every in-flight
   * invocation at once), and is started again after each kill; the last one runs until idle.
   */
  kills?: { count: number; minMs: number; maxMs: number };
  /** The submit goes through the faults too (else straight to the emulators): its wake is a visit message. */
  submitThroughFaults?: boolean;
}

interface KillRun {
  kills: number;
  /** Invocations the killed processes had finished, and all of them. */
  invocations: number;
  /** Of those, invocations cut off at the function timeout. */
  timeouts: number;
  /** Requests beyond the plan (a page fetched again after its invocation died unreported). */
  refetches: number;
}

interface RawIndex {
  /** Lines per frontier key, as stored (no deduplication). */
  linesByKey: Map<string, string[]>;
  /** The parts (S3 keys) each frontier key has a line in. */
  partsByKey: Map<string, string[]>;
  parts: number;
  lines: number;
}

interface Outcome {
  scenario: Scenario;
  site: GeneratedSite;
  plan: SiteExpectation;
  config: CrawlConfig;
  idle: IdleSnapshot;
  /** Set when the pipeline did not go idle in time. */
  idleError: string | undefined;
  results: IndexLine[];
  raw: RawIndex;
  counters: Awaited<ReturnType<ReturnType<typeof createFrontierStore>['readCounters']>>;
  summary: Record<string, unknown> | undefined;
  dlq: Record<string, string[]>;
  proxy: FaultProxyStats;
  summaryWrites: ReturnType<FaultProxy['objectWrites']>;
  /** URLs whose first index line was written after summary.json (completion declared too early). */
  lateLines: string[];
  crashes: Record<string, CrashLog>;
  /** Planned URLs without a result: their frontier item and the faults injected on it. */
  missing: string[];
  /** Host items left (active hosts), as stored: a finished crawl has none. */
  hostItems: string[];
  /** URL items in the FrontierTable by `st`. */
  frontierStates: Record<string, number>;
  runtime: RuntimeStats;
  /** Messages moved back from each DLQ after the faults stopped (redriveAfterFaults). */
  redriven: Record<string, number>;
  pollerLog: string[];
  /** Invocation durations (ms) by function: median and max. */
  durations: Record<string, { p50: number; max: number }>;
  seconds: number;
  killRun?: KillRun;
}

/** The synthesized stack, with the queue/function timeouts shortened so redeliveries happen in the test. */
function faultTemplate(scenario: Scenario, runId: string): CfnTemplate {
  const template = parseTemplate(synthesizeTemplate());
  // Visibility = 6x the function timeout (the stack's own rule), so a failed batch returns within a minute.
  const timeout = scenario.functionTimeoutSeconds ?? 10;
  const visibility = scenario.visibilityTimeoutSeconds ?? 6 * timeout;
  patchProperties(template, FETCH, { Timeout: timeout });
  patchProperties(template, 'TaskQueue', { VisibilityTimeout: visibility });
  patchProperties(template, AGGREGATE, { Timeout: timeout });
  patchProperties(template, 'ResultsQueue', { VisibilityTimeout: visibility });
  for (const [fn, settings] of Object.entries(scenario.crash ?? {})) {
    if (settings) useFaultyHandler(template, fn, { ...settings, runId: `${runId}-${fn}` });
  }
  return template;
}

async function rawIndex(blobs: S3Blobs, crawlId: string): Promise<RawIndex> {
  const linesByKey = new Map<string, string[]>();
  const partsByKey = new Map<string, string[]>();
  let parts = 0;
  let lines = 0;
  for await (const key of blobs.list(resultsPrefix(crawlId))) {
    if (!key.endsWith('.jsonl.gz')) continue;
    parts++;
    for (const text of gunzipSync(await blobs.get(key))
      .toString('utf8')
      .split('\n')) {
      if (text.trim() === '') continue;
      const line = JSON.parse(text) as { key: string };
      lines++;
      linesByKey.set(line.key, [...(linesByKey.get(line.key) ?? []), text]);
      partsByKey.set(line.key, [...(partsByKey.get(line.key) ?? []), key]);
    }
  }
  return { linesByKey, partsByKey, parts, lines };
}

interface UrlItem {
  url: string;
  key: string;
  st: string;
  outcome?: string;
  parent?: string;
}

/** Every URL item of the crawl in the FrontierTable, in every host's partition (for diagnosing a lost URL). */
async function urlItems(clients: AwsClients, table: string, crawlId: string): Promise<Map<string, UrlItem>> {
  const byUrl = new Map<string, UrlItem>();
  let start: ScanCommandOutput['LastEvaluatedKey'];
  do {
    const page: ScanCommandOutput = await clients.dynamodb.send(
      new ScanCommand({
        TableName: table,
        ConsistentRead: true,
        FilterExpression: 'begins_with(pk, :prefix)',
        ExpressionAttributeValues: { ':prefix': { S: `URLS#${crawlId}#` } },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) {
      const url = item.url?.S ?? '';
      byUrl.set(url, {
        url,
        key: item.sk?.S ?? '',
        st: item.st?.S ?? '?',
        ...(item.outcome?.S ? { outcome: item.outcome.S } : {}),
        ...(item.parent?.S ? { parent: item.parent.S } : {}),
      });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return byUrl;
}

async function activeHosts(clients: AwsClients, table: string, crawlId: string): Promise<string[]> {
  const hosts: string[] = [];
  for (const pk of crawlShardPks(crawlId)) {
    const out = await clients.dynamodb.send(
      new QueryCommand({
        TableName: table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :host)',
        ExpressionAttributeValues: { ':pk': { S: pk }, ':host': { S: 'HOST#' } },
      }),
    );
    for (const item of out.Items ?? [])
      hosts.push(
        JSON.stringify(
          Object.fromEntries(Object.entries(item).map(([k, v]) => [k, v.S ?? v.N ?? v.SS ?? '?'])),
        ),
      );
  }
  return hosts;
}

async function drainDlq(clients: AwsClients, url: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const out = await clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) return bodies;
    for (const m of messages) {
      const code = m.MessageAttributes?.code?.StringValue;
      bodies.push(`${code ? `[${code}] ` : ''}${(m.Body ?? '').slice(0, 300)}`);
    }
  }
}

async function runScenario(scenario: Scenario): Promise<Outcome> {
  const runId = `${scenario.name}-${randomUUID().slice(0, 8)}`;
  const crawlId = `faults-${randomUUID().slice(0, 8)}`;
  const site = await startGeneratedSite({
    pages: scenario.pages,
    seed: scenario.seed,
    ...(scenario.linksPerPage ? { linksPerPage: scenario.linksPerPage } : {}),
  });
  const plan = site.plan({ maxDepth: MAX_DEPTH });
  let emulators: Emulators | undefined;
  let proxy: FaultProxy | undefined;
  let local: LocalAws | undefined;
  let direct: AwsClients | undefined;
  const pollerLog: string[] = [];
  const durations = new Map<string, number[]>();
  const recordDuration = (fn: string, ms: number) => durations.set(fn, [...(durations.get(fn) ?? []), ms]);
  const template = faultTemplate(scenario, runId);
  const handlerEnv = {
    // FAULTS_LOG_LEVEL=warn shows the handlers' own log lines when a scenario needs explaining.
    LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? 'silent',
    ...(scenario.sdkAttempts === undefined ? {} : { AWS_MAX_ATTEMPTS: String(scenario.sdkAttempts) }),
  };
  const tmp = await mkdtemp(join(tmpdir(), 'faults-'));
  try {
    emulators = await startEmulators();
    proxy = await startFaultProxy({ upstream: emulators.endpoints, seed: scenario.seed, enabled: false });
    // Provisioned here under a known instance id, so that a runtime process finds the same resources.
    local = await startLocalAws({
      template,
      stackName: STACK_NAME,
      instanceId: runId,
      endpoint: proxy.endpoints,
      concurrencyOverride: { [FETCH]: scenario.fetchSlots },
      handlerEnvOverrides: handlerEnv,
      log: (line) => pollerLog.push(line),
      onInvocation: (report) => recordDuration(report.functionLogicalId, report.durationMs),
    });
    // The CLI side (submit, verification) talks to the emulators directly.
    direct = createClients(emulators.endpoints);
    const outputs = local.outputs;
    const config = parseCrawlConfig({
      crawlId,
      seeds: [`${site.origin}/`],
      allowPrivate: true,
      delayMs: 0,
      maxDepth: MAX_DEPTH,
      // A request deadline well under the (shortened) function timeout: a visit starts a request only
      // if its deadline falls before the invocation's.
      limits: { totalTimeoutMs: 2_000 },
      createdAt: new Date().toISOString(),
    });
    proxy.setRules(scenario.rules(outputs));
    proxy.setEnabled(true);
    const started = Date.now();
    let lastCheck: IdleSnapshot | undefined;
    let idleError: string | undefined;
    let idle: IdleSnapshot;
    let killRun: KillRun | undefined;
    if (scenario.kills) {
      await submitCrawl({ clients: direct, outputs }, config);
      const templateFile = join(tmp, 'template.json');
      await writeFile(templateFile, JSON.stringify(template));
      const runtime: RuntimeProcessOptions = {
        templateFile,
        stackName: STACK_NAME,
        instanceId: runId,
        endpoints: proxy.endpoints,
        concurrency: { [FETCH]: scenario.fetchSlots },
        env: handlerEnv,
        idleTimeoutMs: scenario.idleTimeoutMs,
      };
      const killed = await runWithKills(scenario.kills, runtime, seededRandom(scenario.seed), recordDuration);
      idleError = killed.error;
      idle = { queues: {}, checks: 0 };
      killRun = {
        kills: killed.kills,
        invocations: killed.invocations,
        timeouts: killed.timeouts,
        refetches: [...plan.expectedHits].reduce(
          (sum, [target, want]) => sum + Math.max(0, (site.hits.get(target) ?? 0) - want),
          0,
        ),
      };
    } else {
      await local.start();
      if (scenario.submitThroughFaults) {
        const faulty = createClients(proxy.endpoints);
        try {
          await submitCrawl({ clients: faulty, outputs }, config);
        } finally {
          destroyClients(faulty);
        }
      } else await submitCrawl({ clients: direct, outputs }, config);
      // A result parked in the ResultsDLQ holds its host's visit (a host drains only once its
      // results are indexed), so the task queue never empties before the redrive: with one, phase 1
      // ends once no result has flowed for a while.
      const stall = stallWatch(site.hits);
      const parked = parkedWatch(stall);
      idle = await local
        .waitForIdle({
          timeoutMs: scenario.idleTimeoutMs,
          signal: scenario.redriveAfterFaults ? AbortSignal.any([parked.signal, stall.signal]) : stall.signal,
          onCheck: (snapshot) => {
            lastCheck = snapshot;
            stall.check();
            parked.check(snapshot);
          },
        })
        .catch((error: unknown) => {
          if (stall.signal.aborted) idleError = stall.why();
          else if (!parked.signal.aborted) idleError = String(error);
          return lastCheck ?? { queues: {}, checks: 0 };
        });
    }
    proxy.setEnabled(false);
    const redriven: Record<string, number> = {};
    // A message still in flight at a redrive (mid-way through its receives, or finding its host
    // leased by a visit that failed under the faults) can reach its DLQ after it: the alarm fires
    // again and the operator redrives again, as here, a bounded number of times.
    for (
      let round = 0;
      scenario.redriveAfterFaults && idleError === undefined && round < REDRIVE_ROUNDS;
      round++
    ) {
      let moved = 0;
      for (const [dlq, source] of [
        ['TaskDlqUrl', 'TaskQueueUrl'],
        ['ResultsDlqUrl', 'ResultsQueueUrl'],
      ] as const) {
        const url = requiredOutput(outputs, dlq);
        const count = (await redrive(direct.sqs, url, requiredOutput(outputs, source), crawlId)).moved;
        redriven[dlq] = (redriven[dlq] ?? 0) + count;
        moved += count;
      }
      if (round > 0 && moved === 0) break;
      redriven.rounds = round + 1;
      const stall = stallWatch(site.hits);
      // Parked again (a message in flight at this redrive reached its DLQ after it): the next round
      // redrives it, as the operator does when the DLQ alarm fires again.
      const parked = parkedWatch(stall);
      await local
        .waitForIdle({
          timeoutMs: scenario.idleTimeoutMs,
          signal: AbortSignal.any([parked.signal, stall.signal]),
          onCheck: (snapshot) => {
            lastCheck = snapshot;
            stall.check();
            parked.check(snapshot);
          },
        })
        .catch((error: unknown) => {
          if (stall.signal.aborted) idleError = stall.why();
          else if (!parked.signal.aborted) idleError = String(error);
        });
    }
    const seconds = (Date.now() - started) / 1000;
    const runtime = local.stats();
    await local.stop();

    const blobs = new S3Blobs(direct.s3, requiredOutput(outputs, 'PageBucketName'));
    const raw = await rawIndex(blobs, crawlId);
    const results = await readCrawlResults(blobs, crawlId);
    const frontier = createFrontierStore(direct.dynamodb, requiredOutput(outputs, 'FrontierTableName'));
    const counters = await frontier.readCounters(crawlId);
    let summary: Record<string, unknown> | undefined;
    try {
      summary = JSON.parse(new TextDecoder().decode(await blobs.get(summaryKey(crawlId))));
    } catch {
      summary = undefined;
    }
    const dlq = {
      TaskDLQ: await drainDlq(direct, requiredOutput(outputs, 'TaskDlqUrl')),
      ResultsDLQ: await drainDlq(direct, requiredOutput(outputs, 'ResultsDlqUrl')),
    };
    const writes = proxy.objectWrites();
    const summaryWrites = writes.filter((w) => w.key === summaryKey(crawlId));
    const firstSummary = summaryWrites.find((w) => w.effect);
    const writtenAt = new Map<string, number>();
    for (const w of writes) if (w.effect && !writtenAt.has(w.key)) writtenAt.set(w.key, w.at);
    const lateLines = firstSummary
      ? [...raw.partsByKey].flatMap(([key, parts]) => {
          const first = Math.min(...parts.map((part) => writtenAt.get(part) ?? Number.POSITIVE_INFINITY));
          if (first <= firstSummary.at) return [];
          const line = raw.linesByKey.get(key)?.[0] ?? '';
          return [`${(JSON.parse(line) as { url: string }).url} (${first - firstSummary.at} ms after)`];
        })
      : [];
    const items = await urlItems(direct, requiredOutput(outputs, 'FrontierTableName'), crawlId);
    const hostItems = await activeHosts(direct, requiredOutput(outputs, 'FrontierTableName'), crawlId);
    const byKey = new Map([...items.values()].map((item) => [item.key, item]));
    const resultUrls = new Set(results.map((line) => line.url));
    const injected = proxy.faults();
    const missing = [...plan.outcomes.keys()]
      .filter((url) => !resultUrls.has(url))
      .map((url) => {
        const item = items.get(url);
        if (!item) return `${url}: no frontier item`;
        const hits = injected
          .filter((f) => f.detail.includes(item.key.slice(0, 16)))
          .map((f) => `${f.operation}/${f.timing}: ${f.detail}`);
        const parent = item.parent ? byKey.get(item.parent) : undefined;
        const parentText = parent
          ? `${new URL(parent.url).pathname} (st=${parent.st})`
          : (item.parent ?? '-');
        return `${url}: st=${item.st} outcome=${item.outcome ?? '-'} parent=${parentText}; faults on it: ${hits.join(' | ') || 'none'}`;
      });
    const crashes: Record<string, CrashLog> = {};
    for (const fn of Object.keys(scenario.crash ?? {})) crashes[fn] = crashLog(`${runId}-${fn}`);
    return {
      scenario,
      site,
      plan,
      config,
      idle,
      idleError,
      results,
      raw,
      counters,
      summary,
      dlq,
      proxy: proxy.stats(),
      summaryWrites,
      lateLines,
      crashes,
      missing,
      frontierStates: countBy(items.values(), (item) => item.st),
      hostItems,
      runtime,
      redriven,
      pollerLog,
      durations: Object.fromEntries(
        [...durations].map(([fn, list]) => {
          const sorted = [...list].sort((a, b) => a - b);
          return [fn, { p50: sorted[Math.floor(sorted.length / 2)] ?? 0, max: sorted.at(-1) ?? 0 }];
        }),
      ),
      seconds,
      ...(killRun ? { killRun } : {}),
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
    await local?.stop();
    if (direct) destroyClients(direct);
    await proxy?.stop();
    await emulators?.stop();
    await site.close();
  }
}

/**
 * Runs the compute in child processes: SIGKILLs each at a random instant `kills.count` times, starting
 * a new one after each kill (the queues hold what the dead one had in flight until their visibility
 * timeout), and lets the last run until the pipeline is idle.
 */
async function runWithKills(
  kills: NonNullable<Scenario['kills']>,
  runtime: RuntimeProcessOptions,
  random: () => number,
  onInvocation: (fn: string, ms: number) => void,
): Promise<{ kills: number; invocations: number; timeouts: number; error?: string }> {
  let killed = 0;
  let invocations = 0;
  let timeouts = 0;
  const deadline = Date.now() + runtime.idleTimeoutMs;
  for (;;) {
    const child = spawnRuntime(runtime, (line) => {
      if (!('invocation' in line)) return;
      invocations++;
      if (line.invocation.outcome === 'timeout') timeouts++;
      onInvocation(line.invocation.fn, line.invocation.ms);
    });
    if (killed < kills.count) {
      await child.ready.catch(() => {});
      const wait = kills.minMs + random() * (kills.maxMs - kills.minMs);
      const timer = new Promise<'kill'>((resolve) => setTimeout(resolve, wait, 'kill'));
      if ((await Promise.race([timer, child.exited.then(() => 'exited' as const)])) === 'kill') {
        child.kill();
        await child.exited;
        killed++;
        continue;
      }
    }
    const timeout = setTimeout(() => child.kill(), Math.max(0, deadline - Date.now()));
    const exit = await child.exited;
    clearTimeout(timeout);
    if (exit.idle) return { kills: killed, invocations, timeouts };
    const why = exit.signal ? `killed at the idle deadline` : `exited with ${exit.code}`;
    return {
      kills: killed,
      invocations,
      timeouts,
      error: `the runtime ${why}: ${exit.stderr.slice(-1500)}`,
    };
  }
}

/**
 * Aborts once the site has served no request for STALL_MS (`check` runs at each idle check): the
 * crawl is stuck, however long it has been running.
 */
function stallWatch(hits: ReadonlyMap<string, number>): {
  signal: AbortSignal;
  check(): void;
  why(): string;
  /** How long no request has reached the site. */
  quietMs(): number;
} {
  const controller = new AbortController();
  const served = () => {
    let total = 0;
    for (const count of hits.values()) total += count;
    return total;
  };
  let last = served();
  let since = Date.now();
  return {
    signal: controller.signal,
    check() {
      const now = served();
      if (now !== last) {
        last = now;
        since = Date.now();
      } else if (Date.now() - since > STALL_MS) controller.abort();
    },
    why: () => `stalled: not idle, and no request reached the site for ${STALL_MS / 1000} s (${last} served)`,
    quietMs: () => Date.now() - since,
  };
}

/**
 * Aborts once the crawl waits only on what a DLQ holds, for PARKED_STALL_MS: a result parked in the
 * ResultsDLQ with the results queue empty (its host cannot drain until it is indexed), or a visit
 * parked in the TaskDLQ while no request flows (other hosts, one whose robots.txt keeps failing,
 * keep the task queue from emptying). The operator redrives on the DLQ alarm then.
 */
function parkedWatch(stall: ReturnType<typeof stallWatch>) {
  const controller = new AbortController();
  let since: number | undefined;
  return {
    signal: controller.signal,
    check(snapshot: IdleSnapshot) {
      const { ResultsDLQ: dlq, ResultsQueue: results, TaskDLQ: taskDlq } = snapshot.queues;
      const parked =
        ((dlq?.visible ?? 0) > 0 &&
          results !== undefined &&
          results.visible + results.inFlight + results.delayed === 0) ||
        ((taskDlq?.visible ?? 0) > 0 && stall.quietMs() > PARKED_STALL_MS);
      since = parked ? (since ?? Date.now()) : undefined;
      if (since !== undefined && Date.now() - since > PARKED_STALL_MS) controller.abort();
    },
  };
}

function countBy<T>(items: Iterable<T>, keyOf: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[keyOf(item)] = (counts[keyOf(item)] ?? 0) + 1;
  return counts;
}

/** Poller log lines grouped by their text without ids and numbers, most frequent first. */
function logDigest(lines: readonly string[], max = 12): string[] {
  const counts = new Map<string, number>();
  for (const line of lines) {
    const shape = line
      .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>')
      .replace(/\d+/g, 'N')
      .slice(0, 300);
    counts.set(shape, (counts.get(shape) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, max)
    .map(([shape, n]) => `${n}× ${shape}`);
}

function show(problems: readonly string[], max = 20): string {
  const head = problems.slice(0, max).join('\n  ');
  return problems.length > max ? `\n  ${head}\n  … and ${problems.length - max} more` : `\n  ${head}`;
}

function describeRun(o: Outcome): string {
  const dups = [...o.raw.linesByKey.values()].filter((lines) => lines.length > 1).length;
  const faults = o.proxy.totals;
  const crashes = Object.entries(o.crashes)
    .map(([fn, log]) => {
      const modes = countBy(log.crashes, (c) => (c.fellThrough ? 'mid→after' : c.mode));
      return `${fn}: ${log.crashes.length}/${log.invocations} crashed ${JSON.stringify(modes)}`;
    })
    .join(', ');
  const midCrashes = Object.values(o.crashes)
    .flatMap((log) => log.crashes)
    .filter((c) => c.diedAt)
    .map(
      (c) =>
        `${c.diedAt?.call}${c.diedAt?.tookEffect ? ' (took effect)' : ''} after ${c.calls.length - 1} calls`,
    );
  return [
    `${o.scenario.name}: ${o.seconds.toFixed(1)} s, ${o.results.length} results, ${o.raw.lines} raw lines in ${o.raw.parts} parts (${dups} keys duplicated)`,
    `  proxy: ${faults.calls} calls, ${faults.failedBefore} failed before, ${faults.failedAfter} failed after, ${faults.duplicated} duplicated, ${faults.delayed} delayed`,
    `  runtime: ${JSON.stringify(o.runtime.total)}`,
    Object.keys(o.redriven).length > 0 ? `  redriven after the faults: ${JSON.stringify(o.redriven)}` : '',
    `  invocation ms: ${JSON.stringify(o.durations)}`,
    crashes ? `  crashes: ${crashes}` : '',
    o.killRun
      ? `  whole-process kills: ${o.killRun.kills}, ${o.killRun.invocations} invocations, ${o.killRun.refetches} requests beyond the plan`
      : '',
    midCrashes.length > 0 ? `  died mid-batch at: ${midCrashes.join('; ')}` : '',
    o.idleError ? `  NOT IDLE: ${o.idleError}` : '',
    ...Object.entries(o.dlq).flatMap(([q, bodies]) => bodies.slice(0, 5).map((b) => `  ${q}: ${b}`)),
    ...logDigest(o.pollerLog).map((line) => `  log: ${line}`),
    `  counters: ${JSON.stringify(o.counters)}`,
    `  frontier URL items by st: ${JSON.stringify(o.frontierStates)}`,
    ...o.hostItems.map((item) => `  active host item: ${item}`),
    ...o.missing.slice(0, 15).map((m) => `  missing: ${m}`),
    `  summary writes: ${o.summaryWrites.map((w) => `${w.effect ? 'written' : 'not written'}/${w.clientStatus}${w.fault ? `/${w.fault}` : ''}`).join(', ')}`,
  ]
    .filter(Boolean)
    .join('\n');
}

/**
 * Every broken invariant of a finished scenario, as readable lines (all of them, not only the first).
 * `exactRequests`: each planned request target requested exactly as planned (no work repeated);
 * otherwise work may be repeated after a failure, but never skipped and never against robots.txt.
 * `rawDuplicates`: whether a key may have a second raw index line (the crash-window duplicate,
 * possible only when an aggregate invocation fails after writing its part).
 */
function violations(o: Outcome, checks: { exactRequests: boolean; rawDuplicates: boolean }): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, text: string) => {
    if (!ok) problems.push(text);
  };
  check(o.idleError === undefined, `the crawl did not end: ${o.idleError}`);

  // Every URL in the index once: raw lines per key in the S3 parts.
  for (const [key, lines] of o.raw.linesByKey) {
    if (lines.length < 2) continue;
    check(checks.rawDuplicates, `${lines.length} raw index lines for key ${key.slice(0, 12)}`);
    check(
      lines.every((line) => line === lines[0]),
      `different raw index lines for one key: ${lines.map((l) => l.slice(0, 160)).join(' // ')}`,
    );
  }

  // The results (deduplicated by the reader) equal the plan.
  const diff = diffAgainstPlan(o.site, o.plan, o.results);
  problems.push(...diff.results);
  check(
    o.results.length === o.plan.outcomes.size,
    `${o.results.length} results, planned ${o.plan.outcomes.size}`,
  );
  if (checks.exactRequests) problems.push(...diff.requests);
  else {
    problems.push(
      ...diff.requests.filter(
        (p) => p.startsWith('disallowed') || p.startsWith('unplanned') || / requested 0×/.test(p),
      ),
    );
  }

  // Nothing in the DLQs.
  for (const [queue, bodies] of Object.entries(o.dlq)) {
    for (const body of bodies) problems.push(`in the ${queue}: ${body}`);
  }

  // Counters exact: the counters item and summary.json equal the index.
  const byOutcome = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0])) as Record<string, number>;
  for (const line of o.results) byOutcome[line.outcome] = (byOutcome[line.outcome] ?? 0) + 1;
  const bytes = o.results.reduce((sum, line) => sum + line.bytes, 0);
  const requests = o.results.filter((line) => line.status !== undefined).length;
  const index = {
    state: 'complete',
    queued: o.results.length,
    done: o.results.length,
    byOutcome,
    bytes,
    requests,
  };
  const counters = o.counters;
  if (!counters) problems.push('no counters item');
  else {
    const seen = {
      state: counters.state,
      queued: counters.queued,
      done: counters.done,
      byOutcome: Object.fromEntries(OUTCOMES.map((outcome) => [outcome, counters.byOutcome[outcome] ?? 0])),
      bytes: counters.bytes,
      requests: counters.requests,
    };
    for (const [field, want] of Object.entries(index)) {
      const got = seen[field as keyof typeof seen];
      check(
        JSON.stringify(got) === JSON.stringify(want),
        `counters item ${field} = ${JSON.stringify(got)}, the index says ${JSON.stringify(want)}`,
      );
    }
  }
  if (!o.summary) problems.push('no summary.json');
  else {
    for (const [field, want] of Object.entries(index)) {
      const got = o.summary[field];
      check(
        JSON.stringify(got) === JSON.stringify(want),
        `summary.json ${field} = ${JSON.stringify(got)}, the index says ${JSON.stringify(want)}`,
      );
    }
  }

  // Completion detected once: summary.json written once, and only when every URL had its index line.
  const written = o.summaryWrites.filter((w) => w.effect).length;
  check(
    written === 1,
    `summary.json written ${written}× (${o.summaryWrites.map((w) => `${w.clientStatus}${w.fault ? `/${w.fault}` : ''}`).join(', ')})`,
  );
  for (const late of o.lateLines) problems.push(`index line written after summary.json: ${late}`);
  return problems;
}

function assertInvariants(o: Outcome, checks: { exactRequests: boolean; rawDuplicates: boolean }): void {
  const problems = violations(o, checks);
  assert.deepEqual(
    problems,
    [],
    `${o.scenario.name}: ${problems.length} invariants broken:${show(problems, 40)}`,
  );
}

const outcomes: Outcome[] = [];
after(() => {
  // What each run saw (faults injected, crashes, raw duplicates, timings): the numbers behind a verdict.
  for (const o of outcomes) process.stderr.write(`${describeRun(o)}\n`);
});

async function scenario(
  definition: Scenario,
  checks: { exactRequests: boolean; rawDuplicates: boolean },
  also?: (o: Outcome) => void,
): Promise<void> {
  const o = await runScenario(definition);
  outcomes.push(o);
  assert.ok(o.plan.fetchedPaths.size >= 1000, `${o.plan.fetchedPaths.size} pages`);
  also?.(o);
  assertInvariants(o, checks);
}

/** `rate` of the matching calls fail, half before and half after taking effect, as throttling or 5xx. */
function failing(rate: number, when: (call: CallInfo) => boolean): FaultRule {
  return {
    name: 'aws-errors',
    when,
    failBefore: rate / 2,
    failAfter: rate / 2,
    errors: ['throttle', 'internal', 'unavailable'],
  };
}

// Every call the pipeline makes, but not the test's own idle probe (GetQueueAttributes).
const everyCall = (call: CallInfo) => call.operation !== 'GetQueueAttributes';

const PAGES = 1000;
/** Redrives of both DLQs after the faults stop, each once the pipeline is idle (an operator on the alarm). */
const REDRIVE_ROUNDS = 3;
/**
 * The local runtime enforces function timeouts (a timed-out invocation is cut off and its unsent
 * pages fetched again). A short one cuts invocations for the machine's load (two suites side by side
 * on two cores), not for the scenario's faults, so the scenarios whose subject is not a timeout run
 * under 30 s (the stack's own fetch timeout is 60 s). Scenario (b) is about handlers that fail.
 */
const FUNCTION_TIMEOUT_SECONDS = 30;
/**
 * A crawl that makes progress may take as long as the machine's load makes it (a crawl of 1,000 pages
 * under 10 % faults took 230-280 s on two cores with other suites running, and once more than 270 s):
 * the wait for idle fails early only when no request has reached the site for STALL_MS. That is longer
 * than any quiet spell a crawl that ends may have: a claim whose send was lost waits for a wake past
 * VISIT_GRACE_MS (120 s); messages hidden by a lost receive come back after the visibility timeout.
 */
const STALL_MS = 180_000;
/** The backstops, for a crawl that fetches without end: they grow with the pages a scenario crawls. */
const BACKSTOP_MS_PER_PAGE = 600;
const IDLE_TIMEOUT_MS = 1000 * BACKSTOP_MS_PER_PAGE;
const TEST_TIMEOUT_MS = IDLE_TIMEOUT_MS + 60_000;
const LONG_IDLE_TIMEOUT_MS = IDLE_TIMEOUT_MS;
/**
 * No result flowing for this long with some in the ResultsDLQ, or no request with a visit in the
 * TaskDLQ: the crawl waits for their redrive.
 */
const PARKED_STALL_MS = 30_000;

// The scenarios spend most of their time waiting (visibility timeouts, claim leases, retry backoff),
// so they run side by side: the whole file takes about as long as its slowest scenarios.
describe('fault injection: a crawl of 1,000+ pages ends exact under AWS faults', {
  concurrency: 3,
  // Seven scenarios three at a time: three rounds of the longest backstop.
  timeout: 3 * (LONG_IDLE_TIMEOUT_MS + 150_000),
}, () => {
  it("(c) 10 % of SQS, S3 and DynamoDB calls fail, with the SDK's retries (3 attempts)", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await scenario(
      {
        name: 'c-aws-errors-sdk-retries',
        pages: PAGES,
        seed: 41,
        fetchSlots: 4,
        // The SDK's backoff makes a failing call take up to seconds.
        functionTimeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
        // A receive whose response is lost hides its messages for the visibility timeout: 90 s (6x)
        // chained twice or thrice nears the idle limit, so the queues keep the 30 s of a 5 s function.
        visibilityTimeoutSeconds: 30,
        rules: () => [failing(0.1, everyCall)],
        idleTimeoutMs: IDLE_TIMEOUT_MS,
      },
      { exactRequests: false, rawDuplicates: true },
      (o) => assert.ok(o.proxy.totals.failedBefore > 100 && o.proxy.totals.failedAfter > 100),
    );
  });

  it('(c) 10 % of SQS, S3 and DynamoDB calls fail, reaching the crawler (AWS_MAX_ATTEMPTS=1); the DLQs are redriven after', {
    // Two phases: the crawl under faults, then the redrive. The first is long: a task's chain of
    // failed receives takes about 60 s of backoff (2 s doubling) before the DLQ, and the crawl's six
    // levels of links wait on each other's chains (measured 224-280 s), so it has more time to end.
    timeout: LONG_IDLE_TIMEOUT_MS + 150_000,
  }, async () => {
    // With no SDK retries a task's handful of calls fails often enough that some tasks use up their
    // five receives and are parked in the TaskDLQ, as designed; the redrive then finishes the crawl.
    await scenario(
      {
        name: 'c-aws-errors-no-sdk-retries',
        pages: PAGES,
        seed: 51,
        fetchSlots: 4,
        sdkAttempts: 1,
        functionTimeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
        visibilityTimeoutSeconds: 30,
        rules: () => [failing(0.1, everyCall)],
        idleTimeoutMs: LONG_IDLE_TIMEOUT_MS,
        redriveAfterFaults: true,
      },
      { exactRequests: false, rawDuplicates: true },
    );
  });

  it('(c) 10 % of SQS sends and S3 writes fail, reaching the crawler (AWS_MAX_ATTEMPTS=1)', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const sends = (call: CallInfo) =>
      (call.service === 'sqs' &&
        (call.operation === 'SendMessageBatch' || call.operation === 'SendMessage')) ||
      (call.service === 's3' && call.operation === 'PutObject');
    await scenario(
      {
        name: 'c-send-errors-no-sdk-retries',
        pages: PAGES,
        seed: 71,
        fetchSlots: 4,
        sdkAttempts: 1,
        functionTimeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
        visibilityTimeoutSeconds: 30,
        rules: () => [failing(0.1, sends)],
        idleTimeoutMs: IDLE_TIMEOUT_MS,
      },
      { exactRequests: false, rawDuplicates: true },
    );
  });

  it('(b) the fetch and aggregate handlers crash mid-batch (a third of fetch, 15 % of aggregate invocations)', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    await scenario(
      {
        name: 'b-crashes',
        pages: PAGES,
        seed: 31,
        fetchSlots: 4,
        sdkAttempts: 1,
        functionTimeoutSeconds: 10,
        visibilityTimeoutSeconds: 30,
        rules: () => [],
        crash: {
          // Visits make few fetch invocations (one host: one at a time, many pages each), so the seed
          // is one whose draws crash three of the first four (after, -, mid, after): a run has more.
          [FETCH]: { crashRate: 0.35, seed: 9, midMaxCalls: 100 },
          // Few aggregate invocations (batches of up to 100): a higher rate so that some crash, at any step.
          [AGGREGATE]: { crashRate: 0.15, seed: 32, midMaxCalls: 120 },
        },
        idleTimeoutMs: IDLE_TIMEOUT_MS,
      },
      { exactRequests: false, rawDuplicates: true },
      (o) => assert.ok((o.crashes[FETCH]?.crashes.length ?? 0) >= 2, 'the fetch function crashed'),
    );
  });

  it('(e) the whole compute is killed (SIGKILL) at random instants, many times, and resumed', {
    timeout: LONG_IDLE_TIMEOUT_MS + 150_000,
  }, async () => {
    const kills = { count: 8, minMs: 1_000, maxMs: 6_000 };
    const fetchSlots = 4;
    await scenario(
      {
        name: 'e-process-kills',
        // Three links a page: 1,093 pages within depth 6, and 307 more one layer deeper that end
        // `skipped` (depth) in their parents' batches, so most batches hold a page and its links' results.
        pages: 1_400,
        linksPerPage: 4,
        seed: 81,
        fetchSlots,
        functionTimeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
        visibilityTimeoutSeconds: 30,
        // Result sends take a while (as on a busy queue), so a kill often falls between two of them.
        rules: (outputs) => [
          {
            name: 'slow-results',
            operations: ['SendMessageBatch'],
            when: (call) => call.queueUrl === outputs.ResultsQueueUrl,
            delayMs: [100, 300],
          },
        ],
        kills,
        // Each kill can leave its batches hidden for a visibility timeout (30 s) and its hosts leased
        // until their leases lapse: up to minutes of waiting on top of the crawl itself.
        idleTimeoutMs: LONG_IDLE_TIMEOUT_MS,
      },
      { exactRequests: false, rawDuplicates: true },
      (o) => {
        const run = o.killRun!;
        assert.ok(run.kills >= kills.count / 2, `only ${run.kills} kills landed before the crawl ended`);
        // A kill loses at most what its invocations had claimed and not yet reported: one batch per slot.
        const bound = run.kills * fetchSlots * FETCH_EVENT_SOURCE.batchSize;
        assert.ok(run.refetches <= bound, `${run.refetches} refetches, bound ${bound}`);
        // One host answering at once: its visit fetches far faster than its output goes out (result
        // sends are slow here), yet no flush may grow past what fits before the function's timeout.
        assert.equal(run.timeouts, 0, `${run.timeouts} invocations ran into the function timeout`);
      },
    );
  });

  it('(d) a slow emulator: every call answered 20-200 ms late', { timeout: TEST_TIMEOUT_MS }, async () => {
    await scenario(
      {
        name: 'd-slow',
        pages: PAGES,
        seed: 61,
        fetchSlots: 4,
        // A flush of a batch's 25 pages takes up to ~5 s at this latency.
        functionTimeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
        rules: () => [{ name: 'slow', delayMs: [20, 200] }],
        idleTimeoutMs: IDLE_TIMEOUT_MS,
      },
      { exactRequests: true, rawDuplicates: false },
    );
  });

  it('(a) every visit message delivered twice', { timeout: TEST_TIMEOUT_MS }, async () => {
    await scenario(
      {
        name: 'a-duplicates',
        pages: PAGES,
        seed: 21,
        fetchSlots: 4,
        sdkAttempts: 1,
        functionTimeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
        visibilityTimeoutSeconds: 30,
        submitThroughFaults: true,
        rules: (outputs) => [
          {
            name: 'duplicate-visits',
            operations: ['SendMessage', 'SendMessageBatch'],
            when: (call) => call.service === 'sqs' && call.queueUrl === outputs.TaskQueueUrl,
            // Every visit message: a copy must never make a second visit of the host, nor a refetch.
            duplicate: () => 1,
            // A third at once (racing the original), the rest up to 10 s later (often after it is done).
            duplicateDelaySeconds: [-5, 10],
          },
        ],
        idleTimeoutMs: IDLE_TIMEOUT_MS,
      },
      { exactRequests: true, rawDuplicates: false },
      // Its off-site links are carried by their pages and wake no host: the submit's messages go
      // through the faults too, or the fetch function's hand-backs alone were 2 in a run.
      (o) => assert.ok(o.proxy.totals.duplicated >= 3, `${o.proxy.totals.duplicated} duplicates sent`),
    );
  });
});
