// Typed access to a synthesized template for the CDK tests (Template.toJSON() is loosely typed).
import assert from 'node:assert/strict';

export interface CfnResource {
  Type: string;
  Properties: Record<string, unknown>;
  Metadata: Record<string, unknown>;
}

export interface Statement {
  Effect: string;
  Actions: string[];
  Resources: unknown[];
  Principal: unknown;
  Condition: unknown;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function resourcesOf(template: Record<string, unknown>): Record<string, CfnResource> {
  const resources = template.Resources;
  assert.ok(isRecord(resources), 'template has Resources');
  const out: Record<string, CfnResource> = {};
  for (const [id, raw] of Object.entries(resources)) {
    assert.ok(isRecord(raw) && typeof raw.Type === 'string', `${id} is a resource`);
    out[id] = {
      Type: raw.Type,
      Properties: isRecord(raw.Properties) ? raw.Properties : {},
      Metadata: isRecord(raw.Metadata) ? raw.Metadata : {},
    };
  }
  return out;
}

export function resource(template: Record<string, unknown>, id: string, type: string): CfnResource {
  const found = resourcesOf(template)[id];
  assert.ok(found, `resource ${id} exists`);
  assert.equal(found.Type, type, `${id} type`);
  return found;
}

export function ofType(template: Record<string, unknown>, type: string): Array<[string, CfnResource]> {
  return Object.entries(resourcesOf(template)).filter(([, r]) => r.Type === type);
}

/** `{Ref: id}` -> id */
export function refTarget(value: unknown): string | undefined {
  return isRecord(value) && typeof value.Ref === 'string' ? value.Ref : undefined;
}

/** `{'Fn::GetAtt': [id, attr]}` -> id */
export function getAttTarget(value: unknown, attribute = 'Arn'): string | undefined {
  if (!isRecord(value)) return undefined;
  const args = value['Fn::GetAtt'];
  return Array.isArray(args) && typeof args[0] === 'string' && args[1] === attribute ? args[0] : undefined;
}

/** Statements of an IAM policy document, with Action/Resource normalized to arrays. */
export function statementsOf(document: unknown): Statement[] {
  assert.ok(isRecord(document) && Array.isArray(document.Statement), 'a policy document');
  return document.Statement.map((raw: unknown) => {
    assert.ok(isRecord(raw), 'a statement');
    const actions = [raw.Action ?? []].flat();
    assert.ok(
      actions.every((a) => typeof a === 'string'),
      'actions are strings',
    );
    return {
      Effect: String(raw.Effect),
      Actions: actions as string[],
      Resources: [raw.Resource ?? []].flat(),
      Principal: raw.Principal,
      Condition: raw.Condition,
    };
  });
}

/** All identity-policy statements attached to the role of a function (inline policies and AWS::IAM::Policy). */
export function roleStatements(template: Record<string, unknown>, functionId: string): Statement[] {
  const fn = resource(template, functionId, 'AWS::Lambda::Function');
  const roleId = getAttTarget(fn.Properties.Role);
  assert.ok(roleId, `${functionId} role is a GetAtt of a role in the stack`);
  return statementsOfRole(template, roleId);
}

/** A role's identity statements: its inline policies and the AWS::IAM::Policy resources attached to it. */
export function statementsOfRole(template: Record<string, unknown>, roleId: string): Statement[] {
  const statements: Statement[] = [];
  const role = resource(template, roleId, 'AWS::IAM::Role');
  for (const inline of [role.Properties.Policies ?? []].flat()) {
    assert.ok(isRecord(inline));
    statements.push(...statementsOf(inline.PolicyDocument));
  }
  for (const [, policy] of ofType(template, 'AWS::IAM::Policy')) {
    const roles = [policy.Properties.Roles ?? []].flat();
    if (roles.some((r) => refTarget(r) === roleId))
      statements.push(...statementsOf(policy.Properties.PolicyDocument));
  }
  return statements;
}

/** Logical ids a statement's resources point at (`GetAtt X.Arn`, or `Join [GetAtt X.Arn, suffix]`), with the suffix. */
export function resourceTargets(statement: Statement): string[] {
  return statement.Resources.map((r) => {
    const direct = getAttTarget(r);
    if (direct) return direct;
    if (isRecord(r) && Array.isArray(r['Fn::Join'])) {
      const parts = r['Fn::Join'][1];
      // A pseudo parameter (AWS::Partition, AWS::Region, AWS::AccountId) by its name.
      if (Array.isArray(parts))
        return parts
          .map((p) => getAttTarget(p) ?? (isRecord(p) && typeof p.Ref === 'string' ? p.Ref : String(p)))
          .join('');
    }
    return JSON.stringify(r);
  });
}

/** Whether `actions` of the function's role allow `action` on the resource `target` (e.g. 'PageStore/*'). */
export function allows(statements: Statement[], action: string, target: string): boolean {
  return statements.some(
    (s) =>
      s.Effect === 'Allow' &&
      resourceTargets(s).includes(target) &&
      s.Actions.some((a) => a === action || (a.endsWith('*') && action.startsWith(a.slice(0, -1)))),
  );
}

/**
 * A dashboard's body as JSON: the `Fn::Join` of its DashboardBody with every token written as
 * `${Ref:X}` / `${X.Attr}` (tokens only ever sit inside JSON strings there).
 */
export function dashboardBody(template: Record<string, unknown>, id: string): Record<string, unknown> {
  const body = resource(template, id, 'AWS::CloudWatch::Dashboard').Properties.DashboardBody;
  const parts =
    typeof body === 'string'
      ? [body]
      : isRecord(body) && Array.isArray(body['Fn::Join']) && body['Fn::Join'][0] === ''
        ? body['Fn::Join'][1]
        : undefined;
  assert.ok(Array.isArray(parts), 'DashboardBody is a string or an Fn::Join with no separator');
  const text = parts
    .map((part: unknown) => {
      if (typeof part === 'string') return part;
      const ref = refTarget(part);
      if (ref) return `\${Ref:${ref}}`;
      if (isRecord(part) && Array.isArray(part['Fn::GetAtt'])) return `\${${part['Fn::GetAtt'].join('.')}}`;
      throw new Error(`unexpected token in the dashboard body: ${JSON.stringify(part)}`);
    })
    .join('');
  const parsed: unknown = JSON.parse(text);
  assert.ok(isRecord(parsed));
  return parsed;
}
