#!/usr/bin/env node
// The `crawler` command. The CLI is TypeScript run by Node >= 24's type stripping; on an older Node
// (e.g. a machine's Node 20) this shim re-runs it with the project's own Node 24 (the `node` devDependency).
// The long-running commands (`crawl`, `local`) always run in a child: a handler busy on the CPU holds
// the child's event loop, where no signal handler runs, so this process counts the signals and ends
// the child on the second one.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LONG_COMMAND_NODE_FLAGS } from './node-flags.js';

const entry = fileURLToPath(new URL('./crawler.ts', import.meta.url));
const major = Number(process.versions.node.split('.')[0]);
const args = process.argv.slice(2);
/** Signals a person or a supervisor sends to this pid alone: the crawl runs in the child, so they go on to it. */
const RELAYED = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** Commands that run until stopped (cli/main.ts takes `--debug` anywhere, the command first otherwise). */
const SUPERVISED = new Set(['crawl', 'local']);
/** How often this process looks whether its parent is gone (npx, a shell killed without passing the signal on). */
const PARENT_CHECK_MS = 1000;
/** What the shell reports for a command stopped by Ctrl-C. */
const INTERRUPTED_EXIT = 130;

if (major >= 24 && !SUPERVISED.has(args.find((arg) => arg !== '--debug') ?? '')) {
  await import('./crawler.ts');
} else {
  const node = major >= 24 ? process.execPath : findProjectNode(dirname(entry));
  if (!node) {
    console.error(
      `crawler needs Node.js >= 24 (this is ${process.version}); run \`npm install\` in the project to get it.`,
    );
    process.exit(2);
  }
  // The IPC channel tells the child when this process is gone, however it ended (bin/crawler.ts).
  const child = spawn(node, [...LONG_COMMAND_NODE_FLAGS, entry, ...args], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  let received = 0;
  /** A signal for the child that it did not get itself. */
  const relayAlways = (signal) => {
    received++;
    if (received >= 2) {
      // The second one: at once, even if the child's event loop is held by a handler on the CPU.
      if (running()) child.kill('SIGKILL');
      process.exit(INTERRUPTED_EXIT);
    }
    if (running()) child.kill(signal);
  };
  const relay = (signal) => {
    // From the terminal, the child got it too: counted, not sent again (that would be a second Ctrl-C).
    if (signal !== 'SIGTERM' && received === 0 && fromTerminal()) received++;
    else relayAlways(signal);
  };
  for (const signal of RELAYED) process.on(signal, relay);
  let lastReceivedAt = 0;
  for (const signal of RELAYED) process.on(signal, () => (lastReceivedAt = Date.now()));
  // A parent that dies without passing its signal on (npx's shell) leaves this process to init:
  // then the crawl stops as on SIGTERM, rather than run on unseen.
  const parent = process.ppid;
  const shell = shellWakeups(parent);
  let woken = shell?.();
  const watch = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(watch);
      relay('SIGTERM');
      return;
    }
    // npx passes a SIGINT on to the `sh -c` it runs this in, and the shell keeps it until this
    // process ends. The shell sleeps until a signal it catches comes: it woke, and this process got
    // no signal of its own about then (a Ctrl-C reaches both), so the signal was meant for the crawl.
    const now = shell?.();
    if (now === undefined || woken === undefined || now === woken) return;
    woken = now;
    const seenAt = Date.now();
    setTimeout(() => {
      if (Math.abs(lastReceivedAt - seenAt) > PARENT_CHECK_MS) relayAlways('SIGINT');
    }, PARENT_CHECK_MS / 2).unref();
  }, PARENT_CHECK_MS / 4);
  watch.unref();
  child.on('error', (error) => {
    console.error(`crawler: cannot run ${node}: ${error.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    for (const s of RELAYED) process.off(s, relay);
    clearInterval(watch);
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

/**
 * When the parent is `sh -c` (as npx runs a bin), a reader of how often it has woken up (Linux:
 * voluntary context switches in /proc); undefined otherwise.
 */
function shellWakeups(pid) {
  const read = () => {
    try {
      return /^voluntary_ctxt_switches:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    } catch {
      return undefined;
    }
  };
  try {
    // Only `sh -c`: an interactive shell also wakes for other signals (a window resized).
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const shell = /(^|\/)(sh|dash|bash)$/.test(argv[0] ?? '') && argv[1] === '-c';
    return shell && read() !== undefined ? read : undefined;
  } catch {
    return undefined;
  }
}

function findProjectNode(from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', 'node', 'bin', 'node');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}
