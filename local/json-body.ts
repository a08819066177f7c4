/** A request's JSON body for the local emulators' own servers: bounded, and parsed once. */
import type { IncomingMessage } from 'node:http';

export type JsonBody =
  | { kind: 'json'; value: unknown }
  /** Empty: no body was sent. */
  | { kind: 'empty' }
  | { kind: 'too-large'; limit: number }
  | { kind: 'not-json' };

/** Reads the body, keeping at most `limit` bytes: a larger one is drained and reported, not held. */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<JsonBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.byteLength;
      if (bytes <= limit) chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (bytes > limit) return resolve({ kind: 'too-large', limit });
      if (bytes === 0) return resolve({ kind: 'empty' });
      try {
        resolve({ kind: 'json', value: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        resolve({ kind: 'not-json' });
      }
    });
  });
}
