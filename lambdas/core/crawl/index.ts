// The public surface of core/crawl (README.md): every other folder, and code outside the core, imports it from here.
export * from './budget.ts';
export * from './crawl-config.ts';
export * from './crawl-state.ts';
export * from './credentials.ts';
export * from './frontier-ports.ts';
export * from './host-tally.ts';
export * from './host-visit-ports.ts';
export * from './page-content.ts';
export * from './politeness.ts';
export * from './ports.ts';
export * from './proxy-url.ts';
export * from './recrawl.ts';
export * from './render-message.ts';
export * from './schedule.ts';
export * from './task.ts';
