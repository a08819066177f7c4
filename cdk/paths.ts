import { join, resolve } from 'node:path';

/** The repo root, found from this file so synthesis works from any working directory. */
export const REPO_ROOT = resolve(import.meta.dirname, '..');

/** Absolute path of a repo-relative path. */
export function fromRoot(relative: string): string {
  return join(REPO_ROOT, relative);
}
