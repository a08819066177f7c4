// The deploy path for real: `cdk synth -c render=true` through cdk.json and bin/app.ts (nag on,
// esbuild bundling, offline), producing ESM bundles that load, the render function's package within
// Lambda's limit, and the same template the local runtime synthesizes (which has the render function).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { CHROMIUM_LAYER_MODULES } from '../../cdk/chromium-layer.ts';
import { CONTEXT_KEYS, RENDER_FUNCTION } from '../../cdk/limits.ts';
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
    [
      join(REPO_ROOT, 'node_modules/aws-cdk/bin/cdk'),
      'synth',
      '--quiet',
      '-c',
      `${CONTEXT_KEYS.render}=true`,
      '--output',
      outdir,
    ],
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

/** Absolute path of a resource's bundled asset directory in the cloud assembly. */
function assetOf(id: string): string {
  const resource = resourcesOf(template)[id];
  const assetPath = resource?.Metadata['aws:asset:path'];
  assert.equal(typeof assetPath, 'string', `${id} has a bundled asset`);
  assert.equal(resource?.Metadata['aws:asset:is-bundled'], true);
  return join(outdir, String(assetPath));
}

/** Absolute path of a function's bundled entry in the cloud assembly. */
function bundleOf(functionId: string): string {
  return join(assetOf(functionId), 'index.mjs');
}

/** Bytes of every file under `dir`, as Lambda counts a package unzipped. */
function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  return total;
}

/** Modules a bundle may leave to its layer (the render function's Chromium layer). */
const LAYERED: Record<string, readonly string[]> = { [IDS.renderFunction]: CHROMIUM_LAYER_MODULES };

describe('cdk synth (CLI, real bundling)', () => {
  for (const id of [IDS.fetchFunction, IDS.aggregateFunction, IDS.renderFunction]) {
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
        const layered = (LAYERED[id] ?? []).includes(path);
        assert.ok(external && (isBuiltin(path) || layered), `import ${path} would be missing in Lambda`);
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
          RENDER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/render',
          RENDER_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/render-dlq',
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

  it("the render function's package, its code and the Chromium layer, is within Lambda's 250 MB unzipped, and the layer holds what it leaves out", () => {
    const fn = resourcesOf(template)[IDS.renderFunction];
    assert.equal(
      fn?.Properties.Architectures?.toString(),
      'x86_64',
      '@sparticuz/chromium is built for x86_64',
    );
    const layer = assetOf(IDS.chromiumLayer);
    const modules = join(layer, 'nodejs', 'node_modules');
    for (const name of CHROMIUM_LAYER_MODULES)
      assert.ok(existsSync(join(modules, name, 'package.json')), `${name} is in the layer`);
    assert.ok(
      existsSync(join(modules, '@sparticuz/chromium/bin/chromium.br')),
      'the packed browser is in the layer',
    );
    const total = bytesUnder(assetOf(IDS.renderFunction)) + bytesUnder(layer);
    assert.ok(
      total <= RENDER_FUNCTION.maxUnzippedBytes,
      `${(total / 2 ** 20).toFixed(1)} MiB unzipped, over ${RENDER_FUNCTION.maxUnzippedBytes / 2 ** 20} MiB`,
    );
  });

  it('the render bundle finds playwright-core and @sparticuz/chromium in the layer, as on Lambda (NODE_PATH)', () => {
    const script = `import(${JSON.stringify(pathToFileURL(join(assetOf(IDS.renderFunction), 'index.mjs')).href)}).then(() => { const { createRequire } = require('node:module'); const load = createRequire(${JSON.stringify(pathToFileURL(join(assetOf(IDS.renderFunction), 'index.mjs')).href)}); console.log(JSON.stringify({ playwright: typeof load('playwright-core').chromium.launch, sparticuz: typeof load('@sparticuz/chromium').default.executablePath })); })`;
    const out = execFileSync(process.execPath, ['-e', script], {
      cwd: tmpdir(),
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH ?? '',
        NODE_PATH: join(assetOf(IDS.chromiumLayer), 'nodejs', 'node_modules'),
      },
    });
    assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1) ?? ''), {
      playwright: 'function',
      sparticuz: 'function',
    });
  });

  it('produces the template synthesizeTemplate() gives the local runtime (code assets aside)', () => {
    const fast = resourcesOf(synthesizeTemplate());
    const deployed = resourcesOf(template);
    const deployedIds = Object.keys(deployed).filter((id) => deployed[id]?.Type !== 'AWS::CDK::Metadata');
    assert.deepEqual(deployedIds.sort(), Object.keys(fast).sort());
    for (const [id, resource] of Object.entries(fast)) {
      const other = deployed[id];
      assert.ok(other);
      const strip = (props: Record<string, unknown>) =>
        resource.Type === 'AWS::Lambda::Function'
          ? { ...props, Code: undefined }
          : resource.Type === 'AWS::Lambda::LayerVersion'
            ? { ...props, Content: undefined }
            : props;
      assert.deepEqual(strip(other.Properties), strip(resource.Properties), `${id} properties`);
      assert.equal(other.Metadata[HANDLER_METADATA_KEY], resource.Metadata[HANDLER_METADATA_KEY]);
    }
    assert.ok(isRecord(template.Outputs));
    // The three bundled crawler functions, and the account check's inline one (account-concurrency.test.ts).
    const bundled = ofType(template, 'AWS::Lambda::Function').filter(
      ([, fn]) => fn.Metadata[HANDLER_METADATA_KEY],
    );
    assert.equal(bundled.length, 3);
    assert.equal(ofType(template, 'AWS::Lambda::Function').length, 4);
  });
});
