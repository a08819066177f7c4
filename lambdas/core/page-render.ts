/**
 * `--render never|auto|always` and `--render-pattern REGEX`: whether a fetched HTML page goes
 * through the browser (ports.ts PageRenderer), and what the crawl keeps of it.
 *
 * - `always` renders every HTML page; a URL matching a `--render-pattern` is rendered in any mode;
 *   `auto` renders what the detector (render-detector.ts) finds to be an application shell, and every
 *   later page of a host one of whose pages needed it (remembered by the fetch container).
 * - The page's own subrequests count toward its host's pace: the host's next request waits one
 *   crawl delay for each.
 * - A render that fails or times out leaves the page as fetched, with the reason in its result.
 */
import type { CrawlConfig } from './crawl-config.ts';
import { credentialHeaders } from './credentials.ts';
import { describeError } from './errors.ts';
import { RENDER_LIMITS } from './limits.ts';
import { hostKey } from './politeness.ts';
import type { CredentialReader, HostSlots, PageRenderer, RenderedPage } from './ports.ts';
import { renderVerdict } from './render-detector.ts';

/** Hosts whose pages needed rendering, per crawl (a container's memory: `crawlId host`). */
export interface RenderedHosts {
  has(key: string): boolean;
  add(key: string): void;
}

export interface RenderStepDeps {
  renderer?: PageRenderer | undefined;
  /** The crawl's credentials, for the page's own subrequests (an API behind the same login). */
  credentials?: CredentialReader | undefined;
  renderedHosts?: RenderedHosts | undefined;
  pace: HostSlots;
  now: () => number;
}

export type RenderStep =
  | { kind: 'skipped' }
  | { kind: 'rendered'; html: string; note?: { code: string; reason: string } }
  | { kind: 'failed'; note: { code: string; reason: string } };

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

export async function renderStep(
  crawlId: string,
  url: URL,
  html: string,
  config: CrawlConfig,
  deps: RenderStepDeps,
): Promise<RenderStep> {
  const remembered = `${crawlId} ${hostKey(url)}`;
  const decision = renderDecision(config, url, html, deps.renderedHosts?.has(remembered) ?? false);
  if (!decision.render) return { kind: 'skipped' };
  if (deps.renderer === undefined)
    return {
      kind: 'failed',
      note: {
        code: 'render-unavailable',
        reason: `not rendered (${decision.reason}): this fetch function has no browser`,
      },
    };
  let rendered: RenderedPage;
  try {
    rendered = await render(url, html, config, deps.renderer, deps);
  } catch (error) {
    // A browser that cannot start, or credentials that cannot be read: the page is kept as fetched.
    return {
      kind: 'failed',
      note: { code: 'render-failed', reason: `not rendered: ${describeError(error)}` },
    };
  }
  if (rendered.sameHostRequests > 0 && config.delayMs > 0)
    await deps.pace.pushBack(crawlId, hostKey(url), deps.now() + rendered.sameHostRequests * config.delayMs);
  if (!rendered.ok) return { kind: 'failed', note: { code: rendered.code, reason: rendered.reason } };
  if (config.render === 'auto') deps.renderedHosts?.add(remembered);
  return {
    kind: 'rendered',
    html: rendered.html,
    ...(rendered.truncated === undefined
      ? {}
      : { note: { code: 'render-truncated', reason: rendered.truncated } }),
  };
}

async function render(
  url: URL,
  html: string,
  config: CrawlConfig,
  renderer: PageRenderer,
  deps: RenderStepDeps,
): Promise<RenderedPage> {
  const bundle =
    config.credentials === undefined ? undefined : await deps.credentials?.read(config.credentials.parameter);
  return renderer.render({
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
