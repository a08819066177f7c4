/**
 * The URLs a re-crawl starts from (`--since`): every URL the earlier crawl captured, with that
 * capture (core/crawl/recrawl.ts), read from its results index as a stream.
 */

import { type BlobReader, damageWarning, streamIndex } from '../core/archive/index.ts';
import { type PriorCapture, priorOf } from '../core/crawl/index.ts';

export interface PriorUrl {
  url: string;
  depth: number;
  capture: PriorCapture;
}

/**
 * A damaged part of the earlier index is skipped with a warning: its URLs are then found again as
 * links, and fetched as new ones.
 */
export async function* priorUrls(
  blobs: BlobReader,
  sinceCrawlId: string,
  onWarning: (line: string) => void,
): AsyncGenerator<PriorUrl> {
  for await (const { line } of streamIndex(blobs, sinceCrawlId, {
    onDamage: (damage) => onWarning(damageWarning(damage)),
  })) {
    const capture = priorOf(line);
    if (capture !== undefined) yield { url: line.url, depth: line.depth, capture };
  }
}
