/**
 * Micro-benchmark of the fetch-and-extract core, no AWS: the crawler's own path for one page
 * (HttpFetcher.fetch with the default limits and the address guard's code path, then exactly what the
 * fetch function does with an HTML body: isHtml, decodeContent, decodeText, extractLinks with URL
 * normalization) against a bare loop (undici.request + htmlparser2's Parser collecting `<a href>`,
 * each resolved with `new URL`), same URLs, same concurrency, alternating rounds in one process.
 *
 * argv[2]: JSON `{origin, pages, concurrency, rounds}`. Prints one JSON line:
 * `{core: number[], bare: number[]}` (pages/s per round).
 */
import { Parser } from 'htmlparser2';
import { Agent, request } from 'undici';
import { HttpFetcher } from '../lambdas/adapters/http-fetcher.ts';
import { headerValue } from '../lambdas/core/base/index.ts';
import { extractLinks } from '../lambdas/core/content/index.ts';
import { decodeContent, decodeText, isHtml, parseCrawlConfig } from '../lambdas/core/crawl/index.ts';

interface MicroArgs {
  origin: string;
  pages: number;
  concurrency: number;
  rounds: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as MicroArgs;
const urls = Array.from({ length: args.pages }, (_, i) => `${args.origin}${i === 0 ? '/' : `/p/${i}`}`);
const config = parseCrawlConfig({ crawlId: 'micro', allowPrivate: true });

/** Runs `one` over every URL with `concurrency` workers; returns pages/s and the links found. */
async function pool(
  one: (url: string) => Promise<number>,
  list: readonly string[],
): Promise<[number, number]> {
  let next = 0;
  let links = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: args.concurrency }, async () => {
      while (next < list.length) {
        const url = list[next++] as string;
        const found = await one(url);
        links += found;
      }
    }),
  );
  return [list.length / ((performance.now() - started) / 1000), links];
}

const fetcher = new HttpFetcher({ connectionsPerOrigin: args.concurrency });
async function core(url: string): Promise<number> {
  const response = await fetcher.fetch({
    url: new URL(url),
    userAgent: config.userAgent,
    allowPrivate: config.allowPrivate,
    limits: config.limits,
  });
  if (!isHtml(response.headers)) return 0;
  const decoded = decodeContent(
    response.body,
    headerValue(response.headers, 'content-encoding'),
    config.limits.maxDecodedBytes,
  );
  if (!decoded.ok) return 0;
  const html = decodeText(decoded.bytes, headerValue(response.headers, 'content-type'));
  return extractLinks(html, response.url, { followNofollow: config.followNofollow }).links.length;
}

const agent = new Agent({ connections: args.concurrency, pipelining: 1 });
async function bare(url: string): Promise<number> {
  const response = await request(url, { dispatcher: agent, headers: { 'user-agent': config.userAgent } });
  const hrefs = new Set<string>();
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (name !== 'a' || attribs.href === undefined) return;
        try {
          hrefs.add(new URL(attribs.href, url).href);
        } catch {}
      },
    },
    { decodeEntities: true },
  );
  const decoder = new TextDecoder();
  for await (const chunk of response.body)
    parser.write(decoder.decode(chunk as Uint8Array, { stream: true }));
  parser.end();
  return hrefs.size;
}

// Warm-up (JIT, connections), then alternating rounds so drift hits both alike.
await pool(core, urls.slice(0, 300));
await pool(bare, urls.slice(0, 300));
const result = { core: [] as number[], bare: [] as number[], links: { core: 0, bare: 0 } };
for (let round = 0; round < args.rounds; round++) {
  const [corePps, coreLinks] = await pool(core, urls);
  const [barePps, bareLinks] = await pool(bare, urls);
  result.core.push(corePps);
  result.bare.push(barePps);
  result.links = { core: coreLinks, bare: bareLinks };
}
await fetcher.close();
await agent.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
