/**
 * `crawler export ID --out DIR [--markdown-dir DIR]`: writes the `crawler crawl --out` layout
 * (results.jsonl, warc/, pages.jsonl, summary.json; cli/crawl-output.ts) for any crawl the state dir (or --endpoint, --stack) holds:
 * finished, cancelled or interrupted. The summary's times are the crawl's own (its counters); a crawl
 * still `running` is written as `interrupted` (what exists so far).
 */
import { resolve } from 'node:path';
import { damageWarning } from '../lambdas/core/archive/index.ts';
import { seedCount } from '../lambdas/core/crawl/index.ts';
import { write } from './cli-io.ts';
import { writeCrawlOutput } from './crawl-output.ts';
import { defineCommand } from './define-command.ts';
import { STACK_OPTIONS, STACK_USAGE, withStorage } from './stack-access.ts';
import { openStoredCrawl } from './stored-crawl.ts';
import { UsageError } from './usage-error.ts';

export const EXPORT_USAGE = `usage: crawler export ID --out DIR [options]
writes results.jsonl, warc/, pages.jsonl and summary.json of crawl ID to DIR, as \`crawler crawl --out\` does
  --out DIR            where to write (required)
  --markdown-dir DIR   also write each page's Markdown to DIR/<host>/<path>.md, with YAML front matter
${STACK_USAGE}`;

export const exportCommand = defineCommand({
  usage: EXPORT_USAGE,
  options: { out: { type: 'string' }, 'markdown-dir': { type: 'string' }, ...STACK_OPTIONS },
  run: async ({ io, values, positionals }) => {
    if (positionals.length !== 1) throw new UsageError(`export needs exactly one crawl id\n${EXPORT_USAGE}`);
    if (values.out === undefined) throw new UsageError(`export needs --out DIR\n${EXPORT_USAGE}`);
    const crawlId = positionals[0]!;
    const outDir = resolve(values.out);
    return withStorage(values, io, async (stack) => {
      const crawl = await openStoredCrawl(stack, crawlId, io);
      if (!crawl) return 1;
      const { counters, config, blobs } = crawl;
      const now = new Date();
      const { summary, damages } = await writeCrawlOutput(blobs, crawlId, outDir, {
        seeds: config.seeds,
        seedCount: seedCount(config),
        startedAt: counters.startedAt ? new Date(counters.startedAt) : now,
        endedAt: counters.endedAt ? new Date(counters.endedAt) : now,
        state: counters.state === 'running' ? 'interrupted' : counters.state,
        onDamage: (damage) => io.stderr.write(`${damageWarning(damage)}\n`),
        ...(values['markdown-dir'] === undefined ? {} : { markdownDir: resolve(values['markdown-dir']) }),
      });
      await write(
        io.stdout,
        `crawl ${crawlId} (${summary.state}): ${summary.urls} URLs, ${summary.warcFiles} WARC files, ${summary.contentRecords ?? 0} content records${summary.markdownFiles === undefined ? '' : `, ${summary.markdownFiles} Markdown files`} written to ${outDir}\n`,
      );
      return damages.length > 0 ? 1 : 0;
    });
  },
});
