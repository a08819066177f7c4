// Resolves the CloudFormation intrinsics a CDK stack uses for wiring; anything else fails loudly.

export interface ResolveContext {
  region: string;
  accountId: string;
  stackName: string;
  stackId: string;
  /** Ref to a logical id (resource or parameter). */
  ref(logicalId: string, path: string): string;
  getAtt(logicalId: string, attribute: string, path: string): string;
}

/** Ref AWS::NoValue: the property is dropped. */
export const NO_VALUE: unique symbol = Symbol('AWS::NoValue');

export class TemplateResolveError extends Error {
  override name = 'TemplateResolveError';
}

export function resolveValue(value: unknown, ctx: ResolveContext, path: string): unknown {
  if (Array.isArray(value)) {
    return value
      .map((item, i) => resolveValue(item, ctx, `${path}[${i}]`))
      .filter((item) => item !== NO_VALUE);
  }
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  const [first] = entries;
  if (entries.length === 1 && first && isIntrinsic(first[0]))
    return resolveIntrinsic(first[0], first[1], ctx, path);
  const out: Record<string, unknown> = {};
  for (const [key, inner] of entries) {
    const resolved = resolveValue(inner, ctx, `${path}.${key}`);
    if (resolved !== NO_VALUE) out[key] = resolved;
  }
  return out;
}

/** Resolves to a string; numbers and booleans are stringified as CloudFormation does for env vars. */
export function resolveString(value: unknown, ctx: ResolveContext, path: string): string {
  const resolved = resolveValue(value, ctx, path);
  if (typeof resolved === 'string') return resolved;
  if (typeof resolved === 'number' || typeof resolved === 'boolean') return String(resolved);
  throw new TemplateResolveError(`${path}: expected a string, got ${JSON.stringify(resolved)}`);
}

function isIntrinsic(key: string): boolean {
  return key === 'Ref' || key.startsWith('Fn::');
}

function resolveIntrinsic(name: string, args: unknown, ctx: ResolveContext, path: string): unknown {
  const at = `${path} (${name})`;
  switch (name) {
    case 'Ref':
      if (typeof args !== 'string') throw new TemplateResolveError(`${at}: Ref needs a logical id`);
      return args === 'AWS::NoValue' ? NO_VALUE : refOrPseudo(args, ctx, at);
    case 'Fn::GetAtt': {
      const [id, attribute] = typeof args === 'string' ? splitOnce(args, '.') : asPair(args, at);
      if (typeof id !== 'string') throw new TemplateResolveError(`${at}: expected [logicalId, attribute]`);
      return ctx.getAtt(id, resolveString(attribute, ctx, at), at);
    }
    case 'Fn::Join': {
      const [delimiter, items] = asPair(args, at);
      const list = resolveValue(items, ctx, at);
      if (typeof delimiter !== 'string' || !Array.isArray(list)) {
        throw new TemplateResolveError(`${at}: expected [delimiter, [values]]`);
      }
      return list.map((item, i) => resolveString(item, ctx, `${at}[${i}]`)).join(delimiter);
    }
    case 'Fn::Sub':
      return substitute(args, ctx, at);
    case 'Fn::Select': {
      const [index, items] = asPair(args, at);
      const list = resolveValue(items, ctx, at);
      const i = Number(resolveValue(index, ctx, at));
      if (!Array.isArray(list) || !Number.isInteger(i) || i < 0 || i >= list.length) {
        throw new TemplateResolveError(`${at}: index out of range`);
      }
      return list[i];
    }
    case 'Fn::Split': {
      const [delimiter, source] = asPair(args, at);
      if (typeof delimiter !== 'string')
        throw new TemplateResolveError(`${at}: expected [delimiter, string]`);
      return resolveString(source, ctx, at).split(delimiter);
    }
    default:
      throw new TemplateResolveError(`${at}: intrinsic ${name} is not supported by the local runtime`);
  }
}

function refOrPseudo(id: string, ctx: ResolveContext, at: string): string {
  switch (id) {
    case 'AWS::Region':
      return ctx.region;
    case 'AWS::AccountId':
      return ctx.accountId;
    case 'AWS::Partition':
      return 'aws';
    case 'AWS::URLSuffix':
      return 'amazonaws.com';
    case 'AWS::StackName':
      return ctx.stackName;
    case 'AWS::StackId':
      return ctx.stackId;
    default:
      if (id.startsWith('AWS::'))
        throw new TemplateResolveError(`${at}: pseudo parameter ${id} is not supported`);
      return ctx.ref(id, at);
  }
}

function substitute(args: unknown, ctx: ResolveContext, at: string): string {
  const [text, rawVars] = Array.isArray(args) ? args : [args, {}];
  if (typeof text !== 'string') throw new TemplateResolveError(`${at}: Fn::Sub needs a string`);
  const vars = resolveValue(rawVars ?? {}, ctx, at);
  const local = typeof vars === 'object' && vars !== null ? (vars as Record<string, unknown>) : {};
  return text.replace(/\$\{([^}]*)\}/g, (_whole, name: string) => {
    if (name.startsWith('!')) return `\${${name.slice(1)}}`; // ${!Literal} escapes
    if (name in local) return resolveString(local[name], ctx, `${at}.${name}`);
    if (name.includes('.') && !name.startsWith('AWS::')) {
      const [id, attribute] = splitOnce(name, '.');
      return ctx.getAtt(id, attribute, at);
    }
    return refOrPseudo(name, ctx, at);
  });
}

function asPair(args: unknown, at: string): [unknown, unknown] {
  if (!Array.isArray(args) || args.length !== 2)
    throw new TemplateResolveError(`${at}: expected two arguments`);
  return [args[0], args[1]];
}

function splitOnce(text: string, separator: string): [string, string] {
  const i = text.indexOf(separator);
  return i < 0 ? [text, ''] : [text.slice(0, i), text.slice(i + 1)];
}
