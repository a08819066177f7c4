/**
 * `crawler robots FILE AGENT URL...`: the crawler's own RFC 9309 decision per URL, so anyone can
 * check by hand what the crawler will do with a robots.txt file.
 */
import { readFile } from 'node:fs/promises';
import { isAllowed, parseRobots } from '../lambdas/core/robots/index.ts';
import { write } from './cli-io.ts';
import { defineCommand } from './define-command.ts';
import { UsageError } from './usage-error.ts';

export const ROBOTS_USAGE = `usage: crawler robots FILE AGENT URL...
  prints "allowed URL" or "disallowed URL" for each URL, as the crawler decides for user agent AGENT
  (FILE may be - for standard input)`;

export const robotsCommand = defineCommand({
  usage: ROBOTS_USAGE,
  // Positional only: a URL may look like an option to parseArgs.
  parse: ([file, agent, ...urls]: string[]) => {
    if (file === undefined || agent === undefined || urls.length === 0) {
      throw new UsageError(`robots needs a file, a user agent and at least one URL\n${ROBOTS_USAGE}`);
    }
    return { file, agent, urls };
  },
  run: async ({ io, file, agent, urls }) => {
    let text: Buffer;
    try {
      text = file === '-' ? await readStdin() : await readFile(file);
    } catch (error) {
      throw new UsageError(
        `cannot read robots.txt file ${JSON.stringify(file)}: ${(error as Error).message}`,
      );
    }
    const policy = parseRobots(new Uint8Array(text));
    for (const url of urls)
      await write(io.stdout, `${isAllowed(policy, agent, url) ? 'allowed' : 'disallowed'} ${url}\n`);
    return 0;
  },
});

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
