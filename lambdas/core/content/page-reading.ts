/**
 * What the crawl reads out of a stored response: the links (and canonical URL) of an HTML page and
 * the content record of a page with text (content-record.ts), from one decode of the body. An HTML
 * page that should be rendered (page-render.ts) is not read here: the render function reads it
 * from its rendered DOM (render-batch.ts, with readHtml). Other content is stored but not parsed.
 */

import { headerValue, PDF_LIMITS } from '../base/index.ts';
import {
  type CrawlConfig,
  type DecodedBody,
  decodeContent,
  decodeText,
  mediaType,
  type PageResponse,
} from '../crawl/index.ts';
import type { DiscoveredLink } from '../frontier/index.ts';
import { type ContentRecord, type CrawlResult, contentKind } from '../results/index.ts';
import {
  type ContentSource,
  htmlContentRecord,
  pdfContentRecord,
  textContentRecord,
} from './content-extract.ts';
import { extractLinks } from './links.ts';
import { type RenderChoiceDeps, renderChoice } from './page-render.ts';
import { extractPdf } from './pdf-content.ts';

export interface PageReading {
  links: DiscoveredLink[];
  canonical?: string;
  content?: ContentRecord;
  note?: { code: string; reason: string };
  /** The page goes to the render function, which reads it (nothing was read here), and why. */
  render?: { reason: string };
}

export interface PageReadingDeps extends RenderChoiceDeps {
  /** CPU time of a page's content extraction (default CONTENT_LIMITS.extractionCpuMs). */
  extractionCpuMs?: number | undefined;
  /** When the visit stops starting requests (epoch ms): a PDF's extraction ends by then at the latest. */
  deadline?: number | undefined;
  /** The capture repeats the earlier crawl's (it is stored as a revisit): it is not rendered again. */
  unchanged?: boolean | undefined;
  now: () => number;
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
  const decoded = decodeBody(response, config);
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
  const choice = deps.unchanged
    ? { kind: 'skip' as const }
    : renderChoice(crawlId, new URL(response.url), text, config, deps);
  if (choice.kind === 'send') return { links: [], render: { reason: choice.reason } };
  const reading = readHtml(source, text, response.url, config, deps);
  return choice.kind === 'unavailable' ? { ...reading, note: choice.note } : reading;
}

/** The stored body with its content-coding undone, within the crawl's decoded size and ratio. */
export function decodeBody(
  response: Pick<PageResponse, 'body' | 'headers'>,
  config: CrawlConfig,
): DecodedBody {
  return decodeContent(
    response.body,
    headerValue(response.headers, 'content-encoding'),
    config.limits.maxDecodedBytes,
    { maxRatio: config.limits.maxDecodeRatio },
  );
}

/** The links, canonical URL and content record of an HTML page (as fetched, or as rendered). */
export function readHtml(
  source: ContentSource,
  html: string,
  finalUrl: string,
  config: CrawlConfig,
  deps: Pick<PageReadingDeps, 'extractionCpuMs'>,
): PageReading {
  const extracted = extractLinks(html, finalUrl, { followNofollow: config.followNofollow });
  return {
    links: extracted.links.map((link) => ({ url: link.url, nofollow: link.nofollow })),
    ...(extracted.canonical ? { canonical: extracted.canonical } : {}),
    ...(config.content === 'none'
      ? {}
      : {
          content: htmlContentRecord(source, html, finalUrl, config.content, {
            ...(deps.extractionCpuMs === undefined ? {} : { cpuBudgetMs: deps.extractionCpuMs }),
          }),
        }),
  };
}
