/**
 * The fetch concurrency a deploy accepts keeps every partition key of one crawl under its share of
 * DynamoDB's per-key throughput (cdk/partition-budget.ts, the inputs in cdk/limits.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ContextError, parseFetchConcurrency } from '../../cdk/context.ts';
import { CRAWL_LOAD, DYNAMODB_PARTITION, FETCH_EVENT_SOURCE } from '../../cdk/limits.ts';
import {
  type PartitionBudgetInput,
  partitionCeiling,
  STACK_PARTITION_BUDGET,
} from '../../cdk/partition-budget.ts';
import { REPO_ROOT } from '../../cdk/paths.ts';

/** Units per second each key takes when `concurrency` invocations each fetch their fastest. */
function keyRates(input: PartitionBudgetInput, concurrency: number) {
  const pagesPerSecond = (concurrency * input.batchSize) / input.gapSeconds;
  return Object.entries(input.perPage).map(([key, load]) => ({
    key,
    writeShare: (load.writeUnits * pagesPerSecond) / input.partition.writeUnitsPerSecond,
    readShare: (load.readUnits * pagesPerSecond) / input.partition.readUnitsPerSecond,
  }));
}

describe('partition ceiling of the fetch concurrency', () => {
  it('writes: at the ceiling every key stays under 80 % of 1,000 write units/s, one more and the binding key exceeds it', () => {
    const ceiling = partitionCeiling();
    // The crawl's own keys take a fraction of a unit a page now that its host items are sharded: a
    // share-link host's URL partition binds, 2 write units a page: 800 / 2 / 22.7 = 17.
    assert.equal(ceiling.key, 'URLS#<crawlId>#<host> of a host linked from every page');
    assert.equal(ceiling.unit, 'write');
    assert.equal(ceiling.maxFetchConcurrency, 17);
    assert.ok(
      CRAWL_LOAD.perPage['CRAWL#<crawlId>#NN holding a host linked from every page'].writeUnits < 0.2,
      'one shard of the host items takes a fraction of the 2.2 units a page one key took',
    );
    for (const rate of keyRates(STACK_PARTITION_BUDGET, ceiling.maxFetchConcurrency)) {
      assert.ok(rate.writeShare <= DYNAMODB_PARTITION.maxShare + 1e-9, `${rate.key}: ${rate.writeShare}`);
      assert.ok(rate.readShare <= DYNAMODB_PARTITION.maxShare, `${rate.key}: ${rate.readShare}`);
    }
    const over = keyRates(STACK_PARTITION_BUDGET, ceiling.maxFetchConcurrency + 1);
    assert.ok(over.some((rate) => rate.writeShare > DYNAMODB_PARTITION.maxShare));
  });

  it('reads: a key that takes more of its 3,000 read units than any key of its write units binds on reads', () => {
    const input: PartitionBudgetInput = {
      ...STACK_PARTITION_BUDGET,
      perPage: { ...CRAWL_LOAD.perPage, 'URLS#<crawlId>#<big host>': { writeUnits: 0.1, readUnits: 30 } },
    };
    const ceiling = partitionCeiling(input);
    assert.equal(ceiling.key, 'URLS#<crawlId>#<big host>');
    assert.equal(ceiling.unit, 'read');
    // 2,400 read units / 30 a page = 80 pages/s, 3.5 invocations of 22.7 pages/s.
    assert.equal(ceiling.maxFetchConcurrency, 3);
    assert.ok(keyRates(input, 3).every((rate) => rate.readShare <= DYNAMODB_PARTITION.maxShare));
    assert.ok(keyRates(input, 4).some((rate) => rate.readShare > DYNAMODB_PARTITION.maxShare));
  });

  it('follows the batch size: an invocation of twice the visits fetches twice the pages, half the ceiling', () => {
    const doubled = partitionCeiling({
      ...STACK_PARTITION_BUDGET,
      batchSize: 2 * FETCH_EVENT_SOURCE.batchSize,
    });
    assert.equal(doubled.maxFetchConcurrency, Math.floor(partitionCeiling().maxFetchConcurrency / 2));
  });

  it("the stack's default fetch concurrency is within the ceiling", () => {
    assert.equal(parseFetchConcurrency(FETCH_EVENT_SOURCE.maxConcurrency), FETCH_EVENT_SOURCE.maxConcurrency);
  });
});

describe('-c fetchConcurrency above the partition ceiling', () => {
  const max = partitionCeiling().maxFetchConcurrency;

  it('is accepted up to the ceiling', () => {
    assert.equal(parseFetchConcurrency(String(max)), max);
    assert.equal(parseFetchConcurrency(max), max);
  });

  for (const given of [String(max + 1), '50', '1000', max + 1]) {
    it(`${JSON.stringify(given)} is refused with one line: the range, the key that would run hot, an example`, () => {
      assert.throws(
        () => parseFetchConcurrency(given),
        (error: unknown) => {
          assert.ok(error instanceof ContextError);
          assert.doesNotMatch(error.message, /\n/);
          assert.match(
            error.message,
            new RegExp(`^context fetchConcurrency: expected an integer 2\\.\\.${max} `),
          );
          assert.match(
            error.message,
            /URLS#<crawlId>#<host> of a host linked from every page partition key takes over 80 % of DynamoDB's 1,000 write units\/s/,
          );
          assert.match(
            error.message,
            new RegExp(`got ${JSON.stringify(JSON.stringify(given)).slice(1, -1)}\\.`),
          );
          assert.match(error.message, new RegExp(`Example: npx cdk deploy -c fetchConcurrency=${max}$`));
          return true;
        },
      );
    });
  }
});

describe('the docs state the ceiling the code computes', () => {
  it('docs/scale.md: the ceiling, its pages/s and the crawl keys’ units a page; docs/deploy.md: the range and example', () => {
    const scale = readFileSync(join(REPO_ROOT, 'docs/scale.md'), 'utf8');
    const deploy = readFileSync(join(REPO_ROOT, 'docs/deploy.md'), 'utf8');
    const { maxFetchConcurrency: max, maxPagesPerSecond } = partitionCeiling();
    assert.ok(
      scale.includes(`**at most ${max} fetch invocations** (~${Math.round(maxPagesPerSecond)} pages/s`),
    );
    assert.ok(scale.includes(`${CRAWL_LOAD.perPage['CRAWL#<crawlId>'].writeUnits} write units a page`));
    const shard = CRAWL_LOAD.perPage['CRAWL#<crawlId>#NN holding a host linked from every page'];
    assert.ok(scale.includes(`${shard.writeUnits} write units a page`));
    assert.ok(scale.includes(`### The deploy's ceiling: \`-c fetchConcurrency\` 2..${max}`));
    assert.ok(deploy.includes(`npx cdk deploy ServerlessCrawler -c fetchConcurrency=${max} `));
    assert.ok(
      deploy.includes(`maximum concurrency, 2..${max} (default ${FETCH_EVENT_SOURCE.maxConcurrency})`),
    );
  });
});
