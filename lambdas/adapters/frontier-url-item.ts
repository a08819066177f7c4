/**
 * A URL item (`URLS#<crawlId>#<host>` / `<key>`) as the URL adapters read and write it: the
 * attributes kept beside frontier-schema.ts's ATTR, what a visit reads of an item, and its decoding
 * into a HostUrl. Apart from frontier-urls.ts because admission (frontier-url-admission.ts) writes
 * the same attributes.
 */
import { OUTCOMES, type Outcome } from '../core/base/index.ts';
import { type HostUrl, type PriorCapture, PriorCaptureSchema } from '../core/crawl/index.ts';
import { ATTR, copyPresentNumbers, type Item, num, str, URL_ST } from './frontier-schema.ts';

/** What `page` and `get` read of a URL item (everything but its keys' pk, `rid` and `expiresAt`). */
export const HOST_URL_ATTRS = [
  ATTR.sk,
  ATTR.url,
  ATTR.depth,
  ATTR.st,
  ATTR.parent,
  ATTR.redirects,
  ATTR.attempts,
  ATTR.retryAt,
  ATTR.outcome,
  ATTR.bytes,
  ATTR.requests,
  ATTR.part,
  ATTR.carried,
  ATTR.kids,
  ATTR.prior,
];

const OUTCOME_SET: ReadonlySet<string> = new Set(OUTCOMES);

export const isCarried = (item: Item | undefined): boolean => item?.[ATTR.carried]?.BOOL === true;

/** A URL item's optional numbers, as HostUrl names them (read for every item a visit reads). */
const HOST_URL_NUMBERS = [
  ['redirects', ATTR.redirects],
  ['attempts', ATTR.attempts],
  ['retryAt', ATTR.retryAt],
  ['bytes', ATTR.bytes],
  ['requests', ATTR.requests],
  ['kids', ATTR.kids],
] as const;

/** A URL item as a visit reads it (absent attributes are left out). */
export function hostUrl(item: Item): HostUrl {
  const st = str(item, ATTR.st);
  const url: HostUrl = {
    key: str(item, ATTR.sk) ?? '',
    url: str(item, ATTR.url) ?? '',
    depth: num(item, ATTR.depth) ?? 0,
    st: st === URL_ST.done || st === URL_ST.held ? st : URL_ST.new,
  };
  const parent = str(item, ATTR.parent);
  if (parent !== undefined) url.parent = parent;
  copyPresentNumbers(url, item, HOST_URL_NUMBERS);
  const outcome = str(item, ATTR.outcome);
  if (outcome !== undefined && OUTCOME_SET.has(outcome)) url.outcome = outcome as Outcome;
  const part = str(item, ATTR.part);
  if (part !== undefined) url.part = part;
  if (isCarried(item)) url.carried = true;
  // Only a URL still to fetch asks with its capture: a visit's passes read done items again and again.
  const prior = url.st === URL_ST.new ? priorCapture(str(item, ATTR.prior)) : undefined;
  if (prior !== undefined) url.prior = prior;
  return url;
}

/** The stored capture, or undefined if absent or unreadable (then the URL is fetched as a new one). */
function priorCapture(json: string | undefined): PriorCapture | undefined {
  if (json === undefined) return undefined;
  try {
    const parsed = PriorCaptureSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
