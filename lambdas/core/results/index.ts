// The public surface of core/results (README.md): every other folder, and code outside the core, imports it from here.
export * from './content-record.ts';
export * from './result.ts';
export * from './result-builders.ts';
export * from './result-message.ts';
