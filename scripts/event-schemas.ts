/** `npm run schemas`: writes the crawl events' JSON Schemas to schemas/events/ (lambdas/core/batches/event-schemas.ts). */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventSchemaFiles } from '../lambdas/core/batches/index.ts';

const dir = fileURLToPath(new URL('../schemas/events/', import.meta.url));
await mkdir(dir, { recursive: true });
for (const { name, text } of eventSchemaFiles()) await writeFile(join(dir, name), text);
console.log(`wrote ${eventSchemaFiles().length} schemas to schemas/events/`);
