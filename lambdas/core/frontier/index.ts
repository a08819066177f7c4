// The public surface of core/frontier (README.md): every other folder, and code outside the core, imports it from here.
export * from './host-hurry.ts';
export * from './link-admission.ts';
export * from './sitemap.ts';
export * from './sitemap-parse.ts';
export * from './task-admission.ts';
