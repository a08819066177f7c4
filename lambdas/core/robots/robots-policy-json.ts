/**
 * Policies read back from the RobotsStore: the JSON the gate saves (robots-gate.ts: a policy as
 * `JSON.stringify(policy)`, an address-guard refusal as `{"refused": message}`) checked field by
 * field, since a stored item may come from another version or be damaged. Apart from the gate
 * because it is pure validation of untrusted data, with nothing of the gate's flow in it.
 */

import type { RobotsGroup, RobotsPolicy, RobotsRule } from './robots.ts';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function ruleFrom(value: unknown): RobotsRule | undefined {
  if (!isRecord(value) || typeof value.allow !== 'boolean' || typeof value.pattern !== 'string')
    return undefined;
  return { allow: value.allow, pattern: value.pattern };
}

function groupFrom(value: unknown): RobotsGroup | undefined {
  if (!isRecord(value) || !Array.isArray(value.agents) || !Array.isArray(value.rules)) return undefined;
  const agents: string[] = [];
  for (const agent of value.agents) {
    if (typeof agent !== 'string') return undefined;
    agents.push(agent);
  }
  const rules: RobotsRule[] = [];
  for (const item of value.rules) {
    const rule = ruleFrom(item);
    if (!rule) return undefined;
    rules.push(rule);
  }
  const delay = value.crawlDelay;
  if (delay === undefined || delay === null) return { agents, rules };
  if (typeof delay !== 'number' || !(delay >= 0)) return undefined;
  return { agents, rules, crawlDelay: delay };
}

/** The guard's message of a refusal saved as `{"refused": message}`; undefined for anything else. */
export function refusalFromJson(json: string): string | undefined {
  if (!json.startsWith('{"refused":')) return undefined;
  try {
    const value: unknown = JSON.parse(json);
    return isRecord(value) && typeof value.refused === 'string' ? value.refused : undefined;
  } catch {
    return undefined;
  }
}

/** A policy saved as `JSON.stringify(policy)`; undefined when the JSON is not one. */
export function policyFromJson(json: string): RobotsPolicy | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || !Array.isArray(value.groups) || !Array.isArray(value.sitemaps)) return undefined;
  const groups: RobotsGroup[] = [];
  for (const item of value.groups) {
    const group = groupFrom(item);
    if (!group) return undefined;
    groups.push(group);
  }
  const sitemaps: string[] = [];
  for (const item of value.sitemaps) {
    if (typeof item !== 'string') return undefined;
    sitemaps.push(item);
  }
  return { groups, sitemaps, truncated: value.truncated === true };
}
