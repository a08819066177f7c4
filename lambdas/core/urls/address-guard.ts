/**
 * The address guard: which IP addresses the fetcher may dial (invariant 5 of the design).
 *
 * Pure, no I/O. The fetcher calls `blockedAddressReason` on every address it is about to dial
 * (inside undici's `connect.lookup`, so DNS rebinding cannot slip a private address past a
 * check made earlier) and `hostIpLiteral` on the URL host first, because IP-literal hosts
 * never reach a lookup.
 *
 * Policy: only public unicast addresses are allowed. Anything that is not a well-formed IPv4 or
 * IPv6 address is blocked too (fail closed). IPv6 addresses that carry an IPv4 address
 * (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4
 * address they lead to. IPv6 outside 2000::/3 (the only block IANA allocates global unicast
 * from) is blocked.
 */

interface Range4 {
  readonly base: number;
  readonly bits: number;
  readonly reason: string;
  readonly text: string;
}

function v4(text: string, bits: number, kind: string): Range4 {
  const base = parseIPv4(text);
  if (base === undefined) throw new Error(`bad range ${text}`);
  return { base, bits, reason: `${kind} (${text}/${bits})`, text };
}

/** Special-purpose IPv4 ranges (RFC 6890 and the IANA registry) that are not publicly routable. */
const IPV4_BLOCKED: readonly Range4[] = [
  v4('255.255.255.255', 32, 'broadcast'),
  v4('0.0.0.0', 8, 'unspecified / this network'),
  v4('10.0.0.0', 8, 'private'),
  v4('100.64.0.0', 10, 'shared address space / CGNAT'),
  v4('127.0.0.0', 8, 'loopback'),
  v4('169.254.0.0', 16, 'link-local'),
  v4('172.16.0.0', 12, 'private'),
  v4('192.0.0.0', 24, 'IETF protocol assignments'),
  v4('192.0.2.0', 24, 'documentation'),
  v4('192.88.99.0', 24, '6to4 relay anycast'),
  v4('192.168.0.0', 16, 'private'),
  v4('198.18.0.0', 15, 'benchmarking'),
  v4('198.51.100.0', 24, 'documentation'),
  v4('203.0.113.0', 24, 'documentation'),
  v4('224.0.0.0', 4, 'multicast'),
  v4('240.0.0.0', 4, 'reserved'),
];

const METADATA_V4 = parseIPv4('169.254.169.254');

function inRange4(ip: number, range: Range4): boolean {
  if (range.bits === 0) return true;
  const mask = range.bits === 32 ? 0xffffffff : (0xffffffff << (32 - range.bits)) >>> 0;
  return (ip & mask) >>> 0 === range.base;
}

function reason4(ip: number): string | undefined {
  for (const range of IPV4_BLOCKED) {
    if (inRange4(ip, range)) {
      return ip === METADATA_V4 ? `${range.reason}, cloud metadata endpoint` : range.reason;
    }
  }
  return undefined;
}

/** Strict dotted-decimal IPv4 (what dns and WHATWG URL produce) to a 32-bit unsigned number. */
function parseIPv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    // No leading zeros: '010' is octal to inet_aton and decimal to others; refuse to guess.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

function formatIPv4(ip: number): string {
  return [ip >>> 24, (ip >>> 16) & 0xff, (ip >>> 8) & 0xff, ip & 0xff].join('.');
}

/** IPv6 text (any RFC 4291 form, optional %zone) to its eight 16-bit groups. */
function parseIPv6(input: string): number[] | undefined {
  let text = input;
  const zone = text.indexOf('%');
  if (zone !== -1) {
    if (zone === text.length - 1) return undefined;
    text = text.slice(0, zone);
  }
  if (text.length === 0 || !/^[0-9a-fA-F:.]+$/.test(text)) return undefined;

  // A dotted IPv4 tail stands for the last two groups.
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.')) {
    const ip4 = parseIPv4(text.slice(lastColon + 1));
    if (ip4 === undefined) return undefined;
    tail = [ip4 >>> 16, ip4 & 0xffff];
    text = text.slice(0, lastColon + 1);
    // 'a:b::1.2.3.4' leaves 'a:b::', '::1.2.3.4' leaves '::', 'a:b:c:d:e:f:1.2.3.4' leaves '...f:'.
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }

  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parseGroups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const group of part.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
      groups.push(Number.parseInt(group, 16));
    }
    return groups;
  };
  const head = parseGroups(halves[0] ?? '');
  if (head === undefined) return undefined;
  if (halves.length === 1) {
    const groups = [...head, ...tail];
    return groups.length === 8 ? groups : undefined;
  }
  const rest = parseGroups(halves[1] ?? '');
  if (rest === undefined) return undefined;
  const missing = 8 - head.length - rest.length - tail.length;
  // '::' stands for at least one group of zeros.
  if (missing < 1) return undefined;
  return [...head, ...new Array<number>(missing).fill(0), ...rest, ...tail];
}

function embeddedV4(groups: readonly number[], from: number): number {
  return (((groups[from] ?? 0) << 16) | (groups[from + 1] ?? 0)) >>> 0;
}

function viaV4(kind: string, ip: number): string | undefined {
  const inner = reason4(ip);
  return inner === undefined ? undefined : `${kind} embedding ${formatIPv4(ip)}: ${inner}`;
}

function reason6(g: readonly number[]): string | undefined {
  const at = (i: number): number => g[i] ?? 0;
  const zeroUpTo = (n: number): boolean => g.slice(0, n).every((x) => x === 0);

  if (zeroUpTo(8)) return 'unspecified (::/128)';
  if (zeroUpTo(7) && at(7) === 1) return 'loopback (::1/128)';
  if (zeroUpTo(5) && at(5) === 0xffff) return viaV4('IPv4-mapped (::ffff:0:0/96)', embeddedV4(g, 6));
  if (zeroUpTo(6)) {
    // IPv4-compatible (deprecated): dialled as the IPv4 address on many stacks.
    return viaV4('IPv4-compatible (::/96)', embeddedV4(g, 6)) ?? 'IPv4-compatible (::/96, deprecated)';
  }
  if (zeroUpTo(4) && at(4) === 0xffff && at(5) === 0) return 'IPv4-translated (::ffff:0:0:0/96)';
  if (at(0) === 0x64 && at(1) === 0xff9b) {
    if (g.slice(2, 6).every((x) => x === 0)) return viaV4('NAT64 (64:ff9b::/96)', embeddedV4(g, 6));
    if (at(2) === 1) return 'local-use NAT64 (64:ff9b:1::/48)';
  }
  if (at(0) === 0x100 && at(1) === 0 && at(2) === 0 && at(3) === 0) return 'discard-only (100::/64)';
  if ((at(0) & 0xffc0) === 0xfe80) return 'link-local (fe80::/10)';
  if ((at(0) & 0xffc0) === 0xfec0) return 'site-local (fec0::/10, deprecated)';
  if ((at(0) & 0xfe00) === 0xfc00) {
    const aws =
      at(0) === 0xfd00 && at(1) === 0x0ec2 && g.slice(2, 7).every((x) => x === 0) && at(7) === 0x254;
    return aws ? 'unique local (fc00::/7), AWS metadata endpoint' : 'unique local (fc00::/7)';
  }
  if ((at(0) & 0xff00) === 0xff00) return 'multicast (ff00::/8)';
  if (at(0) === 0x2001 && at(1) === 0x0db8) return 'documentation (2001:db8::/32)';
  if (at(0) === 0x3fff && (at(1) & 0xf000) === 0) return 'documentation (3fff::/20)';
  if (at(0) === 0x2001 && at(1) === 0) return 'Teredo (2001::/32)';
  if (at(0) === 0x2001 && at(1) === 2 && at(2) === 0) return 'benchmarking (2001:2::/48)';
  if (at(0) === 0x2001 && (at(1) & 0xfff0) === 0x10) return 'ORCHID (2001:10::/28)';
  if (at(0) === 0x2001 && (at(1) & 0xfff0) === 0x20) return 'ORCHIDv2 (2001:20::/28)';
  if (at(0) === 0x2002) return viaV4('6to4 (2002::/16)', embeddedV4(g, 1));
  if ((at(0) & 0xe000) !== 0x2000) return 'not global unicast (outside 2000::/3)';
  return undefined;
}

export interface BlockedSubnet {
  readonly network: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

/**
 * Prefixes blocked whatever the rest of the address holds: a subset of what
 * `blockedAddressReason` blocks (the embedded-IPv4 rules cannot be written as prefixes), for a
 * socket-level `net.BlockList` that backs up the lookup check.
 */
export const BLOCKED_SUBNETS: readonly BlockedSubnet[] = [
  ...IPV4_BLOCKED.map((range) => ({ network: range.text, prefix: range.bits, family: 'ipv4' as const })),
  ...(
    [
      ['::', 128],
      ['::1', 128],
      ['64:ff9b:1::', 48],
      ['100::', 64],
      ['2001::', 32],
      ['2001:2::', 48],
      ['2001:10::', 28],
      ['2001:20::', 28],
      ['2001:db8::', 32],
      ['3fff::', 20],
      ['4000::', 2],
      ['8000::', 1],
      ['fc00::', 7],
      ['fe80::', 10],
      ['fec0::', 10],
      ['ff00::', 8],
    ] as const
  ).map(([network, prefix]) => ({ network, prefix, family: 'ipv6' as const })),
];

/**
 * Why the fetcher must not dial `ip`, or undefined when it is a public unicast address.
 * Accepts the textual forms Node's dns and WHATWG URL produce: dotted IPv4, IPv6 in any RFC 4291
 * form (compressed, full, uppercase, with a dotted IPv4 tail, with a %zone), optionally in
 * brackets. Anything else is not an IP address and is blocked.
 */
export function blockedAddressReason(ip: string): string | undefined {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const asV4 = parseIPv4(text);
  if (asV4 !== undefined) return reason4(asV4);
  const asV6 = parseIPv6(text);
  if (asV6 !== undefined) return reason6(asV6);
  return `not an IP address (${JSON.stringify(ip)})`;
}

/** The ranges of IPV4_BLOCKED that reach this machine itself or its link. */
const HOST_LOCAL_V4: readonly Range4[] = IPV4_BLOCKED.filter((range) =>
  ['0.0.0.0', '127.0.0.0', '169.254.0.0'].includes(range.text),
);

function hostLocal4(ip: number): string | undefined {
  const range = HOST_LOCAL_V4.find((candidate) => inRange4(ip, candidate));
  if (range === undefined) return undefined;
  return ip === METADATA_V4 ? `${range.reason}, cloud metadata endpoint` : range.reason;
}

/**
 * Why `ip` must not be dialled even when private ranges are allowed, on a machine whose own services
 * listen there: loopback (Lambda's Runtime API), link-local (the metadata service) and the
 * unspecified address (dialled as this host). IPv6 forms that carry such an IPv4 address count too.
 * Anything that is not an IP address is refused (fail closed).
 */
export function hostLocalAddressReason(ip: string): string | undefined {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const asV4 = parseIPv4(text);
  if (asV4 !== undefined) return hostLocal4(asV4);
  const g = parseIPv6(text);
  if (g === undefined) return `not an IP address (${JSON.stringify(ip)})`;
  const zeroUpTo = (n: number): boolean => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return 'unspecified (::/128)';
  if (zeroUpTo(7) && g[7] === 1) return 'loopback (::1/128)';
  if ((zeroUpTo(5) && g[5] === 0xffff) || zeroUpTo(6)) {
    const inner = hostLocal4(embeddedV4(g, 6));
    return inner === undefined ? undefined : `IPv6 embedding ${formatIPv4(embeddedV4(g, 6))}: ${inner}`;
  }
  if (((g[0] ?? 0) & 0xffc0) === 0xfe80) return 'link-local (fe80::/10)';
  if (g[0] === 0xfd00 && g[1] === 0x0ec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254)
    return 'AWS metadata endpoint (fd00:ec2::254)';
  return undefined;
}

/** `hostLocalAddressReason`'s prefixes, for the socket-level BlockList behind its lookup check. */
export const HOST_LOCAL_SUBNETS: readonly BlockedSubnet[] = [
  ...HOST_LOCAL_V4.map((range) => ({ network: range.text, prefix: range.bits, family: 'ipv4' as const })),
  { network: '::', prefix: 128, family: 'ipv6' },
  { network: '::1', prefix: 128, family: 'ipv6' },
  { network: 'fe80::', prefix: 10, family: 'ipv6' },
  { network: 'fd00:ec2::254', prefix: 128, family: 'ipv6' },
];

/**
 * The IP address an URL host stands for when it is an IP literal, else undefined (a name to
 * resolve). IPv6 comes without brackets. Hosts are normalized as WHATWG URL does, so the
 * numeric IPv4 forms (`2130706433`, `0x7f.1`, `0177.0.0.1`) come back dotted; `new URL(...)`
 * has already done that for `url.hostname`.
 */
export function hostIpLiteral(hostname: string): string | undefined {
  if (hostname.startsWith('[')) {
    if (!hostname.endsWith(']')) return undefined;
    const inner = hostname.slice(1, -1);
    return parseIPv6(inner) === undefined ? undefined : inner;
  }
  if (parseIPv4(hostname) !== undefined) return hostname;
  if (hostname.includes(':')) return parseIPv6(hostname) === undefined ? undefined : hostname;
  // Not dotted decimal, but WHATWG may still read it as IPv4 (decimal, hex or octal parts).
  if (!/^[0-9a-fA-FxX.]+$/.test(hostname)) return undefined;
  let normalized: string;
  try {
    normalized = new URL(`http://${hostname}/`).hostname;
  } catch {
    return undefined;
  }
  return parseIPv4(normalized) !== undefined ? normalized : undefined;
}

/** The hint of a refusal under the public-only policy (every crawl without --allow-private). */
export const ALLOW_PRIVATE_HINT = 'crawl with --allow-private to permit';

/** The guard's one line for a refused address: what the host is, why, and what the user can do. */
export function addressRefusal(host: string, verb: string, ip: string, reason: string, hint: string): string {
  return `address not allowed: ${host} ${verb} ${ip} (${reason}); ${hint}`;
}

/**
 * Names that stand for a cloud metadata service (GCP's, and the names EC2's resolver answers with
 * 169.254.169.254): refused by name wherever link-local addresses are (both policies), so that no
 * lookup is made for them and a machine that cannot resolve them refuses them at once instead of
 * retrying a DNS failure.
 */
const METADATA_HOSTNAMES: ReadonlySet<string> = new Set([
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** The refusal of a metadata service's name (any case, with or without the root dot), else undefined. */
export function metadataNameRefusal(hostname: string, hint: string): string | undefined {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (!METADATA_HOSTNAMES.has(name)) return undefined;
  return `address not allowed: ${hostname} (cloud metadata service name); ${hint}`;
}

/**
 * The refusal of a URL host under the public-only policy that needs no lookup: an IP literal (in any
 * spelling WHATWG URL reads as one) outside public unicast, or a metadata service's name. Undefined
 * for any other name, and for a public address.
 */
export function literalHostRefusal(hostname: string): string | undefined {
  const byName = metadataNameRefusal(hostname, ALLOW_PRIVATE_HINT);
  if (byName !== undefined) return byName;
  const literal = hostIpLiteral(hostname);
  const reason = literal === undefined ? undefined : blockedAddressReason(literal);
  if (literal === undefined || reason === undefined) return undefined;
  return addressRefusal(hostname, 'is', literal, reason, ALLOW_PRIVATE_HINT);
}
