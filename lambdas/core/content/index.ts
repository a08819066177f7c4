// The public surface of core/content (README.md): every other folder, and code outside the core, imports it from here.
export * from './content-extract.ts';
export * from './links.ts';
export * from './main-content.ts';
export * from './main-content-html.ts';
export * from './page-reading.ts';
export * from './page-render.ts';
export * from './pdf-content.ts';
export * from './pdf-streams.ts';
export * from './render-detector.ts';
