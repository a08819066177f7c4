/**
 * The render function's browser as a Lambda layer: @sparticuz/chromium (its brotli-packed Chromium,
 * fonts and Amazon Linux libraries, unpacked to /tmp on a container's first render) and
 * playwright-core, each with the packages it depends on, under `nodejs/node_modules` (where Node on
 * Lambda finds a layer's modules). Neither can be bundled: @sparticuz/chromium reads its `bin` folder
 * beside its code, and playwright-core loads files of its own at run time.
 *
 * The layer is copied from this repository's node_modules at synth (no network, no Docker); its asset
 * hash is the packages' versions, so an unchanged layer is not uploaded again.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { fromRoot } from './paths.ts';

/** The modules the render function leaves out of its bundle and finds in the layer. */
export const CHROMIUM_LAYER_MODULES = ['@sparticuz/chromium', 'playwright-core'];

export class ChromiumLayer extends lambda.LayerVersion {
  /** Every package in the layer, with its version (dependencies included). */
  readonly packages: ReadonlyMap<string, string>;

  constructor(scope: Construct, id: string) {
    const packages = dependencyClosure(CHROMIUM_LAYER_MODULES);
    const hash = [...packages].map(([name, version]) => `${name}@${version}`).join(',');
    super(scope, id, {
      description: `Headless Chromium for the render function: ${CHROMIUM_LAYER_MODULES.map((name) => `${name}@${packages.get(name)}`).join(', ')}`,
      compatibleArchitectures: [lambda.Architecture.X86_64],
      compatibleRuntimes: [lambda.Runtime.NODEJS_24_X],
      code: lambda.Code.fromAsset(fromRoot('node_modules/@sparticuz/chromium'), {
        assetHash: hash,
        assetHashType: AssetHashType.CUSTOM,
        bundling: {
          // Never used: the local copy below always succeeds.
          image: DockerImage.fromRegistry('public.ecr.aws/docker/library/busybox'),
          local: {
            tryBundle(outputDir: string): boolean {
              for (const name of packages.keys())
                cpSync(fromRoot(`node_modules/${name}`), join(outputDir, 'nodejs', 'node_modules', name), {
                  recursive: true,
                  dereference: true,
                });
              return true;
            },
          },
        },
      }),
    });
    this.packages = packages;
  }
}

/** The packages `roots` need at run time (dependencies, and the optional ones installed), by name. */
export function dependencyClosure(roots: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  const visit = (name: string, optional: boolean) => {
    if (found.has(name)) return;
    let manifest: {
      version: string;
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
    };
    try {
      manifest = JSON.parse(readFileSync(fromRoot(`node_modules/${name}/package.json`), 'utf8'));
    } catch (error) {
      if (optional) return;
      throw new Error(`the Chromium layer needs ${name}, which is not installed: run npm ci`, {
        cause: error,
      });
    }
    found.set(name, manifest.version);
    for (const dep of Object.keys(manifest.dependencies ?? {})) visit(dep, false);
    for (const dep of Object.keys({ ...manifest.optionalDependencies, ...manifest.peerDependencies }))
      visit(dep, true);
  };
  for (const root of roots) visit(root, false);
  return found;
}
