/**
 * WARC digests: `WARC-Block-Digest` / `WARC-Payload-Digest` values.
 *
 * We write `sha1:` + RFC 4648 base32 (uppercase; a SHA-1 is 20 bytes = 160 bits = exactly 32 base32
 * characters, so there is never padding), which is what warcio, Heritrix, wget and Common Crawl write.
 * When reading we accept what warcio accepts: base32 (any case, with or without padding), hex (any
 * case), base64 and base64url (with or without padding).
 */
import { createHash } from 'node:crypto';

const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32, uppercase, with `=` padding to a multiple of 8 characters. */
export function base32Encode(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32_ALPHABET[(buffer << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

/** `sha1:` + base32 of the SHA-1 of `bytes`, as written in WARC-Block-Digest / WARC-Payload-Digest. */
export function sha1Digest(bytes: Uint8Array): string {
  return formatSha1(createHash('sha1').update(bytes).digest());
}

/** Formats a raw 20-byte SHA-1 as a WARC digest value. */
export function formatSha1(raw: Uint8Array): string {
  return `sha1:${base32Encode(raw)}`;
}

/** node:crypto algorithm for a WARC digest algorithm label (labels are case-insensitive). */
const ALGORITHMS: Record<string, string> = {
  sha1: 'sha1',
  'sha-1': 'sha1',
  sha256: 'sha256',
  'sha-256': 'sha256',
  sha512: 'sha512',
  'sha-512': 'sha512',
  md5: 'md5',
};

/** Splits `algo:value`; undefined when there is no algorithm or no value. */
export function parseDigest(value: string): { algorithm: string; encoded: string } | undefined {
  const colon = value.indexOf(':');
  if (colon <= 0) return undefined;
  const algorithm = value.slice(0, colon).trim().toLowerCase();
  const encoded = value.slice(colon + 1).trim();
  if (encoded === '') return undefined;
  return { algorithm, encoded };
}

/** Every spelling of `raw` that a WARC digest value may use, for an exact comparison. */
function encodings(raw: Buffer): { caseless: string[]; exact: string[] } {
  const base32 = base32Encode(raw);
  const base64 = raw.toString('base64');
  const base64url = raw.toString('base64url');
  return {
    caseless: [raw.toString('hex'), base32, base32.replace(/=+$/, '')],
    exact: [
      base64,
      base64.replace(/=+$/, ''),
      base64url,
      `${base64url}${'='.repeat((4 - (base64url.length % 4)) % 4)}`,
    ],
  };
}

/**
 * True when `digestHeaderValue` (e.g. `sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ`) is the digest of
 * `bytes`. Accepts sha1, sha256, sha512 and md5, each in base32, hex, base64 or base64url. An unknown
 * algorithm or a malformed value is false, never an exception.
 */
export function verifyDigest(digestHeaderValue: string, bytes: Uint8Array): boolean {
  const parsed = parseDigest(digestHeaderValue);
  if (!parsed) return false;
  const algorithm = ALGORITHMS[parsed.algorithm];
  if (!algorithm) return false;
  const { caseless, exact } = encodings(createHash(algorithm).update(bytes).digest());
  const upper = parsed.encoded.toUpperCase();
  return caseless.some((candidate) => candidate.toUpperCase() === upper) || exact.includes(parsed.encoded);
}
