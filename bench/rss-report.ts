/**
 * Preload (`node --import ./bench/rss-report.ts ...`) for the benchmark's child processes: on exit,
 * writes the process's peak resident set size (bytes) and the CPU time it used (user + system,
 * microseconds), separated by a space, to the file named by BENCH_RSS_FILE.
 */
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_RSS_FILE;
if (file) {
  process.on('exit', () => {
    const usage = process.resourceUsage();
    writeFileSync(file, `${usage.maxRSS * 1024} ${usage.userCPUTime + usage.systemCPUTime}`);
  });
}
