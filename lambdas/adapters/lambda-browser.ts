/**
 * The render function's browser on Lambda: @sparticuz/chromium (from the stack's Chromium layer,
 * unpacked to /tmp on a container's first render), graphics off, with the flags Lambda needs: no
 * sandbox (Lambda allows none) and one process (no zygote, as @sparticuz/chromium runs it).
 */
import type { PageRenderer } from '../core/crawl/index.ts';
import { BrowserRenderer, layerRequire } from './browser-renderer.ts';
import { renderLookups } from './http-fetcher.ts';

export const LAMBDA_CHROMIUM_ARGS: readonly string[] = [
  '--single-process',
  '--no-zygote',
  '--disable-webgl',
  '--in-process-gpu',
  '--font-render-hinting=none',
];

/** `refuseHostLocal`: inside Lambda (this machine's own addresses are never dialled, even with --allow-private). */
export function lambdaBrowser(refuseHostLocal: boolean): PageRenderer {
  return new BrowserRenderer({
    executablePath: async () => {
      const { default: chromium } = layerRequire(
        '@sparticuz/chromium',
      ) as typeof import('@sparticuz/chromium');
      chromium.setGraphicsMode = false;
      return chromium.executablePath();
    },
    extraArgs: LAMBDA_CHROMIUM_ARGS,
    sandbox: false,
    lookups: renderLookups(refuseHostLocal),
  });
}
