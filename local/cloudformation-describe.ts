// CloudFormation's DescribeStacks for the stack `crawler local` provisioned, in the query protocol
// (form in, XML out) that the AWS CLI and SDKs speak. With it, the commands a deployed stack's user
// runs (`aws cloudformation describe-stacks ... --query Outputs`, `crawler ... --stack NAME`) work
// against the local endpoint unchanged, and docs/deploy.md's walk-through is checked there.
import { randomUUID } from 'node:crypto';

export interface LocalStackDescription {
  stackName: string;
  stackId: string;
  createdAt: Date;
  /** Default CREATE_COMPLETE. */
  status?: string;
  outputs: Readonly<Record<string, string>>;
}

export interface XmlAnswer {
  status: number;
  body: string;
}

const XMLNS = 'http://cloudformation.amazonaws.com/doc/2010-05-15/';

/**
 * The answer to a DescribeStacks form. As CloudFormation: a StackName is a name or a stack id, and
 * one that names no stack is a 400 ValidationError "Stack with id NAME does not exist".
 */
export function describeStacksAnswer(
  form: URLSearchParams,
  stacks: readonly LocalStackDescription[],
): XmlAnswer {
  const asked = form.get('StackName');
  const found = asked === null ? stacks : stacks.filter((s) => asked === s.stackName || asked === s.stackId);
  if (asked !== null && found.length === 0) {
    return {
      status: 400,
      body:
        `<?xml version="1.0"?><ErrorResponse xmlns="${XMLNS}"><Error><Type>Sender</Type>` +
        `<Code>ValidationError</Code><Message>Stack with id ${esc(asked)} does not exist</Message></Error>` +
        `<RequestId>${randomUUID()}</RequestId></ErrorResponse>`,
    };
  }
  return {
    status: 200,
    body:
      `<?xml version="1.0"?><DescribeStacksResponse xmlns="${XMLNS}"><DescribeStacksResult><Stacks>` +
      found.map(stackXml).join('') +
      '</Stacks></DescribeStacksResult>' +
      `<ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></DescribeStacksResponse>`,
  };
}

function stackXml(stack: LocalStackDescription): string {
  const outputs = Object.entries(stack.outputs)
    .map(
      ([key, value]) =>
        `<member><OutputKey>${esc(key)}</OutputKey><OutputValue>${esc(value)}</OutputValue></member>`,
    )
    .join('');
  return (
    `<member><StackName>${esc(stack.stackName)}</StackName><StackId>${esc(stack.stackId)}</StackId>` +
    `<CreationTime>${stack.createdAt.toISOString()}</CreationTime>` +
    `<StackStatus>${esc(stack.status ?? 'CREATE_COMPLETE')}</StackStatus><Outputs>${outputs}</Outputs></member>`
  );
}

function esc(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}
