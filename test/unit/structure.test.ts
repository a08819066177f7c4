/**
 * The structure test (issue 28): the sources keep their layers (test/structure/import-graph.ts) and
 * have no import loop. The checker itself is shown to fail on a loop and on an upward import added to
 * a copy of the real graph, so a passing run means the rules hold, not that nothing was checked.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../cdk/paths.ts';
import { type ImportGraph, readImportGraph, structureViolations } from '../structure/import-graph.ts';

const graph = readImportGraph(REPO_ROOT);

function withImport(base: ImportGraph, from: string, to: string): ImportGraph {
  const copy: ImportGraph = new Map([...base].map(([module, imports]) => [module, [...imports]]));
  copy.set(from, [...(copy.get(from) ?? []), { to, line: 999 }]);
  return copy;
}

describe('the import structure', () => {
  it('reads the sources: the handlers, the core, the stack and the CLI are in the graph', () => {
    for (const module of [
      'lambdas/fetch/handler.ts',
      'lambdas/render/handler.ts',
      'lambdas/core/batches/fetch-batch.ts',
      'cdk/crawler-stack.ts',
      'cli/crawl-command.ts',
      'local/local-aws.ts',
    ])
      assert.ok(graph.has(module), module);
    assert.ok(
      graph
        .get('lambdas/core/batches/fetch-batch.ts')
        ?.some((edge) => edge.to === 'lambdas/core/batches/batch-output.ts'),
      'an import is read',
    );
  });

  it('has no import loop and no import up the layers', () => {
    assert.deepEqual(structureViolations(graph), []);
  });

  it('fails on a loop added to it', () => {
    const looped = withImport(
      graph,
      'lambdas/core/batches/batch-output.ts',
      'lambdas/core/batches/fetch-batch.ts',
    );
    const problems = structureViolations(looped);
    assert.equal(problems.length, 1);
    assert.match(
      problems[0] ?? '',
      /^import loop: .*lambdas\/core\/batches\/batch-output\.ts.*lambdas\/core\/batches\/fetch-batch\.ts/,
    );
  });

  it('fails on an import up the layers: core to an adapter, shared to an adapter, Lambda code to the stack, the core to the SDK, a core folder to one above it', () => {
    const cases: Array<[string, string, RegExp]> = [
      [
        'lambdas/core/fetch/fetch-task.ts',
        'lambdas/adapters/http-fetcher.ts',
        /the core is pure crawl logic/,
      ],
      ['lambdas/shared/sqs-batch-handler.ts', 'lambdas/adapters/sqs-redelivery.ts', /depends on no adapter/],
      ['lambdas/adapters/sqs-batch-sender.ts', 'cdk/limits.ts', /never imports the stack/],
      ['lambdas/core/crawl/budget.ts', 'pkg:@aws-sdk/client-dynamodb', /the core is pure crawl logic/],
      ['lambdas/core/crawl/budget.ts', 'lambdas/shared/aws-clients.ts', /the core may use only/],
      [
        'lambdas/core/robots/robots.ts',
        'lambdas/core/content/index.ts',
        /core\/robots may import only the folders below it/,
      ],
      [
        'lambdas/core/base/cron.ts',
        'lambdas/core/results/index.ts',
        /core\/base may import only the folders below it/,
      ],
      [
        'lambdas/adapters/s3-blobs.ts',
        'lambdas/core/archive/warc.ts',
        /imported from lambdas\/core\/archive\/index\.ts/,
      ],
      [
        'lambdas/core/fetch/fetch-task.ts',
        'lambdas/core/robots/robots.ts',
        /imported from lambdas\/core\/robots\/index\.ts/,
      ],
    ];
    for (const [from, to, why] of cases) {
      const problems = structureViolations(withImport(graph, from, to));
      // An import from the core to an adapter also closes a loop (the adapter imports the core).
      assert.ok(
        problems.some((problem) => problem.startsWith(`${from}:999 imports ${to}`) && why.test(problem)),
        `${from} -> ${to}: ${problems.join('; ')}`,
      );
    }
  });
});
