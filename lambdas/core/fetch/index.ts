// The public surface of core/fetch (README.md): every other folder, and code outside the core, imports it from here.
export * from './body-budget.ts';
export * from './crawl-requests.ts';
export * from './fetch-task.ts';
export * from './host-visit.ts';
export * from './response-verdict.ts';
export * from './visit-pacer.ts';
