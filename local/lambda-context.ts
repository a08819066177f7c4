// The Lambda `context` object a Node.js handler receives.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { LocalFunction } from './stack-model.ts';

/** A log stream per slot, as Lambda names one per execution environment. */
export function logStreamName(now = new Date()): string {
  const day = now.toISOString().slice(0, 10).replaceAll('-', '/');
  return `${day}/[$LATEST]${randomBytes(16).toString('hex')}`;
}

export function createLambdaContext(
  fn: LocalFunction,
  deadline: number,
  stream: string,
  awsRequestId: string = randomUUID(),
): Context {
  const unsupported = (name: string) => () => {
    // nodejs24.x dropped callback-style completion; fail loudly instead of pretending.
    throw new Error(`context.${name}() is not supported by the nodejs24.x runtime; return a promise`);
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: fn.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: fn.functionArn,
    memoryLimitInMB: String(fn.memorySizeMb),
    awsRequestId,
    logGroupName: `/aws/lambda/${fn.functionName}`,
    logStreamName: stream,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported('done'),
    fail: unsupported('fail'),
    succeed: unsupported('succeed'),
  };
}
