/**
 * Imitates the page store bucket (lambdas/adapters/s3-blobs.ts, S3Blobs) in memory, as the ports
 * BlobWriter and ResultStore: whole-object writes that replace, a write-once `putIfAbsent` that
 * leaves an existing object alone, `exists`, and `list` in key order. Checked against S3Blobs on the
 * embedded S3 (fauxqs) by test/integration/port-contracts.test.ts (blobStoreContract in
 * test/contracts/blob-store.ts).
 *
 * Tests inject faults through `failPuts` and the `beforeWrite` / `afterWrite` hooks (a hook that
 * throws before the write fails it with nothing written; one that throws after loses its answer).
 */
import type { ResultStore } from '../../lambdas/core/crawl/index.ts';

export interface BlobWrite {
  key: string;
  /** The write's number among all writes asked for (1 for the first). */
  call: number;
  contentType: string;
}

export class MemoryBlobs implements ResultStore {
  readonly objects = new Map<string, Uint8Array>();
  /** Every write asked for (put or putIfAbsent), in order, whether it took effect or not. */
  readonly calls: string[] = [];
  /** Every write that took effect, in order. */
  readonly puts: string[] = [];
  lists = 0;
  beforeWrite: ((write: BlobWrite) => void | Promise<void>) | undefined;
  afterWrite: ((write: BlobWrite) => void | Promise<void>) | undefined;
  readonly #failures: Array<{ pattern: RegExp; times: number }> = [];

  /** The next `times` writes of a key matching `pattern` throw before writing. */
  failPuts(pattern: RegExp, times: number): void {
    this.#failures.push({ pattern, times });
  }

  async put(key: string, body: Uint8Array, contentType: string): Promise<void> {
    await this.#write(key, body, contentType, false);
  }

  putIfAbsent(key: string, body: Uint8Array, contentType: string): Promise<boolean> {
    return this.#write(key, body, contentType, true);
  }

  async exists(key: string): Promise<boolean> {
    await tick();
    return this.objects.has(key);
  }

  async *list(prefix: string): AsyncGenerator<string> {
    this.lists++;
    await tick();
    // S3 lists keys in UTF-8 byte order: for the ASCII keys of this project, string order.
    for (const key of [...this.objects.keys()].sort()) if (key.startsWith(prefix)) yield key;
  }

  async #write(key: string, body: Uint8Array, contentType: string, ifAbsent: boolean): Promise<boolean> {
    this.calls.push(key);
    const write = { key, call: this.calls.length, contentType };
    const failure = this.#failures.find((f) => f.times > 0 && f.pattern.test(key));
    if (failure) {
      failure.times--;
      throw new Error(`PUT ${key} failed (injected)`);
    }
    await this.beforeWrite?.(write);
    await tick();
    if (ifAbsent && this.objects.has(key)) return false;
    // A copy: the caller may reuse its buffer, the bucket keeps what was sent.
    this.objects.set(key, Buffer.from(body));
    this.puts.push(key);
    await this.afterWrite?.(write);
    return true;
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
