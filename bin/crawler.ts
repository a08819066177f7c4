#!/usr/bin/env node
import { enableCompileCache } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Node keeps each module's compiled code (and, for TypeScript, its stripped source) here, checked
// against the module's content, so a command's next start skips most of its compilation
// (docs/performance.md, "The local engine"). Set in the environment so the handlers' worker threads use it
// too; NODE_DISABLE_COMPILE_CACHE=1 turns it off. Enabled before the CLI is imported: only modules
// loaded after this use it.
process.env.NODE_COMPILE_CACHE ??= join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'node_modules',
  '.cache',
  'serverless-crawler',
  'compile',
);
enableCompileCache(process.env.NODE_COMPILE_CACHE);
const { main } = await import('../cli/main.ts');

// Run by bin/crawler.js with an IPC channel: when that process is gone (killed, however), stop as on
// SIGTERM rather than run on as an orphan. The channel alone keeps nothing alive.
if (process.channel) {
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}

process.exitCode = await main(process.argv.slice(2));
