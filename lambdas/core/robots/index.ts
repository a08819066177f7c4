// The public surface of core/robots (README.md): every other folder, and code outside the core, imports it from here.

export * from './robots.ts';
export * from './robots-cache.ts';
export * from './robots-fetch.ts';
export * from './robots-gate.ts';
export * from './robots-match.ts';
export * from './robots-policy-json.ts';
