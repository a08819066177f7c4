// The browser `--render` uses on this machine: Debian's Chromium (or CRAWLER_CHROMIUM), given to the
// fetch function's handler through its wiring (lambdas/shared/aws-clients.ts HandlerWiring) when it
// is installed. Lambda code never imports it: playwright-core cannot be bundled into a function, and
// on AWS the browser is to be a render function of its own (docs/crawling.md, "Rendering").
import { existsSync } from 'node:fs';
import { BrowserRenderer } from '../lambdas/adapters/browser-renderer.ts';
import { guardLookup, systemLookup } from '../lambdas/adapters/http-fetcher.ts';
import type { PageRenderer } from '../lambdas/core/ports.ts';

export const CHROMIUM = process.env.CRAWLER_CHROMIUM ?? '/usr/bin/chromium';

/** A renderer on the installed Chromium, or undefined when there is none (pages are then kept as fetched). */
export function localRenderer(): PageRenderer | undefined {
  if (!existsSync(CHROMIUM)) return undefined;
  return new BrowserRenderer({
    executablePath: CHROMIUM,
    // Other hosts: public addresses only. The page's own host: as the crawl fetched it (this machine
    // is not Lambda: loopback pages of a local --allow-private crawl render with their own scripts).
    lookups: { other: guardLookup(systemLookup), ownHost: systemLookup },
  });
}
