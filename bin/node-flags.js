// Node's flags for the process that runs a long command (`crawl`, `local`), written once for the
// shim (bin/crawler.js) and the bench (bench/crawlers.ts), which starts that process itself.
// A young generation of 8 MB semi-spaces instead of V8's default: the crawl allocates fast and keeps
// little, and the larger default held ~70 MB more heap for no measurable speed (bench site, 5,043
// pages: peak RSS 485 → 406 MB, 168 → 166 pages/s; docs/performance.md).
export const LONG_COMMAND_NODE_FLAGS = ['--max-semi-space-size=8'];
