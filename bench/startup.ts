/**
 * Start-up: `crawler crawl` of a one-page site (robots.txt 404, one HTML page), wall time and peak RSS
 * of the whole process, each run on a fresh state dir. The first run starts with no cached template
 * (what a new clone's first crawl pays: synthesizing the stack); the others reuse it.
 */
import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { runOurs } from './crawlers.ts';
import { ROOT } from './processes.ts';

export interface StartupRun {
  cachedTemplate: boolean;
  wallSeconds: number;
  peakRssMb: number;
  crawlSeconds: number;
}

/** Target (issue 14): a one-page crawl within this on this machine's kind. */
export const STARTUP_TARGET_SECONDS = 2;

export async function runStartup(runs: number, log: (line: string) => void): Promise<StartupRun[]> {
  const server = createServer((request, response) => {
    if (request.url === '/robots.txt') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end('<!doctype html><title>one page</title><p>The only page.</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const results: StartupRun[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const cachedTemplate = i > 0;
      // local/stack-template.ts's cache: gone, the run synthesizes the stack as a first run does.
      if (!cachedTemplate)
        await rm(join(ROOT, 'node_modules', '.cache', 'serverless-crawler'), {
          recursive: true,
          force: true,
        });
      const run = await runOurs([`${origin}/`], [], 120_000);
      const result = {
        cachedTemplate,
        wallSeconds: run.wallSeconds,
        peakRssMb: run.peakRssMb,
        crawlSeconds: run.seconds ?? Number.NaN,
      };
      results.push(result);
      log(
        `  start-up run ${i + 1}${cachedTemplate ? '' : ' (template not cached)'}: ${result.wallSeconds.toFixed(2)} s wall, ` +
          `${result.crawlSeconds.toFixed(2)} s crawl, peak RSS ${result.peakRssMb.toFixed(0)} MB`,
      );
    }
  } finally {
    server.close();
  }
  return results;
}
