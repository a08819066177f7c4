// The public surface of core/batches (README.md): every other folder, and code outside the core, imports it from here.
export * from './aggregate-batch.ts';
export * from './aggregate-types.ts';
export * from './batch-output.ts';
export * from './completion-check.ts';
export * from './crawl-events.ts';
export * from './crawl-summary.ts';
export * from './event-schemas.ts';
export * from './fetch-batch.ts';
export * from './render-batch.ts';
