/**
 * Preload (`node --import ./bench/rss-report.ts ...`) for the benchmark's child processes: on exit,
 * writes the process's peak resident set size (bytes) to the file named by BENCH_RSS_FILE.
 */
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_RSS_FILE;
if (file) {
  process.on('exit', () => {
    writeFileSync(file, String(process.resourceUsage().maxRSS * 1024));
  });
}
