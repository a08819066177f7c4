#!/usr/bin/env node
import { main } from '../cli/main.ts';

// Run by bin/crawler.js with an IPC channel: when that process is gone (killed, however), stop as on
// SIGTERM rather than run on as an orphan. The channel alone keeps nothing alive.
if (process.channel) {
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}

process.exitCode = await main(process.argv.slice(2));
