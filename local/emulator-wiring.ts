// The embedded emulators told about the stack once it is provisioned: the event bus its buses and
// rules, the Scheduler its groups and queues, the Parameter Store its account; each with where it
// delivers and, with a state dir, the file it keeps. Apart from local-aws.ts, which composes the
// runtime: this is what the template means for the emulators alone.
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { FUNCTION_ENV } from '../lambdas/shared/contracts.ts';
import type { Emulators } from './emulators.ts';
import type { ProvisionedStack } from './stack-model.ts';

export interface EmulatorWiring {
  region: string;
  /** Sends what the event bus delivers (AWS's own work: no principal of the stack's). */
  sqs: SQSClient;
  /** Sends as this role (a schedule's). */
  sqsAs(roleArn: string): SQSClient;
  /** With a state dir: where the events are logged and the schedules and parameters kept. */
  files?: { events: string; schedules: string; parameters: string };
  log?: (line: string) => void;
}

export async function wireEmulators(
  emulators: Emulators,
  stack: ProvisionedStack,
  wiring: EmulatorWiring,
): Promise<void> {
  wireEventBus(emulators, stack, wiring);
  await wireScheduler(emulators, stack, wiring);
  await emulators.parameters.configure({
    region: wiring.region,
    accountId: stack.accountId,
    ...(wiring.files ? { file: wiring.files.parameters } : {}),
  });
}

function wireEventBus(emulators: Emulators, stack: ProvisionedStack, wiring: EmulatorWiring): void {
  const { log } = wiring;
  // The stack's buses: `default` and whichever its functions publish to.
  const buses = new Set(['default', ...stack.eventRules.map((rule) => rule.busName)]);
  for (const fn of Object.values(stack.functions)) {
    const bus = fn.environment[FUNCTION_ENV.eventBusName];
    if (bus !== undefined) buses.add(bus);
  }
  emulators.eventBus.configure({
    region: wiring.region,
    accountId: stack.accountId,
    buses: [...buses],
    rules: stack.eventRules,
    deliver: async (queueUrl, body) => {
      await wiring.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    },
    ...(log
      ? { onDeliveryError: (where, error) => log?.(`event not delivered to ${where}: ${String(error)}`) }
      : {}),
  });
  if (wiring.files) emulators.eventBus.addLogFile(wiring.files.events);
}

async function wireScheduler(
  emulators: Emulators,
  stack: ProvisionedStack,
  wiring: EmulatorWiring,
): Promise<void> {
  const { log } = wiring;
  const queueUrls = new Map(
    Object.values(stack.resources).flatMap((r) =>
      r.type === 'AWS::SQS::Queue' && r.arn && r.url ? [[r.arn, r.url] as const] : [],
    ),
  );
  await emulators.scheduler.configure({
    region: wiring.region,
    accountId: stack.accountId,
    groups: [
      'default',
      ...Object.values(stack.resources).flatMap((r) =>
        r.type === 'AWS::Scheduler::ScheduleGroup' ? [r.physicalId] : [],
      ),
    ],
    queueUrlOf: (arn) => queueUrls.get(arn),
    // Scheduler sends as the schedule's role: its calls are that role's.
    deliver: async (queueUrl, body, role) => {
      await wiring.sqsAs(role).send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    },
    ...(wiring.files ? { file: wiring.files.schedules } : {}),
    ...(log
      ? { onDeliveryError: (schedule, error) => log?.(`schedule ${schedule} not sent: ${String(error)}`) }
      : {}),
  });
}
