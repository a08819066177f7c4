import { STACK_NAME, synthesizeTemplate } from './cdk/synth.ts';
import { parseTemplate } from './local/cfn-template.ts';
import { startLocalAws } from './local/local-aws.ts';

const t0 = Date.now();
const template = parseTemplate(synthesizeTemplate());
console.log('synth ms', Date.now() - t0);
const aws = await startLocalAws({ template, stackName: STACK_NAME });
console.dir(
  {
    outputs: aws.outputs,
    functions: Object.values(aws.stack.functions).map((f) => ({
      id: f.logicalId,
      h: f.handlerModule,
      t: f.timeoutSeconds,
      env: f.environment,
    })),
    es: aws.stack.eventSources,
    ignored: aws.stack.ignored,
    skipped: aws.stack.skipped,
    concurrency: aws.pollers.map((p) => p.concurrency),
    queues: Object.entries(aws.stack.resources)
      .filter(([, r]) => r.type === 'AWS::SQS::Queue')
      .map(([id, r]) => [id, r.attributes]),
  },
  { depth: 6 },
);
await aws.start();
await aws.stop();
