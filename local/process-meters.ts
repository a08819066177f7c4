// The meters of one local process (or one handler worker thread): the call counter that `crawler crawl`
// and the bench read their AWS cost from, and the IAM ledger the IAM test turns on. The local runtime
// hands them to the handlers it runs (HandlerWiring.meters); its own clients and the CLI's count into
// them too, so one window covers a whole crawl. A worker thread has its own, relayed to the main
// thread's (worker-relays.ts). Lambda has none of this: a function there makes its own meters.
import { AwsCallCounter } from '../lambdas/shared/aws-call-counter.ts';
import { AwsCallLedger } from '../lambdas/shared/aws-call-ledger.ts';
import type { AwsMeters } from '../lambdas/shared/aws-clients.ts';

/** Locally DynamoDB's units are asked for (dynalite reports them, so figures match AWS's). */
export const processMeters: Required<AwsMeters> = {
  counter: new AwsCallCounter(),
  ledger: new AwsCallLedger(),
  reportCapacity: true,
};
