/**
 * The JSON Schemas of the crawl events' details (crawl-events.ts), as published in `schemas/events/`
 * for consumers: generated from the zod schemas, so the two cannot drift (`npm run schemas` writes
 * the files; test/unit/crawl-events.test.ts fails when they differ from what this returns).
 */
import { z } from 'zod';
import { type CrawlEventKind, DETAIL_TYPES, EVENT_DETAIL_SCHEMAS, EVENT_SOURCE } from './crawl-events.ts';

/** `schemas/events/<file>`: the detail type in kebab case, e.g. `crawl-completed.schema.json`. */
export function schemaFileName(kind: CrawlEventKind): string {
  return `${DETAIL_TYPES[kind].toLowerCase().replace(/\s+/g, '-')}.schema.json`;
}

export function eventDetailJsonSchema(kind: CrawlEventKind): Record<string, unknown> {
  const schema = z.toJSONSchema(EVENT_DETAIL_SCHEMAS[kind], { target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
  return {
    $id: `urn:serverless-crawler:schemas:events:${schemaFileName(kind).replace('.schema.json', '')}`,
    title: `${DETAIL_TYPES[kind]} (source ${EVENT_SOURCE}): the event's detail`,
    ...schema,
  };
}

/** Every schema file's name and its text as written (two-space JSON, a final newline). */
export function eventSchemaFiles(): Array<{ name: string; text: string }> {
  return (Object.keys(DETAIL_TYPES) as CrawlEventKind[]).map((kind) => ({
    name: schemaFileName(kind),
    text: `${JSON.stringify(eventDetailJsonSchema(kind), null, 2)}\n`,
  }));
}
