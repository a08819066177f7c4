/**
 * What the crawl reads out of a stored response: the links (and canonical URL) of an HTML page and
 * the content record of a page with text (content-record.ts), from one decode of the body. An HTML
 * page that should be rendered (page-render.ts) is read from its rendered DOM instead, which is kept
 * for the WARC file. Other content is stored but not parsed.
 */
import { htmlContentRecord, pdfContentRecord, textContentRecord } from './content-extract.ts';
import { type ContentRecord, contentKind } from './content-record.ts';
import type { CrawlConfig } from './crawl-config.ts';
import { headerValue } from './http-headers.ts';
import { PDF_LIMITS } from './limits.ts';
import type { DiscoveredLink } from './link-admission.ts';
import { extractLinks } from './links.ts';
import { decodeContent, decodeText, mediaType } from './page-content.ts';
import { type RenderStepDeps, renderStep } from './page-render.ts';
import { extractPdf } from './pdf-content.ts';
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
  /** When the visit stops starting requests (epoch ms): a PDF's extraction ends by then at the latest. */
  deadline?: number | undefined;
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
  const source = {
    crawlId: result.crawlId,
    key: result.key,
    url: result.url,
    finalUrl: response.url,
    fetchedAt: result.fetchedAt,
    mime: mime ?? '',
  };
  // `wantsContent` holds for every kind but html (returned above otherwise).
  if (kind === 'pdf' && config.content !== 'none') {
    const cut = response.truncated === 'length' ? ' (the body was cut at the size cap)' : '';
    const left = deps.deadline === undefined ? PDF_LIMITS.timeBudgetMs : deps.deadline - deps.now();
    const pdf = await extractPdf(decoded.bytes, {
      timeBudgetMs: Math.max(0, Math.min(PDF_LIMITS.timeBudgetMs, left)),
    });
    const truncated = pdf.truncated === undefined ? undefined : `${pdf.truncated}${cut}`;
    return {
      links: [],
      content: pdfContentRecord(
        source,
        { ...pdf, ...(truncated === undefined ? {} : { truncated }) },
        config.content,
      ),
    };
  }
  const text = decodeText(decoded.bytes, result.contentType);
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
