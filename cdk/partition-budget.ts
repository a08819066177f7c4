/**
 * The highest fetch concurrency at which one crawl keeps every partition key of the FrontierTable
 * under its share of DynamoDB's per-key throughput. One crawl may have the whole fetch concurrency
 * to itself, and its busiest keys (`CRAWL#<crawlId>`, a host linked from every page) take a fixed
 * number of units per fetched page, so the key's rate grows with pages/s: with the concurrency.
 */
import { CRAWL_LOAD, DYNAMODB_PARTITION, FETCH_EVENT_SOURCE } from './limits.ts';

export interface PartitionLoad {
  readonly writeUnits: number;
  readonly readUnits: number;
}

export interface PartitionBudgetInput {
  /** Visits an invocation runs side by side (the fetch event source's batch size). */
  readonly batchSize: number;
  readonly gapSeconds: number;
  readonly perPage: Readonly<Record<string, PartitionLoad>>;
  readonly partition: {
    readonly writeUnitsPerSecond: number;
    readonly readUnitsPerSecond: number;
    readonly maxShare: number;
  };
}

export interface PartitionCeiling {
  /** The highest MaximumConcurrency of the fetch event source that keeps every key under its share. */
  readonly maxFetchConcurrency: number;
  /** Pages a second one fetch invocation fetches at most: a page a gap for each visit. */
  readonly pagesPerInvocation: number;
  /** Pages a second at which the binding key reaches its share. */
  readonly maxPagesPerSecond: number;
  /** The key and unit that bind first. */
  readonly key: string;
  readonly unit: 'write' | 'read';
}

export const STACK_PARTITION_BUDGET: PartitionBudgetInput = {
  batchSize: FETCH_EVENT_SOURCE.batchSize,
  gapSeconds: CRAWL_LOAD.gapSeconds,
  perPage: CRAWL_LOAD.perPage,
  partition: DYNAMODB_PARTITION,
};

export function partitionCeiling(input: PartitionBudgetInput = STACK_PARTITION_BUDGET): PartitionCeiling {
  const pagesPerInvocation = input.batchSize / input.gapSeconds;
  let binding: Omit<PartitionCeiling, 'maxFetchConcurrency' | 'pagesPerInvocation'> | undefined;
  for (const [key, load] of Object.entries(input.perPage)) {
    for (const [unit, perPage, capacity] of [
      ['write', load.writeUnits, input.partition.writeUnitsPerSecond],
      ['read', load.readUnits, input.partition.readUnitsPerSecond],
    ] as const) {
      if (perPage <= 0) continue;
      const maxPagesPerSecond = (capacity * input.partition.maxShare) / perPage;
      if (!binding || maxPagesPerSecond < binding.maxPagesPerSecond)
        binding = { maxPagesPerSecond, key, unit };
    }
  }
  if (!binding) throw new Error('partition budget: no partition key takes any unit per page');
  // The epsilon keeps an exact quotient (880 / 55 = 16) from flooring to one less in binary floating point.
  const maxFetchConcurrency = Math.floor(binding.maxPagesPerSecond / pagesPerInvocation + 1e-9);
  return { ...binding, pagesPerInvocation, maxFetchConcurrency };
}
