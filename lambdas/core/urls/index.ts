// The public surface of core/urls (README.md): every other folder, and code outside the core, imports it from here.
export * from './address-guard.ts';
export * from './idna2003.ts';
export * from './scope.ts';
export * from './seed-lines.ts';
export * from './surt.ts';
export * from './url-normalize.ts';
