/**
 * `crawler list`'s reader (lambdas/adapters/frontier-crawls.ts) against dynalite: every submitted
 * crawl from the crawl registry, with its counters, by Query and BatchGetItem: never a Scan, and never
 * a read of a URL item, however many the table holds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BatchWriteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { listCrawls, registerCrawl } from '../../lambdas/adapters/frontier-crawls.ts';
import { countersKey, urlKey } from '../../lambdas/adapters/frontier-schema.ts';
import { diffSnapshots } from '../../lambdas/shared/aws-call-counter.ts';
import { createAwsClients } from '../../lambdas/shared/aws-clients.ts';
import { STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { parseTemplate } from '../../local/cfn-template.ts';
import { type LocalAws, startLocalAws } from '../../local/local-aws.ts';

let aws: LocalAws;
let table: string;
let clients: ReturnType<typeof createAwsClients>;

before(async () => {
  aws = await startLocalAws({
    template: parseTemplate(synthesizeTemplate()),
    stackName: STACK_NAME,
    log: () => {},
  });
  table = aws.outputs.FrontierTableName!;
  clients = createAwsClients(aws.functionEnv.FetchFunction as never);
});
after(() => aws?.stop());

const CRAWLS = 230; // three BatchGetItem calls of 100

async function startCounters(crawlId: string, startedAt: string): Promise<void> {
  await clients.dynamodb.send(
    new PutItemCommand({
      TableName: table,
      Item: {
        ...countersKey(crawlId),
        state: { S: 'running' },
        startedAt: { S: startedAt },
        queued: { N: '1' },
      },
    }),
  );
}

describe('listCrawls', () => {
  it('lists every registered crawl and the default crawl, by Query and BatchGetItem only', async () => {
    const ids = Array.from({ length: CRAWLS }, (_, i) => `listed-${String(i).padStart(3, '0')}`);
    for (const [i, id] of ids.entries()) {
      await registerCrawl(clients.dynamodb, table, id);
      await startCounters(id, new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString());
    }
    await startCounters('default', '2026-01-01T00:00:00.000Z');
    // A registered crawl with no counters yet (nothing admitted) is left out.
    await registerCrawl(clients.dynamodb, table, 'not-started');
    // URL items, which a Scan would read: a list must not.
    for (let batch = 0; batch < 20; batch++) {
      await clients.dynamodb.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [table]: Array.from({ length: 25 }, (_, i) => ({
              PutRequest: {
                Item: {
                  ...urlKey('listed-000', 'x.test', `${batch}-${i}`),
                  url: { S: `http://x.test/${batch}/${i}` },
                },
              },
            })),
          },
        }),
      );
    }
    const before = clients.counter!.snapshot();
    const listed = [];
    for await (const crawl of listCrawls(clients.dynamodb, table)) listed.push(crawl);
    const calls = diffSnapshots(before, clients.counter!.snapshot()).operations;
    assert.deepEqual(listed.map((c) => c.crawlId).sort(), [...ids, 'default'].sort());
    assert.ok(listed.every((c) => c.counters.state === 'running' && c.counters.queued === 1));
    assert.deepEqual(
      Object.keys(calls)
        .filter((op) => op.startsWith('DynamoDB:'))
        .sort(),
      ['DynamoDB:BatchGetItem', 'DynamoDB:Query'],
      'no Scan, no other read',
    );
    assert.equal(calls['DynamoDB:BatchGetItem']?.calls, 3, '100 counters items a call');
    // The registry's items are tiny: one page of Query answers thousands of crawls.
    assert.equal(calls['DynamoDB:Query']?.calls, 1);
  });
});
