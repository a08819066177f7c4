// A local emulator's items kept in one JSON file of the state directory (the Scheduler's schedules,
// the Parameter Store's parameters): read back checked against their schema, written whole through a
// temporary file and a rename, one write at a time, so a crash leaves the old file or the new one.
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { z } from 'zod';

/** The items kept in `file` (none when it is missing); a damaged file is refused, naming it and what to do. */
export async function readKeptItems<T>(file: string, schema: z.ZodType<T[]>, what: string): Promise<T[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const kept = schema.safeParse(json);
  if (!kept.success) throw new Error(`${file}: not the ${what}'s JSON; remove it to start with none`);
  return kept.data;
}

/** Writes `items` to a file, the writes in order. `mode`: the file's permissions (0600 for secrets). */
export class KeptFile {
  #saving: Promise<void> = Promise.resolve();

  async write(file: string, items: unknown[], mode = 0o644): Promise<void> {
    const text = JSON.stringify(items, null, 2);
    this.#saving = this.#saving.then(async () => {
      await writeFile(`${file}.tmp`, text, { mode });
      await rename(`${file}.tmp`, file);
    });
    await this.#saving;
  }
}
