// Node's flags for the process that runs a long command (`crawl`, `local`), written once for the
// shim (bin/crawler.js) and the bench (bench/crawlers.ts), which starts that process itself.
// A young generation of 8 MB semi-spaces instead of V8's default: the crawl allocates fast and keeps
// little, and the default held ~70 MB more heap, for ~3 % of the crawl's CPU in GC (bench site, 5,043
// pages: peak RSS 468–485 → 397–415 MB; docs/performance.md).
export const LONG_COMMAND_NODE_FLAGS = ['--max-semi-space-size=8'];
