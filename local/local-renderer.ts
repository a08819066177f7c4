// The browser `--render` uses on this machine: Debian's Chromium (or CRAWLER_CHROMIUM), given to the
// fetch function's handler through its wiring (lambdas/shared/aws-clients.ts HandlerWiring) when it
// is installed. Lambda code never imports it: playwright-core cannot be bundled into a function, and
// on AWS the browser is to be a render function of its own (docs/crawling.md, "Rendering").
import { existsSync } from 'node:fs';
import type { PageRenderer, RenderedPage, RenderRequest } from '../lambdas/core/ports.ts';

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
      const { guardLookup, systemLookup } = await import('../lambdas/adapters/http-fetcher.ts');
      // Public addresses only, but the page's own host in an --allow-private crawl (this machine is
      // not Lambda: loopback pages of a local crawl render with their own scripts).
      return new BrowserRenderer({
        executablePath: CHROMIUM,
        lookups: { public: guardLookup(systemLookup), private: systemLookup },
      });
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
