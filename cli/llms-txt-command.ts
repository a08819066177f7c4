/**
 * `crawler llms-txt ID [--out DIR]`: writes llms.txt and llms-full.txt (cli/llms-txt.ts) of a crawl
 * from its content records, streamed file by file: llms-full.txt is written as records arrive, only
 * each page's title, URL and description are kept for llms.txt.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { CrawlConfigStore } from '../lambdas/adapters/crawl-config-store.ts';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import type { ContentRecord } from '../lambdas/core/content-record.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { streamContent } from './content-reader.ts';
import { defineCommand } from './define-command.ts';
import { betterHome, type LlmsEntry, llmsEntry, llmsFullSection, llmsTxt } from './llms-txt.ts';
import { requiredOutput } from './required-output.ts';
import { damageWarning, STACK_OPTIONS, STACK_USAGE, withStack, write } from './results-reader.ts';
import { UsageError } from './usage-error.ts';
import { noSuchCrawl } from './usage-failures.ts';

export const LLMS_TXT_USAGE = `usage: crawler llms-txt ID [options]
writes llms.txt (the site's title and summary, one line per page with its description) and
llms-full.txt (every page's Markdown) of crawl ID
  --out DIR            where to write them (default: the current directory)
${STACK_USAGE}`;

export const llmsTxtCommand = defineCommand({
  usage: LLMS_TXT_USAGE,
  options: { out: { type: 'string' }, ...STACK_OPTIONS },
  run: async ({ io, values, positionals }) => {
    if (positionals.length !== 1)
      throw new UsageError(`llms-txt needs exactly one crawl id\n${LLMS_TXT_USAGE}`);
    const crawlId = positionals[0]!;
    const outDir = resolve(values.out ?? '.');
    return withStack(values, io, async (stack) => {
      const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description);
      const counters = await createFrontierStore(stack.clients.dynamodb, table).readCounters(crawlId);
      if (!counters) {
        io.stderr.write(`${noSuchCrawl(crawlId, stack.description)}\n`);
        return 1;
      }
      if (counters.state === 'running')
        io.stderr.write(`note: crawl ${crawlId} is still running: the files hold the pages stored so far\n`);
      const config = await new CrawlConfigStore(stack.clients.dynamodb, table).get(crawlId);
      const blobs = new S3Blobs(
        stack.clients.s3,
        requiredOutput(stack.outputs, OUTPUTS.pageBucketName, stack.description),
      );
      await mkdir(outDir, { recursive: true });
      const entries: LlmsEntry[] = [];
      let home: ContentRecord | undefined;
      let damaged = 0;
      async function* sections(): AsyncGenerator<string> {
        const stream = streamContent(blobs, crawlId, (damage) => {
          damaged++;
          io.stderr.write(`${damageWarning(damage)}\n`);
        });
        for await (const { record } of stream) {
          entries.push(llmsEntry(record));
          home = betterHome(home, record, config.seeds);
          yield llmsFullSection(record);
        }
      }
      await pipeline(sections, createWriteStream(join(outDir, 'llms-full.txt')));
      await writeFile(join(outDir, 'llms.txt'), llmsTxt(entries, home, config.seeds));
      await write(
        io.stdout,
        `crawl ${crawlId}: llms.txt and llms-full.txt (${entries.length} pages) written to ${outDir}\n`,
      );
      if (entries.length === 0)
        io.stderr.write(
          `note: crawl ${crawlId} has no content records (was it crawled with --content none?)\n`,
        );
      return damaged > 0 ? 1 : 0;
    });
  },
});
