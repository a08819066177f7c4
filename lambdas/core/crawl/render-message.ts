/**
 * A page to render (`--render` with a render function: docs/crawling.md, "Rendering"): the fetch
 * function sends it to the render queue once the page's response is in a WARC file, instead of its
 * result. The render function reads the response back from there (no second fetch) and sends the
 * result itself, with the links and content of the rendered DOM (core/batches/render-batch.ts).
 */
import { z } from 'zod';
import { CRAWL_ID_PATTERN } from '../../shared/contracts.ts';
import { ResultSchema } from '../results/index.ts';
import { parseMessageOfKind } from './task.ts';

export const RenderMessageSchema = z.object({
  v: z.literal(1),
  kind: z.literal('render'),
  crawlId: z.string().regex(CRAWL_ID_PATTERN),
  /** Why the page is rendered (page-render.ts renderDecision). */
  reason: z.string().max(200),
  /** The token of the hold on the page's host (host-visit-ports.ts RenderHold): the render ends it. */
  hold: z.string().min(1).max(64),
  /** When that hold lapses (epoch ms). */
  holdUntil: z.number().int(),
  /** The host's delay when the page was fetched (a robots.txt Crawl-delay included): the browser's requests to it are paced by it. */
  delayMs: z.number().int().min(0),
  /** The page's result as written: its WARC pointer names the response to render. */
  result: ResultSchema.required({ warc: true }),
});

export type RenderMessage = z.infer<typeof RenderMessageSchema>;

/** What a fetched page to render carries to its render message, from its visit. */
export type PageToRender = Pick<RenderMessage, 'reason' | 'hold' | 'holdUntil' | 'delayMs'>;

/** A render message, or undefined when the body is anything else. */
export function parseRenderMessage(body: string): RenderMessage | undefined {
  return parseMessageOfKind(body, 'render', RenderMessageSchema);
}
