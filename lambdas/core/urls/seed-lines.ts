/**
 * Seeds at scale (`--seeds-file`): the lines of a seeds file read as a stream, one URL a line (blank
 * lines and `#` comments skipped), each normalized on its own, and the crawl's scope collected as
 * the distinct scope keys of the seeds (core/urls/scope.ts). Nothing holds the lines: memory is one line
 * at a time plus the keys (one per distinct host, domain or prefix), whatever the file's length.
 */
import { type Scope, seedScopeKey } from './scope.ts';
import { normalizeUrl, stripUserinfo } from './url-normalize.ts';

/** A seed line as written (trimmed), with its 1-based line number in the file. */
export interface SeedLine {
  line: number;
  text: string;
}

/** A seed line read: a URL to admit (`url` normalized, `key` its dedup key) or why it is not one. */
export type Seed =
  | { ok: true; line: number; text: string; url: string; key: string }
  | { ok: false; line: number; text: string; reason: string };

/**
 * The lines that are seeds: trimmed, numbered as in the file; blank lines and `#` comments skipped.
 * A `user:pass@` is dropped at once, as the config drops it from its seeds: a seed is recorded.
 */
export async function* seedLines(lines: AsyncIterable<string>): AsyncGenerator<SeedLine> {
  let line = 0;
  for await (const raw of lines) {
    line++;
    const text = raw.trim();
    if (text === '' || text.startsWith('#')) continue;
    yield { line, text: stripUserinfo(text) };
  }
}

/** One seed line normalized as a link is (the crawl's URL length limit included). */
export function readSeed(seed: SeedLine, maxUrlLength: number): Seed {
  const normalized = normalizeUrl(seed.text, { maxUrlLength });
  if (!normalized.ok) return { ok: false, ...seed, reason: normalized.reason };
  return { ok: true, ...seed, url: normalized.url, key: normalized.key };
}

/** What a pass over the seeds found: how many, how many are not URLs, and the scope's keys. */
export interface SeedScan {
  seeds: number;
  invalid: number;
  scopeKeys: Set<string>;
}

/**
 * One pass over the seeds before any is admitted: the scope must be whole before the first seed's
 * page is fetched, or its links would be judged against part of it. Each seed that is not a URL is
 * reported (`onInvalid`) and counted; it is still submitted, to end as an `invalid` result.
 */
export async function scanSeeds(
  seeds: AsyncIterable<SeedLine>,
  rules: { scope: Scope; maxUrlLength: number },
  onInvalid: (seed: Extract<Seed, { ok: false }>) => void = () => {},
): Promise<SeedScan> {
  const scan: SeedScan = { seeds: 0, invalid: 0, scopeKeys: new Set() };
  for await (const line of seeds) {
    scan.seeds++;
    const seed = readSeed(line, rules.maxUrlLength);
    if (!seed.ok) {
      scan.invalid++;
      onInvalid(seed);
    }
    // As compileScope: a seed widens the scope when it parses as a URL at all (length aside).
    const key = seedScopeKey(rules.scope, line.text);
    if (key.ok) scan.scopeKeys.add(key.key);
  }
  return scan;
}
