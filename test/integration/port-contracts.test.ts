/**
 * Each port's contract (test/contracts/) run against its in-memory fake (test/fakes/) and against the
 * real adapter — on dynalite, fauxqs' S3 and SQS, or the visit's pacer — so the fakes the unit tests
 * stand on behave as what they imitate. The AWS adapters run twice: over HTTP, as on AWS, and over the
 * in-process transport `crawler crawl` uses (local/in-process-http.ts), so both reach the same answers.
 */
import { after, before } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { CrawlConfigStore } from '../../lambdas/adapters/crawl-config-store.ts';
import { FrontierHosts } from '../../lambdas/adapters/frontier-hosts.ts';
import { FrontierRobots } from '../../lambdas/adapters/frontier-robots.ts';
import { resolveOptions } from '../../lambdas/adapters/frontier-schema.ts';
import { createFrontierStore } from '../../lambdas/adapters/frontier-store.ts';
import {
  DEAD_LETTER_CODE_ATTRIBUTE,
  SqsDeadLetterSender,
  SqsResultSender,
  SqsTaskSender,
} from '../../lambdas/adapters/queues.ts';
import { S3Blobs } from '../../lambdas/adapters/s3-blobs.ts';
import { ROBOTS_LIMITS } from '../../lambdas/core/base/index.ts';
import type { DeadLetter, VisitMessage } from '../../lambdas/core/crawl/index.ts';
import { VisitPacer } from '../../lambdas/core/fetch/index.ts';
import { dynamodbConfig, s3Config, sqsConfig } from '../../local/aws-clients.ts';
import { blobStoreContract } from '../contracts/blob-store.ts';
import { crawlConfigsContract } from '../contracts/crawl-configs.ts';
import { frontierUrlsContract } from '../contracts/frontier-urls.ts';
import { hostSlotsContract } from '../contracts/host-slots.ts';
import { hostVisitsContract } from '../contracts/host-visits.ts';
import { queueContract } from '../contracts/queues.ts';
import { robotsStoreContract } from '../contracts/robots-store.ts';
import { MemoryBlobs } from '../fakes/blobs.ts';
import { MemoryCrawlConfigs } from '../fakes/crawl-configs.ts';
import { MemoryFrontierUrls } from '../fakes/frontier-urls.ts';
import { MemoryHostSlots } from '../fakes/host-slots.ts';
import { MemoryHostVisits } from '../fakes/host-visits.ts';
import { MemoryDeadLetterQueue, MemoryResultsQueue, MemoryTaskQueue } from '../fakes/queues.ts';
import { MemoryRobotsStore } from '../fakes/robots-store.ts';
import { FRONTIER_TABLE, type FrontierTableFixture, startFrontierTable } from '../fixtures/frontier-table.ts';

const BUCKET = 'contract-pages';
const maxAgeMs = ROBOTS_LIMITS.ttlMs;
let table: FrontierTableFixture;
let s3: S3Client;
let sqs: SQSClient;

/** The clients the AWS adapters run on, per transport. */
interface Wire {
  name: string;
  dynamodb(): DynamoDBClient;
  s3(): S3Client;
  sqs(): SQSClient;
}

const inProcessClients: { dynamodb?: DynamoDBClient; s3?: S3Client; sqs?: SQSClient } = {};
const wires: Wire[] = [
  { name: 'over HTTP', dynamodb: () => table.dynamodb, s3: () => s3, sqs: () => sqs },
  {
    name: 'in process',
    dynamodb: () =>
      (inProcessClients.dynamodb ??= new DynamoDBClient({
        ...dynamodbConfig(table.endpoints),
        ...table.inProcess,
      })),
    s3: () => (inProcessClients.s3 ??= new S3Client({ ...s3Config(table.endpoints), ...table.inProcess })),
    sqs: () =>
      (inProcessClients.sqs ??= new SQSClient({ ...sqsConfig(table.endpoints), ...table.inProcess })),
  },
];

before(async () => {
  table = await startFrontierTable();
  s3 = new S3Client(s3Config(table.endpoints));
  sqs = new SQSClient(sqsConfig(table.endpoints));
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
});

after(async () => {
  s3?.destroy();
  sqs?.destroy();
  for (const client of Object.values(inProcessClients)) client.destroy();
  await table?.stop();
});

robotsStoreContract('MemoryRobotsStore', () => new MemoryRobotsStore({ maxAgeMs }), { maxAgeMs });
for (const wire of wires) {
  robotsStoreContract(
    `FrontierRobots on dynalite, ${wire.name}`,
    () => new FrontierRobots(wire.dynamodb(), FRONTIER_TABLE, resolveOptions({ robotsMaxAgeMs: maxAgeMs })),
    { maxAgeMs },
  );
}

hostSlotsContract('MemoryHostSlots', () => new MemoryHostSlots());
hostSlotsContract('VisitPacer', () => new VisitPacer({ nextAt: 0 }));

blobStoreContract('MemoryBlobs', () => {
  const store = new MemoryBlobs();
  return { store, read: async (key) => store.objects.get(key) };
});
for (const wire of wires) {
  // Read back over HTTP: what the adapter stored, whichever way it went.
  blobStoreContract(`S3Blobs on fauxqs, ${wire.name}`, () => ({
    store: new S3Blobs(wire.s3(), BUCKET),
    read: async (key) => {
      const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      return out.Body?.transformToByteArray();
    },
  }));
}

frontierUrlsContract('MemoryFrontierUrls', () => new MemoryFrontierUrls());
hostVisitsContract('MemoryHostVisits', () => new MemoryHostVisits());
crawlConfigsContract('MemoryCrawlConfigs', (defaults) => new MemoryCrawlConfigs(defaults));
for (const wire of wires) {
  frontierUrlsContract(`FrontierTable on dynalite, ${wire.name}`, () =>
    createFrontierStore(wire.dynamodb(), FRONTIER_TABLE),
  );
  hostVisitsContract(
    `FrontierHosts on dynalite, ${wire.name}`,
    () => new FrontierHosts(wire.dynamodb(), FRONTIER_TABLE, resolveOptions()),
  );
  crawlConfigsContract(
    `CrawlConfigStore on dynalite, ${wire.name}`,
    (defaults) => new CrawlConfigStore(wire.dynamodb(), FRONTIER_TABLE, defaults),
  );
}

queueContract('memory queues', async () => {
  const tasks = new MemoryTaskQueue();
  const results = new MemoryResultsQueue();
  const deadLetters = new MemoryDeadLetterQueue();
  return {
    tasks,
    results,
    deadLetters,
    arrived: async () => ({
      visits: tasks.visits.splice(0).map((sent) => sent.visit),
      results: [
        ...results.messages.splice(0).map((body) => JSON.parse(body) as unknown),
        ...results.drained.splice(0).map((crawlId) => ({ v: 1, kind: 'drained', crawlId })),
      ],
      letters: deadLetters.letters.splice(0),
    }),
  };
});

let queueSeq = 0;
for (const wire of wires) {
  queueContract(`SQS senders on fauxqs, ${wire.name}`, async () => {
    const [tasksUrl, resultsUrl, dlqUrl] = await Promise.all(
      ['tasks', 'results', 'dlq'].map(async (kind) => {
        const created = await sqs.send(
          new CreateQueueCommand({ QueueName: `contract-${kind}-${++queueSeq}` }),
        );
        return created.QueueUrl!;
      }),
    );
    return sqsSenders(wire.sqs(), tasksUrl!, resultsUrl!, dlqUrl!);
  });
}

/** The senders on `client`, and what reached their queues, received over HTTP. */
function sqsSenders(client: SQSClient, tasksUrl: string, resultsUrl: string, dlqUrl: string) {
  return {
    tasks: new SqsTaskSender(client, tasksUrl),
    results: new SqsResultSender(client, resultsUrl),
    deadLetters: new SqsDeadLetterSender(client, dlqUrl),
    arrived: async () => ({
      visits: (await receiveAll(tasksUrl)).map((m) => JSON.parse(m.Body ?? '') as VisitMessage),
      results: (await receiveAll(resultsUrl)).map((m) => JSON.parse(m.Body ?? '') as unknown),
      letters: (await receiveAll(dlqUrl)).map(
        (m): DeadLetter => ({
          body: m.Body ?? '',
          code: m.MessageAttributes?.[DEAD_LETTER_CODE_ATTRIBUTE]?.StringValue ?? '',
          reason: m.MessageAttributes?.reason?.StringValue ?? '',
        }),
      ),
    }),
  };
}

/** Everything on the queue now, taken off it (until a receive finds nothing). */
async function receiveAll(queueUrl: string): Promise<Message[]> {
  const got: Message[] = [];
  for (;;) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) return got;
    got.push(...messages);
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
}
