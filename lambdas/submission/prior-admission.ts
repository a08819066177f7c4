/**
 * A re-crawl's earlier URLs (`--since`): every URL the crawl it follows fetched is put in the frontier
 * with its capture, chunk by chunk, before any host is woken, and the hosts are woken once the seeds
 * are admitted too. Apart from submit-crawl.ts: only a re-crawl takes this path, and it has rules of
 * its own (adaptive revisits: a URL not due yet ends `same`, unfetched).
 */
import type { BlobReader } from '../core/archive/index.ts';
import { LruSet } from '../core/base/index.ts';
import { isDue } from '../core/crawl/index.ts';
import { admitLinks, confirmSent, type HostToWake, wakeHosts } from '../core/frontier/index.ts';
import type { CrawlResult } from '../core/results/index.ts';
import { type PriorUrl, priorUrls } from './prior-urls.ts';
import type { Submission } from './seed-admission.ts';

/** What the earlier URLs' admission leaves for the end of the submission. */
export interface PriorAdmission {
  /** Hosts whose wake waits until every URL of the crawl is put. */
  asleep: Map<string, HostToWake>;
  /** The URLs due again (admitted with their captures). */
  due: number;
  /** An adaptive re-crawl's URLs not due yet, reported `same`. */
  notDue: number;
}

/**
 * A re-crawl puts every URL of the crawl it follows (`config.since`), each with its capture, before
 * any host is woken: a page fetched early would otherwise admit a link to one of them without its
 * capture.
 */
export async function admitPriorUrls(
  submission: Submission,
  since: string,
  blobs: BlobReader,
  onWarning: (line: string) => void,
): Promise<PriorAdmission> {
  const admission: PriorAdmission = { asleep: new Map(), due: 0, notDue: 0 };
  let chunk: PriorUrl[] = [];
  let rounds = 0;
  for await (const url of priorUrls(blobs, since, onWarning)) {
    chunk.push(url);
    if (chunk.length < submission.chunkSize) continue;
    await admitPriors(submission, chunk, rounds++, admission);
    chunk = [];
  }
  if (chunk.length > 0) await admitPriors(submission, chunk, rounds, admission);
  return admission;
}

/** Wakes the hosts the earlier URLs' admission left asleep, once the seeds are admitted too. */
export async function wakePriorHosts(
  { frontier, tasks }: Submission,
  admission: PriorAdmission,
): Promise<void> {
  const visits = await wakeHosts(admission.asleep.values(), { hosts: frontier, now: new Date() });
  await tasks.sendVisits(visits);
  await confirmSent(visits, frontier);
}

/** One chunk of earlier URLs (the `round`th) put and its skipped results sent; counted in `admission`. */
async function admitPriors(
  { config, frontier, results }: Submission,
  urls: PriorUrl[],
  round: number,
  admission: PriorAdmission,
): Promise<void> {
  const now = new Date();
  // Adaptive revisits: a URL not due yet is not fetched; its result says `same`, from the earlier crawl.
  const notDue = new Map(
    urls.flatMap((url) => (config.adaptive && !isDue(url.capture, now) ? [[url.url, url]] : [])),
  );
  const admitted = await admitLinks(
    [
      {
        config,
        parentKey: `prior#${round}`,
        depth: -1,
        // Put before anything else of the crawl: a read of which exist would find none.
        unprobed: true,
        links: urls.map((url) => ({
          url: url.url,
          nofollow: false,
          prior: url,
          ...(notDue.has(url.url)
            ? { skip: { code: 'not-due', reason: `not due before ${url.capture.dueAt} (--adaptive)` } }
            : {}),
        })),
      },
    ],
    { frontier, hosts: frontier, seen: new LruSet(1), now, deferWakes: true },
  );
  for (const host of admitted.asleep) admission.asleep.set(`${host.crawlId}\n${host.host}`, host);
  await results.sendResults(admitted.results.map((result) => notDueResult(result, notDue.get(result.url))));
  admission.due += admitted.admitted - admitted.results.length;
  admission.notDue += admitted.results.filter((result) => result.code === 'not-due').length;
}

/**
 * A not-due URL's `skipped` result, as the earlier crawl left it: `same`, pointing at the earlier
 * capture and content record, with its interval and due time unchanged (no request was made).
 */
function notDueResult(result: CrawlResult, url: PriorUrl | undefined): CrawlResult {
  if (url === undefined || result.code !== 'not-due') return result;
  const { capture } = url;
  return {
    ...result,
    change: 'same',
    sha1: capture.sha1,
    warc: capture.warc,
    ...(capture.content === undefined ? {} : { content: capture.content }),
    ...(capture.etag === undefined ? {} : { etag: capture.etag }),
    ...(capture.lastModified === undefined ? {} : { lastModified: capture.lastModified }),
    ...(capture.interval === undefined ? {} : { interval: capture.interval }),
    ...(capture.dueAt === undefined ? {} : { dueAt: capture.dueAt }),
  };
}
