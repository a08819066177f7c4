/**
 * `crawler llms-txt ID [--out DIR]`: writes llms.txt and llms-full.txt (cli/llms-txt.ts) of a crawl
 * from its content records, streamed file by file: llms-full.txt is written as records arrive, only
 * each page's title, URL and description are kept for llms.txt.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { damageWarning } from '../lambdas/core/archive/index.ts';
import type { ContentRecord } from '../lambdas/core/results/index.ts';
import { write } from './cli-io.ts';
import { streamContent } from './content-reader.ts';
import { defineCommand } from './define-command.ts';
import { betterHome, type LlmsEntry, llmsEntry, llmsFullSection, llmsTxt } from './llms-txt.ts';
import { STACK_OPTIONS, STACK_USAGE, withStorage } from './stack-access.ts';
import { openStoredCrawl } from './stored-crawl.ts';
import { UsageError } from './usage-error.ts';

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
    return withStorage(values, io, async (stack) => {
      const crawl = await openStoredCrawl(stack, crawlId, io);
      if (!crawl) return 1;
      const { counters, config, blobs } = crawl;
      if (counters.state === 'running')
        io.stderr.write(`note: crawl ${crawlId} is still running: the files hold the pages stored so far\n`);
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
