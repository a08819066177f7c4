/**
 * What the per-URL step and the robots gate rely on from HostSlots (a host's pace), run against
 * the in-memory fake (test/fakes/host-slots.ts) and the visit's pacer, VisitPacer
 * (test/integration/port-contracts.test.ts). One host: a VisitPacer is one visit's, of one host.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HostSlots } from '../../lambdas/core/crawl/index.ts';

const T0 = Date.UTC(2025, 0, 1);

/** `make` gives the slots of a host nobody has sent to yet. */
export function hostSlotsContract(name: string, make: () => HostSlots): void {
  describe(`HostSlots contract: ${name}`, () => {
    it('a free host is free now; each reservation moves the next slot its delay later', async () => {
      const slots = make();
      assert.equal(await slots.reserve(1000, T0), T0);
      assert.equal(await slots.reserve(1000, T0), T0 + 1000);
      assert.equal(await slots.reserve(3000, T0 + 10), T0 + 2000);
      assert.equal(await slots.reserve(0, T0), T0 + 5000, 'the last gap was 3000');
    });

    it('a reservation after the next free slot is at its own now', async () => {
      const slots = make();
      assert.equal(await slots.reserve(1000, T0), T0);
      assert.equal(await slots.reserve(1000, T0 + 60_000), T0 + 60_000);
      assert.equal(await slots.reserve(1000, T0 + 60_000), T0 + 61_000);
    });

    it('no slot is reserved before a pushBack (Retry-After, a Crawl-delay)', async () => {
      const slots = make();
      await slots.pushBack(T0 + 30_000);
      assert.equal(await slots.reserve(1000, T0), T0 + 30_000);
      assert.equal(await slots.reserve(1000, T0), T0 + 31_000);
    });

    it('a pushBack never brings the next slot earlier', async () => {
      const slots = make();
      await slots.pushBack(T0 + 30_000);
      await slots.pushBack(T0 + 10_000);
      assert.equal(await slots.reserve(5000, T0), T0 + 30_000);
      // A pause shorter than the reserved pace keeps the pace.
      const paced = make();
      assert.equal(await paced.reserve(60_000, T0), T0);
      await paced.pushBack(T0 + 5000);
      assert.equal(await paced.reserve(0, T0), T0 + 60_000);
    });
  });
}
