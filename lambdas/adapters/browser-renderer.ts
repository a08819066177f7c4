/**
 * Renders a fetched HTML page in headless Chromium (playwright-core), for `--render` (core/content/page-render.ts).
 *
 * - **No second fetch**: the page's document is the response the crawler already has (route.fulfill);
 *   only the page's own subrequests go out, and each of them through RenderGuardProxy (the address
 *   guard, on the address dialled).
 * - **Blocked by default**: images, media and fonts (aborted before any connection); service workers.
 * - **Bounded**: a time budget for the whole render (an endless script or an infinite scroll ends
 *   there), a number of subrequests and of their bytes, and a cap on the DOM kept. A render that
 *   cannot be read back in time (a script that never yields) ends `render-timeout`, and the crawl
 *   keeps the page as fetched.
 * - One browser per container, one context per page (no cookies or storage shared between pages).
 */

import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import type { PageRenderer, RenderedPage, RenderRequest } from '../core/crawl/index.ts';
import { type GuardLookups, type RenderAccount, RenderGuardProxy } from './render-guard-proxy.ts';

/**
 * Loads a module the render function finds in its Chromium layer: resolved as CommonJS, because on
 * Lambda only NODE_PATH names the layer's /opt/nodejs/node_modules, which ESM resolution ignores.
 */
export const layerRequire = createRequire(import.meta.url);

/** Resource types never loaded: the DOM does not need them and they are most of a page's bytes. */
const BLOCKED_TYPES = new Set(['image', 'media', 'font']);
/** The network is quiet once nothing has been in flight this long. */
const QUIET_MS = 300;

export interface BrowserRendererOptions {
  /** The Chromium to run (Debian's /usr/bin/chromium; @sparticuz/chromium's on Lambda, unpacked first). */
  executablePath: string | (() => Promise<string>);
  lookups: GuardLookups;
  /** Flags the platform needs on top of ours (Lambda's: lambda-browser.ts). */
  extraArgs?: readonly string[];
  /** Chromium's own sandbox (default: unless running as root). Lambda allows none. */
  sandbox?: boolean;
}

export class BrowserRenderer implements PageRenderer {
  readonly #options: BrowserRendererOptions;
  readonly #guard: RenderGuardProxy;
  #browser: Promise<Browser> | undefined;

  constructor(options: BrowserRendererOptions) {
    this.#options = options;
    this.#guard = new RenderGuardProxy(options.lookups);
  }

  async render(request: RenderRequest): Promise<RenderedPage> {
    const browser = await this.#launch();
    const pass = this.#guard.open(
      request.url.host,
      { maxRequests: request.maxRequests, maxBytes: request.maxBytes },
      request.allowPrivate,
    );
    const deadline = Date.now() + request.timeMs;
    let context: BrowserContext | undefined;
    try {
      context = await browser.newContext({
        proxy: { server: this.#guard.server, username: pass.username, password: pass.password },
        userAgent: request.userAgent,
        serviceWorkers: 'block',
        acceptDownloads: false,
        javaScriptEnabled: true,
      });
      await addCookies(context, request.cookies);
      await context.route('**/*', routeOf(request));
      const dom = await readDom(await context.newPage(), request, deadline);
      return renderedPage(request, dom, pass.account);
    } finally {
      this.#guard.close(pass.username);
      if (context !== undefined) await this.#closeContext(context);
    }
  }

  async close(): Promise<void> {
    const browser = this.#browser;
    this.#browser = undefined;
    if (browser !== undefined) await (await browser).close().catch(() => {});
    await this.#guard.stop();
  }

  #launch(): Promise<Browser> {
    if (this.#browser !== undefined) return this.#browser;
    const launching = (async () => {
      await this.#guard.start();
      const { executablePath, extraArgs = [], sandbox = process.getuid?.() !== 0 } = this.#options;
      const { chromium } = layerRequire('playwright-core') as typeof import('playwright-core');
      return chromium.launch({
        executablePath: typeof executablePath === 'string' ? executablePath : await executablePath(),
        headless: true,
        // The proxy is given per context (each render's credentials); loopback is not exempt from it.
        proxy: { server: 'per-context' },
        chromiumSandbox: sandbox,
        args: [
          '--disable-gpu',
          '--disable-dev-shm-usage',
          '--proxy-bypass-list=<-loopback>',
          '--no-first-run',
          '--mute-audio',
          ...extraArgs,
        ],
      });
    })();
    // A launch that failed, or a browser that died since (one crashed page takes a single-process
    // Chromium with it), is not kept: the next render starts another.
    const forget = () => {
      if (this.#browser === launching) this.#browser = undefined;
    };
    launching.then((browser) => browser.on('disconnected', forget), forget);
    this.#browser = launching;
    return this.#browser;
  }

  /** A renderer stuck in a script may not close its context: the browser is restarted instead. */
  async #closeContext(context: BrowserContext): Promise<void> {
    const closed = await withDeadline(Date.now() + 5_000, async () => {
      await context.close();
      return true;
    });
    if (closed === undefined) {
      const browser = this.#browser;
      this.#browser = undefined;
      await (await browser)?.close().catch(() => {});
    }
  }
}

/** The crawl's cookies, in the context's jar: the browser sends each by its domain, path and secure flag. */
async function addCookies(context: BrowserContext, cookies: RenderRequest['cookies']): Promise<void> {
  if (cookies === undefined || cookies.length === 0) return;
  await context.addCookies(
    cookies.map((cookie) => ({
      name: cookie.name,
      value: cookie.value,
      domain: cookie.subdomains ? `.${cookie.domain}` : cookie.domain,
      path: cookie.path,
      secure: cookie.secure,
      ...(cookie.expires === 0 ? {} : { expires: cookie.expires }),
    })),
  );
}

/** What becomes of each request of the page: its document served, the rest blocked or let through. */
function routeOf(request: RenderRequest): (route: Route) => Promise<void> {
  let documentServed = false;
  return (route) => {
    const req = route.request();
    // The first navigation is the page's own: served from the response already fetched.
    if (!documentServed && req.isNavigationRequest()) {
      documentServed = true;
      return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: request.html });
    }
    if (req.isNavigationRequest() && req.frame() === req.frame().page().mainFrame()) {
      // A script navigating the page away: not followed (its target is a URL of its own).
      return route.abort('blockedbyclient');
    }
    if (BLOCKED_TYPES.has(req.resourceType())) {
      return route.abort('blockedbyclient');
    }
    // The crawl's credentials go with a subrequest within their scope (credentials.ts), as with
    // the crawler's own requests; the browser's copy of the request record is not kept.
    const added = request.headersFor?.(new URL(req.url()));
    if (added === undefined || Object.keys(added).length === 0) return route.continue();
    return route.continue({ headers: { ...req.headers(), ...added } });
  };
}

/** The rendered DOM, read once the network is quiet; undefined when not read by the deadline. */
function readDom(page: Page, request: RenderRequest, deadline: number): Promise<RenderedDom | undefined> {
  let inflight = 0;
  let lastActivity = Date.now();
  const busy = (delta: number) => () => {
    inflight += delta;
    lastActivity = Date.now();
  };
  page.on('request', busy(1));
  page.on('requestfinished', busy(-1));
  page.on('requestfailed', busy(-1));
  return withDeadline(deadline, async () => {
    await page.goto(request.url.href, {
      waitUntil: 'domcontentloaded',
      timeout: Math.max(1, deadline - Date.now()),
    });
    while (Date.now() < deadline && (inflight > 0 || Date.now() - lastActivity < QUIET_MS)) await sleep(50);
    // Cut in the browser: a script that grew its DOM without end sends no more than the cap.
    // (A string: this package is typed without the DOM. maxDomChars is a number of ours.)
    return page.evaluate<RenderedDom>(
      `(() => { const html = '<!DOCTYPE html>' + (document.documentElement ? document.documentElement.outerHTML : ''); return { length: html.length, html: html.slice(0, ${Math.floor(request.maxDomChars)}) }; })()`,
    );
  });
}

/** The DOM as read in the browser: cut at maxDomChars, with the length it had. */
interface RenderedDom {
  length: number;
  html: string;
}

function renderedPage(
  request: RenderRequest,
  dom: RenderedDom | undefined,
  account: RenderAccount,
): RenderedPage {
  const base = { sameHostRequests: account.sameHostRequests, refused: account.refused };
  if (dom === undefined)
    return {
      ok: false,
      code: 'render-timeout',
      reason: `not rendered within ${request.timeMs} ms`,
      ...base,
    };
  return {
    ok: true,
    html: dom.html,
    ...(dom.length > request.maxDomChars
      ? { truncated: `rendered DOM cut at ${request.maxDomChars} characters (it had ${dom.length})` }
      : {}),
    ...base,
  };
}

/** `fn`'s value, or undefined when it has not settled by `deadline` (epoch ms) or failed. */
async function withDeadline<T>(deadline: number, fn: () => Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([fn().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
