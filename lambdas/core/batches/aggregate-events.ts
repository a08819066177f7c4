/**
 * The crawl events the aggregate batch publishes (crawl-events.ts): with `--page-events`, a
 * re-crawl's page changes, before their index part is written; and the crawl's end, once, after its
 * summary. Apart from the batch's steps: both are skipped when the batch has no event publisher.
 */
import { endEventMarkerKey, resultsPrefix, summaryKey } from '../../shared/contracts.ts';
import type { CrawlCounters } from '../crawl/index.ts';
import type { AggregateDeps, ResultItem } from './aggregate-types.ts';
import { endEvent, eventOf } from './crawl-events.ts';

/**
 * The crawl's end event, once: published, then marked done (endEventMarkerKey). A repeat finds the
 * mark and publishes nothing; a crash between the publish and the mark publishes it again (the same
 * `eventId`).
 */
export async function announceEnd(
  crawlId: string,
  counters: CrawlCounters,
  deps: AggregateDeps,
): Promise<void> {
  if (deps.events === undefined) return;
  const marker = endEventMarkerKey(crawlId);
  if (await deps.blobs.exists(marker)) return;
  const now = deps.now ?? (() => new Date());
  const at = counters.endedAt === undefined ? now() : new Date(counters.endedAt);
  const event = endEvent(
    crawlId,
    counters,
    { summaryKey: summaryKey(crawlId), resultsPrefix: resultsPrefix(crawlId) },
    at,
  );
  await deps.events.publisher.publish([event]);
  await deps.blobs.putIfAbsent(
    marker,
    new TextEncoder().encode(`${JSON.stringify(event)}\n`),
    'application/json',
  );
}

/** A re-crawl with `--page-events`: a `Page Changed` event for each of these lines that is not `same`. */
export async function publishPageEvents(
  crawlId: string,
  items: readonly ResultItem[],
  deps: AggregateDeps,
): Promise<void> {
  if (deps.events === undefined) return;
  const changed = items.filter((item) => item.result.change !== undefined && item.result.change !== 'same');
  if (changed.length === 0) return;
  const config = await deps.events.configs.get(crawlId);
  if (!config.pageEvents || config.since === undefined) return;
  const since = config.since;
  const at = (deps.now ?? (() => new Date()))().toISOString();
  await deps.events.publisher.publish(
    changed.map(({ result }) =>
      eventOf('pageChanged', {
        v: 1,
        eventId: `${crawlId}:page:${result.key}`,
        crawlId,
        at,
        url: result.url,
        key: result.key,
        change: result.change as 'new' | 'changed' | 'removed',
        ...(result.status === undefined ? {} : { status: result.status }),
        since,
      }),
    ),
  );
}
