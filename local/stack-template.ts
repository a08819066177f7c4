// The synthesized stack template for the local runtime, cached by a hash of what shapes it: synthesis
// needs aws-cdk-lib, whose import alone takes seconds, and the template changes only when the stack's
// code, the CDK context or the installed packages do. The cache is a file under node_modules/.cache;
// if it cannot be read or written the template is synthesized, as before.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Every file the template is built from: the stack's code, what it imports, context, versions. */
const SOURCES = {
  dirs: ['cdk'],
  files: ['lambdas/shared/metrics.ts', 'lambdas/core/base/limits.ts', 'cdk.json', 'package-lock.json'],
};
const CACHE_DIR = join(ROOT, 'node_modules', '.cache', 'serverless-crawler');

/** Where the template of the current sources is cached. */
export async function templateCacheFile(): Promise<string> {
  return join(CACHE_DIR, `template-${await sourceHash()}.json`);
}

export async function stackTemplate(): Promise<Record<string, unknown>> {
  const file = await templateCacheFile();
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch {
    // Not cached yet (or unreadable): synthesized below.
  }
  const { synthesizeTemplate } = await import('../cdk/synth.ts');
  const template = synthesizeTemplate();
  try {
    await mkdir(CACHE_DIR, { recursive: true });
    // Written whole, then renamed: a concurrent reader never sees half a file.
    const partial = `${file}.${process.pid}.tmp`;
    await writeFile(partial, JSON.stringify(template));
    await rename(partial, file);
  } catch {
    // A read-only install: synthesized each time.
  }
  return template;
}

async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  // Context given to an in-process App through the environment (as the CDK CLI does).
  hash.update(`${process.env.CDK_CONTEXT_JSON ?? ''}\0`);
  const files = [...SOURCES.files];
  for (const dir of SOURCES.dirs) {
    const entries = await readdir(join(ROOT, dir), { recursive: true });
    files.push(...entries.filter((entry) => entry.endsWith('.ts')).map((entry) => join(dir, entry)));
  }
  for (const file of files.sort()) {
    hash.update(`${file}\0`);
    hash.update(await readFile(join(ROOT, file)).catch(() => Buffer.from('missing')));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}
