import type { OutputName } from './contracts.ts';

/** A stack output the command needs; `where` names the stack in the error (default "the stack"). */
export function requiredOutput(
  outputs: Readonly<Record<string, string | undefined>>,
  name: OutputName,
  where = 'the stack',
): string {
  const value = outputs[name];
  if (!value) throw new Error(`${where} has no ${name} output; is it the serverless-crawler stack?`);
  return value;
}
