/**
 * The local EventBridge: PutEvents on the embedded endpoint (JSON 1.1, `X-Amz-Target:
 * AWSEvents.PutEvents`), as strict as AWS where it matters to a caller: 1-10 entries a call, at most
 * 256 KiB of entries (counted as AWS does: Time 14 bytes, Source, DetailType, Detail, Resources),
 * Detail a JSON object, Source and DetailType present, a bus the stack has. Each accepted event is
 * appended, in EventBridge's envelope, to the bus's log files (`events.jsonl` in the state directory;
 * `crawler crawl --events FILE`), and sent to the SQS targets of every rule of the template whose
 * pattern it matches (event-pattern.ts). Other actions answer UnknownOperationException.
 */
import { randomUUID } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { AWS_LIMITS } from '../lambdas/core/base/index.ts';
import { compileEventPattern, type EventPattern } from './event-pattern.ts';
import type { RunningServer } from './fauxqs-server.ts';
import { readJsonBody } from './json-body.ts';
import { listenOnLoopback } from './loopback-listen.ts';
import { guardServer } from './request-guard.ts';
import type { LocalEventRule } from './stack-model.ts';

/** EventBridge's envelope, as a rule's target receives an event. */
export interface EventEnvelope {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: unknown;
}

export interface EventBusSettings {
  region: string;
  accountId: string;
  /** Buses that exist: `default`, and any the stack names. */
  buses: readonly string[];
  rules: readonly LocalEventRule[];
  /** Sends a matched event to a rule's queue. */
  deliver: (queueUrl: string, body: string) => Promise<void>;
  /**
   * Told of a delivery or a log append that failed (`where`: the queue URL or the file): the event
   * is still taken, as a target's failure does not fail PutEvents on AWS.
   */
  onDeliveryError?: (where: string, error: unknown) => void;
}

const TIME_BYTES = 14;

/** The bus behind the endpoint: rules and log files are set once the stack is provisioned. */
export class LocalEventBus {
  #settings: EventBusSettings | undefined;
  #rules: Array<{ rule: LocalEventRule; pattern: EventPattern }> = [];
  readonly #logFiles = new Set<string>();
  /** Appends in order: one chain of writes. */
  #writes: Promise<void> = Promise.resolve();

  /** Throws EventPatternError (naming the rule) for a pattern this cannot apply. */
  configure(settings: EventBusSettings): void {
    this.#rules = settings.rules
      .filter((rule) => rule.enabled)
      .map((rule) => {
        try {
          return { rule, pattern: compileEventPattern(rule.pattern) };
        } catch (error) {
          throw Object.assign(error as Error, {
            message: `rule ${rule.logicalId}: ${(error as Error).message}`,
          });
        }
      });
    this.#settings = settings;
  }

  /** Every accepted event is also appended here, one envelope a line. */
  addLogFile(path: string): void {
    this.#logFiles.add(path);
  }

  /** Waits for the log appends under way. */
  flushed(): Promise<void> {
    return this.#writes;
  }

  async put(body: unknown): Promise<{ status: number; answer: unknown }> {
    const settings = this.#settings;
    if (settings === undefined)
      return error(400, 'ResourceNotFoundException', 'the local event bus has no stack yet');
    const entries = isObject(body) && Array.isArray(body.Entries) ? body.Entries : undefined;
    if (entries === undefined || entries.length < 1 || entries.length > AWS_LIMITS.putEventsEntries)
      return error(
        400,
        'ValidationException',
        `Entries must hold 1 to ${AWS_LIMITS.putEventsEntries} entries`,
      );
    const size = entries.reduce((sum: number, entry) => sum + entrySize(entry), 0);
    if (size > AWS_LIMITS.putEventsBytes)
      return error(
        400,
        'ValidationException',
        `Total size of the entries in the request is over the limit (${size} > ${AWS_LIMITS.putEventsBytes} bytes)`,
      );
    const answers: unknown[] = [];
    let failed = 0;
    const accepted: Array<{ event: EventEnvelope; bus: string }> = [];
    for (const entry of entries) {
      const checked = this.#check(entry, settings);
      if ('ErrorCode' in checked) {
        failed++;
        answers.push(checked);
        continue;
      }
      accepted.push(checked);
      answers.push({ EventId: checked.event.id });
    }
    const lines = accepted.map(({ event }) => `${JSON.stringify(event)}\n`).join('');
    const files = [...this.#logFiles];
    if (lines !== '' && files.length > 0) {
      // A file that cannot be written is reported; the event is still taken and routed.
      this.#writes = this.#writes.then(() =>
        Promise.all(
          files.map((file) =>
            appendFile(file, lines).catch((error: unknown) => settings.onDeliveryError?.(file, error)),
          ),
        ).then(() => {}),
      );
      await this.#writes;
    }
    for (const { event, bus } of accepted) await this.#route(event, bus, settings);
    return { status: 200, answer: { FailedEntryCount: failed, Entries: answers } };
  }

  #check(
    entry: unknown,
    settings: EventBusSettings,
  ): { event: EventEnvelope; bus: string } | { ErrorCode: string; ErrorMessage: string } {
    if (!isObject(entry)) return { ErrorCode: 'InvalidArgument', ErrorMessage: 'an entry must be an object' };
    const { Source, DetailType, Detail, EventBusName, Resources, Time } = entry;
    if (typeof Source !== 'string' || Source === '')
      return {
        ErrorCode: 'InvalidArgument',
        ErrorMessage: 'Parameter Source is not valid. Reason: Source is a required argument.',
      };
    if (typeof DetailType !== 'string' || DetailType === '')
      return {
        ErrorCode: 'InvalidArgument',
        ErrorMessage: 'Parameter DetailType is not valid. Reason: DetailType is a required argument.',
      };
    let detail: unknown;
    try {
      detail = typeof Detail === 'string' ? JSON.parse(Detail) : undefined;
    } catch {
      detail = undefined;
    }
    if (!isObject(detail))
      return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed: it must be a JSON object' };
    const bus = busNameOf(EventBusName);
    if (!settings.buses.includes(bus))
      return { ErrorCode: 'ResourceNotFoundException', ErrorMessage: `Event bus ${bus} does not exist.` };
    const time = typeof Time === 'string' || typeof Time === 'number' ? new Date(Time) : new Date();
    return {
      bus,
      event: {
        version: '0',
        id: randomUUID(),
        'detail-type': DetailType,
        source: Source,
        account: settings.accountId,
        time: (Number.isNaN(time.getTime()) ? new Date() : time).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        region: settings.region,
        resources: Array.isArray(Resources)
          ? Resources.filter((r): r is string => typeof r === 'string')
          : [],
        detail,
      },
    };
  }

  /** Sends the event to the queues of every enabled rule of its bus whose pattern it matches. */
  async #route(event: EventEnvelope, bus: string, settings: EventBusSettings): Promise<void> {
    for (const { rule, pattern } of this.#rules) {
      if (rule.busName !== bus || !pattern.matches(event)) continue;
      for (const queueUrl of rule.queueUrls)
        await settings
          .deliver(queueUrl, JSON.stringify(event))
          .catch((error: unknown) => settings.onDeliveryError?.(queueUrl, error));
    }
  }
}

function busNameOf(name: unknown): string {
  if (typeof name !== 'string' || name === '') return 'default';
  // An ARN names the bus after `event-bus/`.
  const at = name.lastIndexOf('event-bus/');
  return at >= 0 ? name.slice(at + 'event-bus/'.length) : name;
}

/** An entry's size as EventBridge counts it toward the 256 KiB (eb-putevent-size.html). */
function entrySize(entry: unknown): number {
  if (!isObject(entry)) return 0;
  let size = TIME_BYTES;
  for (const field of ['Source', 'DetailType', 'Detail'] as const) {
    const value = entry[field];
    if (typeof value === 'string') size += Buffer.byteLength(value);
  }
  if (Array.isArray(entry.Resources))
    for (const r of entry.Resources) if (typeof r === 'string') size += Buffer.byteLength(r);
  return size;
}

function error(status: number, type: string, message: string): { status: number; answer: unknown } {
  return { status, answer: { __type: type, message } };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Request bodies past this are refused before parsing: ten entries of 256 KiB fit well within. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export async function startEventBridgeServer(bus: LocalEventBus): Promise<RunningServer> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const reply = (status: number, answer: unknown) => {
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(answer));
    };
    const target = String(req.headers['x-amz-target'] ?? '');
    void readJsonBody(req, MAX_BODY_BYTES).then(
      (body) => {
        if (body.kind === 'too-large')
          return reply(413, {
            __type: 'ValidationException',
            message: `request body over ${body.limit} bytes`,
          });
        if (target !== 'AWSEvents.PutEvents')
          return reply(400, {
            __type: 'UnknownOperationException',
            message: `the local EventBridge serves PutEvents only, not ${target || 'a request without X-Amz-Target'}`,
          });
        if (body.kind !== 'json')
          return reply(400, { __type: 'SerializationException', message: 'the request body is not JSON' });
        bus.put(body.value).then(
          ({ status, answer }) => reply(status, answer),
          (err: unknown) => reply(500, { __type: 'InternalException', message: String(err) }),
        );
      },
      (err: unknown) => reply(400, { __type: 'SerializationException', message: String(err) }),
    );
  });
  // Any port in Host: the one-endpoint router forwards its own Host here (endpoint-router.ts).
  guardServer(server, { port: 'any' });
  return listenOnLoopback(server);
}
