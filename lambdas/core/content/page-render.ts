/**
 * `--render never|auto|always` and `--render-pattern REGEX`: whether a fetched HTML page goes
 * through the browser (ports.ts PageRenderer), and what the crawl keeps of it.
 *
 * - `always` renders every HTML page; a URL matching a `--render-pattern` is rendered in any mode;
 *   `auto` renders what the detector (render-detector.ts) finds to be an application shell, and every
 *   later page of a host one of whose pages needed it (remembered by the fetch container).
 * - The fetch function chooses (renderChoice) and sends the page to the render function, which
 *   renders it (renderPage) and counts the requests it made to the page's host (render-batch.ts).
 * - A render that fails or times out leaves the page as fetched, with the reason in its result.
 */

import { describeError, RENDER_LIMITS } from '../base/index.ts';
import {
  type CrawlConfig,
  type CredentialReader,
  credentialHeaders,
  hostKey,
  type PageRenderer,
  type RenderedPage,
} from '../crawl/index.ts';
import { renderVerdict } from './render-detector.ts';

/** Hosts whose pages needed rendering, per crawl (a container's memory: `crawlId host`). */
export interface RenderedHosts {
  has(key: string): boolean;
  add(key: string): void;
}

/** What decides where a page to render goes (the fetch function's side). */
export interface RenderChoiceDeps {
  /** The stack has a render function (RENDER_QUEUE_URL): pages to render are sent to it. */
  renders?: boolean | undefined;
  renderedHosts?: RenderedHosts | undefined;
}

/** What the render function needs for one page. */
export interface RenderPageDeps {
  renderer: PageRenderer;
  /** The crawl's credentials, for the page's own subrequests (an API behind the same login). */
  credentials?: CredentialReader | undefined;
  now: () => number;
}

/** Whether a fetched page is rendered: not at all, by the render function, or not for want of one. */
export type RenderChoice =
  | { kind: 'skip' }
  | { kind: 'send'; reason: string }
  | { kind: 'unavailable'; note: { code: string; reason: string } };

/** What a render gives: the DOM, or why the page is kept as fetched; and the host's requests it made. */
export type RenderOutcome = (
  | { kind: 'rendered'; html: string; note?: { code: string; reason: string } }
  | { kind: 'failed'; note: { code: string; reason: string } }
) & { sameHostRequests: number };

/** A crawl's `--render-pattern`s, compiled once per config (a container keeps its crawls' configs). */
const compiled = new WeakMap<object, RegExp[]>();

function patternsOf(config: Pick<CrawlConfig, 'renderPatterns'>): RegExp[] {
  let patterns = compiled.get(config);
  if (patterns === undefined) {
    patterns = config.renderPatterns.map((pattern) => new RegExp(pattern));
    compiled.set(config, patterns);
  }
  return patterns;
}

/** Whether any page of the crawl may be rendered (its mode, or a --render-pattern). */
export function mayRender(config: Pick<CrawlConfig, 'render' | 'renderPatterns'>): boolean {
  return config.render !== 'never' || config.renderPatterns.length > 0;
}

/** Whether `url`'s page is rendered, and why. */
export function renderDecision(
  config: Pick<CrawlConfig, 'render' | 'renderPatterns'>,
  url: URL,
  html: string,
  hostNeededIt: boolean,
): { render: boolean; reason: string } {
  if (config.render === 'always') return { render: true, reason: '--render always' };
  if (patternsOf(config).some((pattern) => pattern.test(url.href)))
    return { render: true, reason: 'the URL matches a --render-pattern' };
  if (config.render === 'never') return { render: false, reason: '--render never' };
  if (hostNeededIt) return { render: true, reason: 'an earlier page of its host needed rendering' };
  return renderVerdict(html);
}

/**
 * Where the fetched page `html` of `url` goes. In `auto` mode a host whose page needs rendering is
 * remembered, and its later pages are sent too.
 */
export function renderChoice(
  crawlId: string,
  url: URL,
  html: string,
  config: CrawlConfig,
  deps: RenderChoiceDeps,
): RenderChoice {
  const remembered = `${crawlId} ${hostKey(url)}`;
  const decision = renderDecision(config, url, html, deps.renderedHosts?.has(remembered) ?? false);
  if (!decision.render) return { kind: 'skip' };
  if (!deps.renders)
    return {
      kind: 'unavailable',
      note: {
        code: 'render-unavailable',
        reason: `not rendered (${decision.reason}): this stack has no render function (deploy it with -c render=true)`,
      },
    };
  if (config.render === 'auto') deps.renderedHosts?.add(remembered);
  return { kind: 'send', reason: decision.reason };
}

/** Renders a page in the browser; a browser that fails, or credentials that cannot be read, keep it as fetched. */
export async function renderPage(
  url: URL,
  html: string,
  config: CrawlConfig,
  deps: RenderPageDeps,
): Promise<RenderOutcome> {
  let rendered: RenderedPage;
  try {
    rendered = await render(url, html, config, deps);
  } catch (error) {
    return {
      kind: 'failed',
      note: { code: 'render-failed', reason: `not rendered: ${describeError(error)}` },
      sameHostRequests: 0,
    };
  }
  const { sameHostRequests } = rendered;
  if (!rendered.ok)
    return { kind: 'failed', note: { code: rendered.code, reason: rendered.reason }, sameHostRequests };
  return {
    kind: 'rendered',
    html: rendered.html,
    sameHostRequests,
    ...(rendered.truncated === undefined
      ? {}
      : { note: { code: 'render-truncated', reason: rendered.truncated } }),
  };
}

async function render(
  url: URL,
  html: string,
  config: CrawlConfig,
  deps: RenderPageDeps,
): Promise<RenderedPage> {
  const bundle =
    config.credentials === undefined ? undefined : await deps.credentials?.read(config.credentials.parameter);
  return deps.renderer.render({
    url,
    html,
    userAgent: config.userAgent,
    allowPrivate: config.allowPrivate,
    ...(bundle === undefined
      ? {}
      : {
          // Chromium sets a request's Cookie header itself: the cookies go to its jar instead.
          headersFor: (target: URL) =>
            credentialHeaders({ ...bundle, cookies: [] }, target, Math.floor(deps.now() / 1000)),
          cookies: bundle.cookies,
        }),
    timeMs: RENDER_LIMITS.timeMs,
    maxRequests: RENDER_LIMITS.maxRequests,
    maxBytes: RENDER_LIMITS.maxBytes,
    maxDomChars: RENDER_LIMITS.maxDomChars,
  });
}
