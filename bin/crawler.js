#!/usr/bin/env node
// The `crawler` command. The CLI is TypeScript run by Node >= 24's type stripping; on an older Node
// (e.g. a machine's Node 20) this shim re-runs it with the project's own Node 24 (the `node` devDependency).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('./crawler.ts', import.meta.url));
const major = Number(process.versions.node.split('.')[0]);
/** Signals a person or a supervisor sends to this pid alone: the crawl runs in the child, so they go on to it. */
const RELAYED = ['SIGINT', 'SIGTERM', 'SIGHUP'];

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
  const child = spawn(node, [entry, ...process.argv.slice(2)], { stdio: 'inherit' });
  const relay = (signal) => {
    if (signal !== 'SIGTERM' && fromTerminal()) return; // the child got it too: a second one would be a second Ctrl-C
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of RELAYED) process.on(signal, relay);
  child.on('error', (error) => {
    console.error(`crawler: cannot run ${node}: ${error.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    for (const s of RELAYED) process.off(s, relay);
    // Exit as the child did: by the same signal (so a shell sees 130 for Ctrl-C), or with its code.
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

/**
 * Whether this process is in its terminal's foreground process group: then a Ctrl-C (SIGINT) or a
 * hangup (SIGHUP) went to the whole group, the child included. Linux's /proc tells; elsewhere,
 * relay (a doubled signal beats an orphan that keeps crawling).
 */
function fromTerminal() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const [, , pgrp, , , tpgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(tpgid) > 0 && tpgid === pgrp;
  } catch {
    return false;
  }
}

function findProjectNode(from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', 'node', 'bin', 'node');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}
