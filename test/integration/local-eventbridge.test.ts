/**
 * The local EventBridge (local/eventbridge-server.ts) over the AWS wire protocol, through the SDK's
 * EventBridgeClient and our publisher: as strict as EventBridge on what a caller can get wrong, the
 * template's rules applied, every event logged once, in the envelope EventBridge delivers.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EventBridgeClient, PutEventsCommand, PutRuleCommand } from '@aws-sdk/client-eventbridge';
import { EventBridgePublisher } from '../../lambdas/adapters/eventbridge-publisher.ts';
import { cancelledEvent, startedEvent } from '../../lambdas/core/batches/index.ts';
import { clientConfig, clientSettings } from '../../local/aws-clients.ts';
import { type EventEnvelope, LocalEventBus, startEventBridgeServer } from '../../local/eventbridge-server.ts';
import type { RunningServer } from '../../local/fauxqs-server.ts';
import { assertValidEvent, kindOf } from '../fixtures/event-schemas.ts';

describe('the local EventBridge', () => {
  const bus = new LocalEventBus();
  const delivered: Array<{ queueUrl: string; event: EventEnvelope }> = [];
  let server: RunningServer;
  let client: EventBridgeClient;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'local-eventbridge-'));
    bus.configure({
      region: 'us-east-1',
      accountId: '000000000000',
      buses: ['default', 'crawler-events'],
      rules: [
        {
          logicalId: 'Lifecycle',
          busName: 'default',
          pattern: { source: ['serverless-crawler'], 'detail-type': [{ prefix: 'Crawl ' }] },
          enabled: true,
          queueUrls: ['http://queue/lifecycle'],
        },
        {
          logicalId: 'Disabled',
          busName: 'default',
          pattern: { source: ['serverless-crawler'] },
          enabled: false,
          queueUrls: ['http://queue/disabled'],
        },
        {
          logicalId: 'OtherBus',
          busName: 'crawler-events',
          pattern: { source: ['serverless-crawler'] },
          enabled: true,
          queueUrls: ['http://queue/other-bus'],
        },
      ],
      deliver: async (queueUrl, body) => {
        delivered.push({ queueUrl, event: JSON.parse(body) });
      },
    });
    bus.addLogFile(join(dir, 'events.jsonl'));
    server = await startEventBridgeServer(bus);
    client = new EventBridgeClient(clientConfig(server.url, clientSettings({ maxAttempts: 1 })));
  });
  after(async () => {
    client?.destroy();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("takes our events, logs each once in EventBridge's envelope, and routes them by the rules of their bus", async () => {
    const events = [
      startedEvent('c-1', new Date(), 2, undefined),
      cancelledEvent('c-1', new Date().toISOString(), 'crawler cancel'),
    ];
    await new EventBridgePublisher(client, 'default').publish(events);
    await new EventBridgePublisher(client, 'crawler-events').publish([
      startedEvent('c-2', new Date(), 1, undefined),
    ]);
    await bus.flushed();
    const logged = (await readFile(join(dir, 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as EventEnvelope);
    assert.deepEqual(
      logged.map((e) => [e['detail-type'], (e.detail as { crawlId: string }).crawlId]),
      [
        ['Crawl Started', 'c-1'],
        ['Crawl Cancelled', 'c-1'],
        ['Crawl Started', 'c-2'],
      ],
    );
    for (const envelope of logged) {
      assert.equal(envelope.version, '0');
      assert.equal(envelope.source, 'serverless-crawler');
      assert.equal(envelope.account, '000000000000');
      assert.match(envelope.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      const kind = kindOf(envelope['detail-type']);
      assert.ok(kind);
      assertValidEvent({ kind, detail: envelope.detail });
    }
    assert.deepEqual(
      delivered.map((d) => [d.queueUrl, d.event['detail-type']]),
      [
        ['http://queue/lifecycle', 'Crawl Started'],
        ['http://queue/lifecycle', 'Crawl Cancelled'],
        ['http://queue/other-bus', 'Crawl Started'],
      ],
    );
  });

  it('refuses what EventBridge refuses: no entries, more than 10, over 256 KiB, a Detail that is not a JSON object, a bus that does not exist', async () => {
    const entry = { Source: 'serverless-crawler', DetailType: 'Crawl Started', Detail: '{}' };
    await assert.rejects(client.send(new PutEventsCommand({ Entries: [] })), { name: 'ValidationException' });
    await assert.rejects(
      client.send(new PutEventsCommand({ Entries: Array.from({ length: 11 }, () => entry) })),
      {
        name: 'ValidationException',
      },
    );
    const large = { ...entry, Detail: JSON.stringify({ text: 'x'.repeat(256 * 1024) }) };
    await assert.rejects(client.send(new PutEventsCommand({ Entries: [large] })), /over the limit/);
    const answer = await client.send(
      new PutEventsCommand({
        Entries: [
          entry,
          { ...entry, Detail: '[1, 2]' },
          { ...entry, Detail: 'not json' },
          { ...entry, Source: '' },
          { ...entry, EventBusName: 'no-such-bus' },
        ],
      }),
    );
    assert.equal(answer.FailedEntryCount, 4);
    assert.deepEqual(
      answer.Entries?.map((e) => e.ErrorCode ?? 'ok'),
      ['ok', 'MalformedDetail', 'MalformedDetail', 'InvalidArgument', 'ResourceNotFoundException'],
    );
  });

  it('the publisher throws, naming the bus, when EventBridge keeps refusing an entry', async () => {
    await assert.rejects(
      new EventBridgePublisher(client, 'no-such-bus').publish([
        startedEvent('c-3', new Date(), 1, undefined),
      ]),
      /EventBridge did not take 1 event\(s\) on bus no-such-bus/,
    );
  });

  it('takes an event whose log file cannot be written, and says which file failed', async () => {
    const failures: string[] = [];
    const other = new LocalEventBus();
    other.configure({
      region: 'us-east-1',
      accountId: '000000000000',
      buses: ['default'],
      rules: [],
      deliver: async () => {},
      onDeliveryError: (where) => failures.push(where),
    });
    other.addLogFile(join(dir, 'no-such-dir', 'events.jsonl'));
    const answer = await other.put({
      Entries: [{ Source: 'serverless-crawler', DetailType: 'Crawl Started', Detail: '{}' }],
    });
    assert.equal(answer.status, 200);
    assert.deepEqual(failures, [join(dir, 'no-such-dir', 'events.jsonl')]);
  });

  it('answers another action with UnknownOperationException', async () => {
    await assert.rejects(client.send(new PutRuleCommand({ Name: 'r', EventPattern: '{}' })), {
      name: 'UnknownOperationException',
    });
  });
});
