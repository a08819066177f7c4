// The browser `--render` uses on this machine: Debian's Chromium (or CRAWLER_CHROMIUM), given to the
// render function's handler through its wiring (lambdas/shared/aws-clients.ts HandlerWiring) when it
// is installed. On Lambda the render function runs @sparticuz/chromium's instead
// (lambdas/adapters/lambda-browser.ts), which unpacks itself to /tmp/chromium: not safe for several
// processes of this machine at once.
import { existsSync } from 'node:fs';
import type { PageRenderer, RenderedPage, RenderRequest } from '../lambdas/core/crawl/index.ts';

export const CHROMIUM = process.env.CRAWLER_CHROMIUM ?? '/usr/bin/chromium';

/**
 * A renderer on the installed Chromium, or undefined when there is none (pages are then kept as
 * fetched). playwright-core is loaded with the first render: a crawl that renders nothing pays nothing.
 */
export function localRenderer(): PageRenderer | undefined {
  if (!existsSync(CHROMIUM)) return undefined;
  let started: Promise<PageRenderer> | undefined;
  const browser = () => {
    started ??= (async () => {
      const { BrowserRenderer } = await import('../lambdas/adapters/browser-renderer.ts');
      const { renderLookups } = await import('../lambdas/adapters/http-fetcher.ts');
      // Public addresses only, but the page's own host in an --allow-private crawl (this machine is
      // not Lambda: loopback pages of a local crawl render with their own scripts).
      return new BrowserRenderer({ executablePath: CHROMIUM, lookups: renderLookups(false) });
    })();
    return started;
  };
  return {
    render: async (request: RenderRequest): Promise<RenderedPage> => (await browser()).render(request),
    close: async () => {
      if (started !== undefined) await (await started).close();
    },
  };
}
