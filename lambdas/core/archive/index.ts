// The public surface of core/archive (README.md): every other folder, and code outside the core, imports it from here.
export * from './cdxj.ts';
export * from './index-reader.ts';
export * from './warc.ts';
export * from './warc-batch.ts';
export * from './warc-digest.ts';
export * from './warc-reader.ts';
export * from './warc-writer.ts';
