// The public surface of core/base (README.md): every other folder, and code outside the core, imports it from here.
export * from './backoff.ts';
export * from './capped-inflate.ts';
export * from './content-coding.ts';
export * from './cpu-budget.ts';
export * from './cron.ts';
export * from './encoding-sniff.ts';
export * from './errors.ts';
export * from './http-headers.ts';
export * from './limits.ts';
export * from './lru.ts';
export * from './markdown-escape.ts';
export * from './outcome.ts';
export * from './retry-step.ts';
