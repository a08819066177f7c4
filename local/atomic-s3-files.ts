// fauxqs's FileS3Persistence writes an object as two files in place, its body and then its metadata
// JSON, and a bucket as one JSON file. A process killed in the middle (kill -9, the OOM killer) left a
// truncated metadata file that no later start could load ("Unexpected end of JSON input": a killed
// local crawl could not be resumed), or a new body under the old metadata. Here every such write goes
// to a staging directory first and is then renamed into place, body before metadata; a start finishes
// or drops what a killed write left in staging, so an object is its old version or its new one.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

export interface FileS3PersistenceLike {
  bucketsDir: string;
  baseDir: string;
  insertBucket(name: string, ...rest: unknown[]): void;
  upsertObject(bucket: string, object: unknown): void;
}

const STAGING = '_staging';
const META = '.meta.json';
const DATA = '.data';
const BUCKET = '.bucket.json';

export function isFileS3Persistence(value: object): value is FileS3PersistenceLike {
  return (
    typeof Reflect.get(value, 'bucketsDir') === 'string' &&
    typeof Reflect.get(value, 'baseDir') === 'string' &&
    typeof Reflect.get(value, 'insertBucket') === 'function' &&
    typeof Reflect.get(value, 'upsertObject') === 'function'
  );
}

/**
 * Makes `persistence`'s bucket and object writes atomic for a killed process (not for a power cut:
 * nothing is fsynced, as in fauxqs). Call before loading: it first settles what a killed write left.
 */
export function makeS3WritesAtomic(persistence: FileS3PersistenceLike): void {
  const staging = join(persistence.baseDir, STAGING);
  recoverStaging(staging, persistence.bucketsDir);
  // The original methods write under `this.bucketsDir`: run them on a view whose bucketsDir is staging.
  const staged = Object.create(persistence, { bucketsDir: { value: staging } }) as FileS3PersistenceLike;
  const upsertObject = persistence.upsertObject;
  const insertBucket = persistence.insertBucket;
  persistence.upsertObject = (bucket, object) => {
    upsertObject.call(staged, bucket, object);
    commitStaging(staging, persistence.bucketsDir, () => true);
  };
  persistence.insertBucket = (name, ...rest) => {
    insertBucket.call(staged, name, ...rest);
    commitStaging(staging, persistence.bucketsDir, () => true);
  };
}

/**
 * What a killed process left in staging: an object's metadata without its body was killed between
 * the two renames (its body is in place, its metadata complete) and is moved; anything else may be
 * cut short and is dropped, so the object keeps its old version (the PUT was never answered). A
 * dropped bucket file is written again by the next provisioning.
 */
function recoverStaging(staging: string, bucketsDir: string): void {
  commitStaging(staging, bucketsDir, (path, paths) => path.endsWith(META) && !paths.has(bodyOf(path)), true);
}

/** Moves staged writes that `complete` accepts into `bucketsDir`, body before metadata; drops the rest. */
function commitStaging(
  staging: string,
  bucketsDir: string,
  complete: (metaPath: string, paths: ReadonlySet<string>) => boolean,
  recovering = false,
): void {
  if (!existsSync(staging)) return;
  const files = readdirSync(staging, { recursive: true, withFileTypes: true }).filter((entry) =>
    entry.isFile(),
  );
  const paths = new Set(files.map((entry) => join(entry.parentPath, entry.name)));
  for (const path of paths) {
    const relative = path.slice(staging.length + 1);
    const bucketFile = relative.split(sep).length === 2 && relative.endsWith(BUCKET);
    if (!(bucketFile || path.endsWith(META)) || !complete(path, paths)) continue;
    const target = join(bucketsDir, relative);
    if (bucketFile) {
      mkdirSync(join(dirname(target), 'objects'), { recursive: true });
    } else {
      mkdirSync(dirname(target), { recursive: true });
      if (paths.has(bodyOf(path))) renameSync(bodyOf(path), bodyOf(target));
    }
    renameSync(path, target);
  }
  // What is left is empty directories (and, at a start, what a killed write left): removing them
  // after every write was 0.7 s of a 5,043-page crawl, so they stay until the next start.
  if (recovering) rmSync(staging, { recursive: true, force: true });
}

function bodyOf(metaPath: string): string {
  return `${metaPath.slice(0, -META.length)}${DATA}`;
}
