/**
 * The embedded AWS (emulators + the provisioned stack, no pollers) in its own process, for the memory
 * benchmark: the fetch handler under test then runs in a process of its own, as on Lambda, and its
 * memory is not mixed with the emulators'. Sends `{kind: 'ready', env}` (the fetch function's
 * environment) over IPC; stops on `{cmd: 'exit'}` or when the parent goes away.
 */
import { synthesizeTemplate } from '../cdk/synth.ts';
import { STACK_NAME } from '../lambdas/shared/contracts.ts';
import { parseTemplate } from '../local/cfn-template.ts';
import { startLocalAws } from '../local/local-aws.ts';

const local = await startLocalAws({
  template: parseTemplate(synthesizeTemplate()),
  stackName: STACK_NAME,
  handlerEnvOverrides: { LOG_LEVEL: 'warn' },
});
const env = local.functionEnv.FetchFunction;
if (!env) throw new Error('the stack has no FetchFunction');
process.send?.({ kind: 'ready', env, memoryMb: local.stack.functions.FetchFunction?.memorySizeMb ?? 0 });
const stop = () => void local.stop().then(() => process.exit(0));
process.on('message', stop);
process.on('disconnect', stop);
