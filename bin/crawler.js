#!/usr/bin/env node
// The `crawler` command. The CLI is TypeScript run by Node >= 24's type stripping; on an older Node
// (e.g. a machine's Node 20) this shim re-runs it with the project's own Node 24 (the `node` devDependency).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('./crawler.ts', import.meta.url));
const major = Number(process.versions.node.split('.')[0]);

if (major >= 24) {
  await import('./crawler.ts');
} else {
  const node = findProjectNode(dirname(entry));
  if (!node) {
    console.error(
      `crawler needs Node.js >= 24 (this is ${process.version}); run \`npm install\` in the project to get it.`,
    );
    process.exit(2);
  }
  const run = spawnSync(node, [entry, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}

function findProjectNode(from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', 'node', 'bin', 'node');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}
