/**
 * `crawler diff ID URL`: what changed in a page between a re-crawl (`--since`) and the crawl it
 * follows, as a unified diff of the page's Markdown (or text) from the two crawls' content records.
 * A page `same` in the re-crawl points at the earlier record: no diff, exit 0. A page new in the
 * re-crawl is diffed against nothing; one without a content record in the re-crawl (removed, failed)
 * against nothing the other way.
 */
import { CrawlConfigStore } from '../lambdas/adapters/crawl-config-store.ts';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { FrontierUrlLookup } from '../lambdas/adapters/frontier-url-lookup.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import { damageWarning, type IndexLine } from '../lambdas/core/archive/index.ts';
import { normalizeUrl } from '../lambdas/core/urls/index.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import { write } from './cli-io.ts';
import { readContentRecord } from './content-reader.ts';
import { defineCommand } from './define-command.ts';
import { lookupIndexLine } from './index-lookup.ts';
import { markdownDiff } from './markdown-diff.ts';
import { STACK_OPTIONS, STACK_USAGE, withStorage } from './stack-access.ts';
import { UsageError } from './usage-error.ts';
import { noSuchCrawl } from './usage-failures.ts';

export const DIFF_USAGE = `usage: crawler diff ID URL [options]
  the page's Markdown in re-crawl ID against the crawl it followed (--since), as a unified diff
${STACK_USAGE}`;

export const diffCommand = defineCommand({
  usage: DIFF_USAGE,
  options: { ...STACK_OPTIONS },
  run: async ({ io, values, positionals }) => {
    if (positionals.length !== 2) throw new UsageError(`diff needs a crawl id and a URL\n${DIFF_USAGE}`);
    const [crawlId, url] = positionals as [string, string];
    const normalized = normalizeUrl(url);
    if (!normalized.ok) throw new UsageError(`not a crawlable URL: ${normalized.reason}`);
    return withStorage(values, io, async (stack) => {
      const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description);
      const blobs = new S3Blobs(
        stack.clients.s3,
        requiredOutput(stack.outputs, OUTPUTS.pageBucketName, stack.description),
      );
      if (!(await createFrontierStore(stack.clients.dynamodb, table).readCounters(crawlId))) {
        io.stderr.write(`${noSuchCrawl(crawlId, stack.description)}\n`);
        return 1;
      }
      const since = (await new CrawlConfigStore(stack.clients.dynamodb, table).get(crawlId)).since;
      if (since === undefined) {
        io.stderr.write(
          `crawl ${crawlId} is not a re-crawl: it was not started with --since, so there is nothing to compare with\n`,
        );
        return 1;
      }
      const lookup = new FrontierUrlLookup(stack.clients.dynamodb, table);
      const lineOf = (id: string) =>
        lookupIndexLine(blobs, lookup, id, normalized, {
          onFallback: () => {},
          onDamage: (damage) => io.stderr.write(`${damageWarning(damage)}\n`),
        });
      const [now, before] = [await lineOf(crawlId), await lineOf(since)];
      if (now === undefined && before === undefined) {
        io.stderr.write(`${normalized.url} is in neither crawl ${crawlId} nor crawl ${since}\n`);
        return 1;
      }
      if (now?.content !== undefined && before?.content !== undefined && samePointer(now, before)) {
        io.stderr.write(`${normalized.url}: unchanged since crawl ${since}\n`);
        return 0;
      }
      const textOf = async (line: IndexLine | undefined) => {
        if (line?.content === undefined) return '';
        const record = await readContentRecord(blobs, line.content);
        return record.markdown ?? record.text ?? '';
      };
      const { patch, replacedWhole } = markdownDiff(
        { label: `${normalized.url} (crawl ${since})`, text: await textOf(before) },
        { label: `${normalized.url} (crawl ${crawlId})`, text: await textOf(now) },
      );
      if (replacedWhole)
        io.stderr.write(`note: the two versions differ too much for a line diff: shown as replaced whole\n`);
      await write(io.stdout, patch);
      return 0;
    });
  },
});

function samePointer(a: IndexLine, b: IndexLine): boolean {
  return (
    a.content?.key === b.content?.key &&
    a.content?.offset === b.content?.offset &&
    a.content?.length === b.content?.length
  );
}
