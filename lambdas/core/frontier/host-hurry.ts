/**
 * A host handed back only to await results of its URLs in flight (VisitEnd `results`) is visited as
 * soon as the crawl's results are written, not INFLIGHT_RECHECK_MS later: its last pages drain it at
 * once, and a crawl's end is confirmed as soon as its last host drains (docs/frontier.md, "Hurry").
 * The aggregate batch calls it at a crawl's end only (aggregate-batch.ts). It reads which of the
 * crawl's hosts wait so (a Query a shard), not only its own results' hosts: a host whose results an
 * earlier batch wrote, before the crawl's end showed, waits so too. Each gets a copy of the visit
 * message it expects, due now; whichever copy comes first takes the host, and the other finds it
 * taken (held, stale or idle), as any duplicate does.
 *
 * Best effort: a host missed (its release landed after the read) or a failed call leaves the host to
 * its own message, as before. Nothing here can lose or repeat a URL.
 */

import type { HostVisits, OutgoingVisit, TaskSender } from '../crawl/index.ts';
import { visitOf } from './link-admission.ts';

export interface HurryDeps {
  hosts: Pick<HostVisits, 'awaiting' | 'hurry'>;
  tasks: TaskSender;
  now: () => number;
}

/** Hurries the crawl's hosts that await results; how many were sent a visit. */
export async function hurryAwaitingHosts(crawlId: string, deps: HurryDeps): Promise<number> {
  const awaiting = await deps.hosts.awaiting(crawlId);
  const visits: OutgoingVisit[] = [];
  await Promise.all(
    awaiting.map(async (host) => {
      const ticket = await deps.hosts.hurry(crawlId, host, deps.now());
      if (ticket !== undefined) visits.push({ visit: visitOf(crawlId, host, ticket) });
    }),
  );
  if (visits.length > 0) await deps.tasks.sendVisits(visits);
  return visits.length;
}
