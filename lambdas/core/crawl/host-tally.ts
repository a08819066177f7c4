/**
 * A drained host's exact counts (HostTally, its `DONE#` item), added up URL item by URL item as the
 * visit's pass over the host's partition meets them (host-visit.ts).
 */
import type { HostUrl } from './frontier-ports.ts';
import type { HostTally } from './host-visit-ports.ts';

/**
 * No parts: the visit drains a host only once every part its URLs name is written (host-visit.ts),
 * and a host's parts would outgrow one item on a large crawl.
 */
export const emptyTally = (): HostTally => ({ total: 0, byOutcome: {}, bytes: 0, requests: 0, parts: [] });

/** Adds one done URL item to the tally (and returns it, so a list folds with `reduce`). */
export function addToTally(tally: HostTally, url: HostUrl): HostTally {
  // A carried link counts in its page's `kids`, in the page's host: counted here it would count twice.
  if (url.carried) return tally;
  tally.total += 1 + (url.kids ?? 0);
  if (url.kids) tally.byOutcome.skipped = (tally.byOutcome.skipped ?? 0) + url.kids;
  if (url.outcome) tally.byOutcome[url.outcome] = (tally.byOutcome[url.outcome] ?? 0) + 1;
  tally.bytes += url.bytes ?? 0;
  tally.requests += url.requests ?? 0;
  return tally;
}
