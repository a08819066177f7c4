/**
 * The address guard on what is dialled: resolvers that let only allowed addresses out, and the
 * socket BlockList behind them. The fetcher's agents use them, and so does the render guard proxy
 * (renderLookups), which is why they are apart from the fetcher; the policies themselves (which
 * ranges, which names) are the core's (core/urls/address-guard.ts).
 */
import type { LookupAddress } from 'node:dns';
import * as dns from 'node:dns';
import { BlockList, type LookupFunction } from 'node:net';
import { ADDRESS_BLOCKED, PermanentError } from '../core/base/index.ts';
import {
  ALLOW_PRIVATE_HINT,
  addressRefusal,
  BLOCKED_SUBNETS,
  type BlockedSubnet,
  blockedAddressReason,
  HOST_LOCAL_SUBNETS,
  hostLocalAddressReason,
} from '../core/urls/index.ts';

const defaultLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, options, callback);
};

function toAddressList(result: string | LookupAddress[], family: number | undefined): LookupAddress[] {
  if (Array.isArray(result)) return result;
  return [{ address: result, family: family ?? (result.includes(':') ? 6 : 4) }];
}

/** What the fetcher refuses to dial, and what a user can do about it. */
export interface AddressPolicy {
  name: string;
  reasonOf: (ip: string) => string | undefined;
  hint: string;
  subnets: readonly BlockedSubnet[];
}

/** Public unicast only: every request unless it allows private ranges. */
export const PUBLIC_ONLY: AddressPolicy = {
  name: 'public',
  reasonOf: blockedAddressReason,
  hint: ALLOW_PRIVATE_HINT,
  subnets: BLOCKED_SUBNETS,
};

/** Private ranges allowed, this machine's own addresses not (`refuseHostLocal`: inside Lambda). */
export const NOT_HOST_LOCAL: AddressPolicy = {
  name: 'not-host-local',
  reasonOf: hostLocalAddressReason,
  hint: "on Lambda this machine's own addresses are never fetched, even with --allow-private",
  subnets: HOST_LOCAL_SUBNETS,
};

export function blockedError(
  host: string,
  verb: string,
  ip: string,
  reason: string,
  policy: AddressPolicy = PUBLIC_ONLY,
): PermanentError {
  return new PermanentError('blocked', ADDRESS_BLOCKED, addressRefusal(host, verb, ip, reason, policy.hint));
}

/**
 * Wraps a resolver so that only public addresses come out of it. Node's net dials only what the
 * lookup returns, so this is the check on what is dialled. Blocked addresses in a mixed answer are
 * dropped; when none is left, the lookup fails with the guard's PermanentError.
 */
export function guardLookup(base: LookupFunction, policy: AddressPolicy = PUBLIC_ONLY): LookupFunction {
  const { reasonOf } = policy;
  return (hostname, options, callback) => {
    let answered = false;
    base(hostname, { ...options, all: true }, (error, result, family) => {
      if (answered) return;
      answered = true;
      if (error) {
        callback(error, options.all ? [] : '');
        return;
      }
      const addresses = toAddressList(result, family);
      const allowed = addresses.filter((entry) => reasonOf(entry.address) === undefined);
      const first = allowed[0];
      if (first === undefined) {
        const bad = addresses[0];
        const error =
          bad === undefined
            ? Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
                code: 'ENOTFOUND',
                syscall: 'getaddrinfo',
              })
            : blockedError(hostname, 'resolves to', bad.address, reasonOf(bad.address) ?? '', policy);
        callback(error, options.all ? [] : '');
        return;
      }
      if (options.all) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
}

/**
 * The guard's fixed prefixes as a net.BlockList, handed to net.connect by the guarded agent: a
 * second check on the socket itself, should anything ever dial around the lookup.
 */
export function socketBlockList(subnets: readonly BlockedSubnet[] = BLOCKED_SUBNETS): BlockList {
  const list = new BlockList();
  for (const subnet of subnets) list.addSubnet(subnet.network, subnet.prefix, subnet.family);
  return list;
}

/** For other dialers that keep to the guard (the render guard proxy): the system's resolver. */
export { defaultLookup as systemLookup };

/**
 * The render guard's resolvers (render-guard-proxy.ts): public addresses only, and for the page's own
 * host in an --allow-private crawl any address but, with `refuseHostLocal` (inside Lambda), this
 * machine's own.
 */
export function renderLookups(refuseHostLocal: boolean): { public: LookupFunction; private: LookupFunction } {
  return {
    public: guardLookup(defaultLookup),
    private: refuseHostLocal ? guardLookup(defaultLookup, NOT_HOST_LOCAL) : defaultLookup,
  };
}
