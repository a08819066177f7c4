/**
 * Invariants that a comment states between a runtime constant and a deploy-time setting, each held
 * here against the template that deploys (issue 28, point 4): change one side and this fails.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FETCH_FUNCTION, QUEUE, RENDER_FUNCTION } from '../../cdk/limits.ts';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { VISIT_GRACE_MS } from '../../lambdas/adapters/frontier-hosts.ts';
import { CRAWL_LIMITS, RENDER_LIMITS } from '../../lambdas/core/base/index.ts';
import { LEASE_MARGIN_MS } from '../../lambdas/core/batches/index.ts';
import { SEND_RESERVE_MS } from '../../lambdas/fetch/handler.ts';
import { IDS } from '../../lambdas/shared/contracts.ts';
import { resource } from './template.ts';

const json = synthesizeTemplate();
const queue = (id: string) => resource(json, id, 'AWS::SQS::Queue').Properties;
const visibilityMs = (id: string) => Number(queue(id).VisibilityTimeout) * 1000;
const maxReceiveCount = (id: string) =>
  Number((queue(id).RedrivePolicy as { maxReceiveCount?: unknown } | undefined)?.maxReceiveCount);

describe('invariants between the code and the stack', () => {
  it("a wake's grace (VISIT_GRACE_MS) is below the task queue's redelivery delay: a crashed send's parent finds it stale", () => {
    assert.ok(
      VISIT_GRACE_MS < visibilityMs(IDS.taskQueue),
      `${VISIT_GRACE_MS} < ${visibilityMs(IDS.taskQueue)}`,
    );
  });

  it("a URL's attempts are fewer than a queue's receives: a URL ends with a result before its message is parked", () => {
    for (const id of [IDS.taskQueue, IDS.resultsQueue, IDS.renderQueue]) {
      assert.equal(maxReceiveCount(id), QUEUE.maxReceiveCount, id);
      assert.ok(CRAWL_LIMITS.maxAttempts < maxReceiveCount(id), id);
    }
  });

  it("the fetch function's send reserve fits in its timeout, and a visit's lease outlasts the timeout", () => {
    const timeoutMs = FETCH_FUNCTION.timeoutSeconds * 1000;
    assert.ok(SEND_RESERVE_MS < timeoutMs);
    // lease = deadline + LEASE_MARGIN_MS, deadline = end of the invocation - SEND_RESERVE_MS at most:
    // a killed holder's lease ends after its invocation was cut off, so no new holder overlaps it.
    assert.ok(LEASE_MARGIN_MS > SEND_RESERVE_MS);
    assert.equal(
      Number(resource(json, IDS.fetchFunction, 'AWS::Lambda::Function').Properties.Timeout),
      FETCH_FUNCTION.timeoutSeconds,
    );
  });

  it("a render fits in the render function's timeout, and a host's hold outlasts a render", () => {
    const timeoutMs =
      Number(resource(json, IDS.renderFunction, 'AWS::Lambda::Function').Properties.Timeout) * 1000;
    assert.equal(timeoutMs, RENDER_FUNCTION.timeoutSeconds * 1000);
    // The render's budget, the browser context's close (5 s, browser-renderer.ts), and 20 s for a cold
    // start unpacking the browser (~1.5 s measured) and the page's sends.
    assert.ok(RENDER_LIMITS.timeMs + 5_000 + 20_000 <= timeoutMs);
    // A hold lapses only after the render message's receives are spent (it is in RenderDLQ by then).
    const receivesMs = maxReceiveCount(IDS.renderQueue) * visibilityMs(IDS.renderQueue);
    assert.ok(RENDER_LIMITS.holdMaxMs > receivesMs, `${RENDER_LIMITS.holdMaxMs} > ${receivesMs}`);
  });
});
