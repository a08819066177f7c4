// The deploy path for real: `cdk synth` through cdk.json and bin/app.ts (nag on, esbuild bundling,
// offline), producing ESM bundles that load, and the same template the local runtime synthesizes.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { REPO_ROOT } from '../../cdk/paths.ts';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { HANDLER_METADATA_KEY, IDS, STACK_NAME } from '../../lambdas/shared/contracts.ts';
import { isRecord, ofType, resourcesOf } from './template.ts';

const outdir = mkdtempSync(join(tmpdir(), 'crawler-synth-'));
let template: Record<string, unknown>;

before(() => {
  // Node 24 for the CLI and for `node bin/app.ts` (cdk.json), as `npx cdk` would find it.
  const result = spawnSync(
    process.execPath,
    [join(REPO_ROOT, 'node_modules/aws-cdk/bin/cdk'), 'synth', '--quiet', '--output', outdir],
    {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        ...process.env,
        PATH: `${join(REPO_ROOT, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}`,
      },
    },
  );
  assert.equal(result.status, 0, `cdk synth failed:\n${result.stdout}\n${result.stderr}`);
  template = JSON.parse(readFileSync(join(outdir, `${STACK_NAME}.template.json`), 'utf8'));
});

after(() => rmSync(outdir, { recursive: true, force: true }));

/** Absolute path of a function's bundled entry in the cloud assembly. */
function bundleOf(functionId: string): string {
  const fn = resourcesOf(template)[functionId];
  const assetPath = fn?.Metadata['aws:asset:path'];
  assert.equal(typeof assetPath, 'string', `${functionId} has a bundled asset`);
  assert.equal(fn?.Metadata['aws:asset:is-bundled'], true);
  return join(outdir, String(assetPath), 'index.mjs');
}

describe('cdk synth (CLI, real bundling)', () => {
  for (const id of [IDS.fetchFunction, IDS.aggregateFunction]) {
    it(`${id}: bundle is one ESM file with the require shim and no external imports`, async () => {
      const code = readFileSync(bundleOf(id), 'utf8');
      assert.ok(
        code.startsWith(
          "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        ),
      );
      // Re-read the bundle with esbuild: every import left in it must be a Node built-in.
      const { metafile } = await build({
        entryPoints: [bundleOf(id)],
        bundle: true,
        write: false,
        metafile: true,
        platform: 'node',
        format: 'esm',
        logLevel: 'silent',
      });
      const imports = Object.values(metafile.inputs).flatMap((input) => input.imports);
      assert.ok(imports.length > 0);
      for (const { path, external } of imports) {
        assert.ok(external && isBuiltin(path), `import ${path} would be missing in Lambda`);
      }
      assert.ok(readFileSync(`${bundleOf(id)}.map`, 'utf8').includes('"mappings"'), 'source map next to it');
    });

    it(`${id}: bundle loads under Node 24 and exports handler and createHandler`, () => {
      const script = `import(${JSON.stringify(pathToFileURL(bundleOf(id)).href)}).then((m) => console.log(JSON.stringify({ handler: typeof m.handler, createHandler: typeof m.createHandler })))`;
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: tmpdir(), // no node_modules to fall back on
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH ?? '',
          AWS_REGION: 'us-east-1',
          TASK_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/task',
          TASK_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/task-dlq',
          RESULTS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/results',
          RESULTS_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/results-dlq',
          PAGE_BUCKET: 'page-bucket',
          FRONTIER_TABLE: 'frontier-table',
        },
      });
      assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1) ?? ''), {
        handler: 'function',
        createHandler: 'function',
      });
    });
  }

  it('produces the template synthesizeTemplate() gives the local runtime (code assets aside)', () => {
    const fast = resourcesOf(synthesizeTemplate());
    const deployed = resourcesOf(template);
    const deployedIds = Object.keys(deployed).filter((id) => deployed[id]?.Type !== 'AWS::CDK::Metadata');
    assert.deepEqual(deployedIds.sort(), Object.keys(fast).sort());
    for (const [id, resource] of Object.entries(fast)) {
      const other = deployed[id];
      assert.ok(other);
      const strip = (props: Record<string, unknown>) =>
        resource.Type === 'AWS::Lambda::Function' ? { ...props, Code: undefined } : props;
      assert.deepEqual(strip(other.Properties), strip(resource.Properties), `${id} properties`);
      assert.equal(other.Metadata[HANDLER_METADATA_KEY], resource.Metadata[HANDLER_METADATA_KEY]);
    }
    assert.ok(isRecord(template.Outputs));
    // The two bundled crawler functions, and the account check's inline one (account-concurrency.test.ts).
    const bundled = ofType(template, 'AWS::Lambda::Function').filter(
      ([, fn]) => fn.Metadata[HANDLER_METADATA_KEY],
    );
    assert.equal(bundled.length, 2);
    assert.equal(ofType(template, 'AWS::Lambda::Function').length, 3);
  });
});
