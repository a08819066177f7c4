/**
 * What the crawl reads out of a stored response: the links (and canonical URL) of an HTML page and
 * the content record of a page with text (content-record.ts), from one decode of the body. An HTML
 * page that should be rendered (page-render.ts) is read from its rendered DOM instead, which is kept
 * for the WARC file. Other content is stored but not parsed.
 */
import { htmlContentRecord, textContentRecord } from './content-extract.ts';
import { type ContentRecord, contentKind } from './content-record.ts';
import type { CrawlConfig } from './crawl-config.ts';
import { headerValue } from './http-headers.ts';
import type { DiscoveredLink } from './link-admission.ts';
import { extractLinks } from './links.ts';
import { decodeContent, decodeText, mediaType } from './page-content.ts';
import { type RenderStepDeps, renderStep } from './page-render.ts';
import type { PageResponse } from './ports.ts';
import type { CrawlResult } from './result.ts';

export interface PageReading {
  links: DiscoveredLink[];
  canonical?: string;
  content?: ContentRecord;
  note?: { code: string; reason: string };
  /** The rendered DOM the links and content came from (a WARC conversion record of its own). */
  rendered?: string;
}

export interface PageReadingDeps extends RenderStepDeps {
  /** CPU time of a page's content extraction (default CONTENT_LIMITS.extractionCpuMs). */
  extractionCpuMs?: number | undefined;
}

export async function readPage(
  crawlId: string,
  response: PageResponse,
  result: CrawlResult,
  config: CrawlConfig,
  deps: PageReadingDeps,
): Promise<PageReading> {
  const mime = mediaType(result.contentType);
  const kind = contentKind(mime);
  const wantsContent = config.content !== 'none' && kind !== undefined;
  if (kind !== 'html' && !wantsContent) return { links: [] };
  const decoded = decodeContent(
    response.body,
    headerValue(response.headers, 'content-encoding'),
    config.limits.maxDecodedBytes,
    { maxRatio: config.limits.maxDecodeRatio },
  );
  if (!decoded.ok) {
    const what = kind === 'html' ? 'links' : 'text';
    return { links: [], note: { code: decoded.code, reason: `${what} not extracted: ${decoded.reason}` } };
  }
  const text = decodeText(decoded.bytes, result.contentType);
  const source = {
    crawlId: result.crawlId,
    key: result.key,
    url: result.url,
    finalUrl: response.url,
    fetchedAt: result.fetchedAt,
    mime: mime ?? '',
  };
  if (kind !== 'html') return { links: [], content: textContentRecord(source, text) };
  const step = await renderStep(crawlId, new URL(response.url), text, config, deps);
  const html = step.kind === 'rendered' ? step.html : text;
  const note = step.kind === 'skipped' ? undefined : step.note;
  const extracted = extractLinks(html, response.url, { followNofollow: config.followNofollow });
  return {
    links: extracted.links.map((link) => ({ url: link.url, nofollow: link.nofollow })),
    ...(extracted.canonical ? { canonical: extracted.canonical } : {}),
    ...(config.content === 'none'
      ? {}
      : {
          content: htmlContentRecord(source, html, response.url, config.content, {
            ...(deps.extractionCpuMs === undefined ? {} : { cpuBudgetMs: deps.extractionCpuMs }),
          }),
        }),
    ...(note === undefined ? {} : { note }),
    ...(step.kind === 'rendered' ? { rendered: step.html } : {}),
  };
}
