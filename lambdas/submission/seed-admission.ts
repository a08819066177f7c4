/**
 * The seeds' admission, once the crawl's config is stored: the seeds given as arguments, then a seed
 * file's lines, then the sitemap URLs, in chunks; each chunk admitted through the frontier like any
 * discovered link and its tasks and skipped results sent before the next, so memory holds one chunk.
 * Apart from submit-crawl.ts, which orders the submission's steps; this is the one that scales with
 * the number of seeds.
 */
import type { FrontierStore } from '../adapters/frontier-store.ts';
import type { SqsResultSender, SqsTaskSender } from '../adapters/queues.ts';
import { LruSet } from '../core/base/index.ts';
import type { CrawlConfig } from '../core/crawl/index.ts';
import { admitLinks, confirmSent } from '../core/frontier/index.ts';
import { normalizeUrl, type SeedLine, seedLines } from '../core/urls/index.ts';

/** What a submission admits into and sends to, once its config is stored. */
export interface Submission {
  config: CrawlConfig;
  frontier: FrontierStore;
  tasks: SqsTaskSender;
  results: SqsResultSender;
  /** URLs admitted and sent per round. */
  chunkSize: number;
}

/** What the seeds' admission sent, as the submission's summary counts it (submit-crawl.ts). */
export interface SeedCounts {
  tasks: number;
  skipped: number;
  invalid: number;
  duplicates: number;
}

/** A seed file's lines, from the first, each time it is called (submit-crawl.ts SeedFile). */
interface SeedLines {
  lines(): AsyncIterable<string>;
}

/** A URL to submit: a seed (line 0 for one given as an argument) or a sitemap URL. */
interface Entry {
  line: number;
  text: string;
  isSeed: boolean;
}

/** The seeds given as arguments (in the config), as seed lines numbered 0. */
export async function* argumentSeeds(config: CrawlConfig): AsyncGenerator<SeedLine> {
  for (const text of config.seeds) yield { line: 0, text };
}

/**
 * Admits and sends every seed and sitemap URL, `chunkSize` at a time; after each chunk is sent,
 * `onChunk` gets the counts so far and the number of URLs handled.
 */
export async function sendSeeds(
  submission: Submission,
  seedFile: SeedLines | undefined,
  sitemapUrls: readonly string[],
  onChunk: (counts: SeedCounts, done: number) => void,
): Promise<SeedCounts> {
  const counts: SeedCounts = { tasks: 0, skipped: 0, invalid: 0, duplicates: 0 };
  let done = 0;
  let chunks = 0;
  const send = async (chunk: Entry[]) => {
    const sent = await sendChunk(submission, chunk, chunks++);
    counts.tasks += sent.tasks;
    counts.skipped += sent.skipped;
    counts.invalid += sent.invalid;
    counts.duplicates += sent.duplicates;
    done += chunk.length;
    onChunk(counts, done);
  };
  let chunk: Entry[] = [];
  for await (const entry of entries(submission.config, seedFile, sitemapUrls)) {
    chunk.push(entry);
    if (chunk.length < submission.chunkSize) continue;
    await send(chunk);
    chunk = [];
  }
  if (chunk.length > 0) await send(chunk);
  return counts;
}

async function* entries(
  config: CrawlConfig,
  file: SeedLines | undefined,
  sitemapUrls: readonly string[],
): AsyncGenerator<Entry> {
  for await (const seed of argumentSeeds(config)) yield { ...seed, isSeed: true };
  if (file !== undefined) for await (const seed of seedLines(file.lines())) yield { ...seed, isSeed: true };
  for (const text of sitemapUrls) yield { line: 0, text, isSeed: false };
}

/** One chunk admitted (the `index`th) and sent: what it adds to the summary's counts. */
async function sendChunk(
  { config, frontier, tasks, results }: Submission,
  chunk: readonly Entry[],
  index: number,
): Promise<SeedCounts> {
  const valid: string[] = [];
  const invalid: string[] = [];
  for (const entry of chunk) {
    if (normalizeUrl(entry.text, { maxUrlLength: config.limits.maxUrlLength }).ok) valid.push(entry.text);
    // An invalid sitemap entry is not the user's input: it is left out (the sitemap loader reports it).
    else if (entry.isSeed) invalid.push(entry.text);
  }
  // Each chunk admits as a parent of its own: a URL an earlier chunk admitted is then known to the
  // frontier, not this chunk's own admission, so a repeated seed is dropped there, exactly, with no
  // set of every seed in memory.
  const admitted =
    valid.length === 0
      ? { visits: [], results: [], admitted: 0 }
      : await admitLinks(
          [
            {
              config,
              parentKey: `seed#${index}`,
              depth: -1,
              links: valid.map((url) => ({ url, nofollow: false })),
            },
          ],
          { frontier, hosts: frontier, seen: new LruSet(1), now: new Date() },
        );
  // An invalid seed goes to the queue as a task, to end there as an `invalid` result with its reason.
  await tasks.sendVisits(admitted.visits);
  // A seed's visit may wait long in a large crawl's queue: no wake sends it again meanwhile.
  await confirmSent(admitted.visits, frontier);
  await tasks.sendTasks(invalid.map((url) => ({ v: 1 as const, crawlId: config.crawlId, url, depth: 0 })));
  await results.sendResults(admitted.results);
  return {
    tasks: admitted.admitted - admitted.results.length + invalid.length,
    skipped: admitted.results.length,
    invalid: invalid.length,
    duplicates: valid.length - admitted.admitted,
  };
}
