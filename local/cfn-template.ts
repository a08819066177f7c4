// The synthesized CloudFormation template as data: its shape, loading, and dependency order.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';

const ResourceSchema = z.looseObject({
  Type: z.string(),
  Properties: z.record(z.string(), z.unknown()).optional(),
  Metadata: z.record(z.string(), z.unknown()).optional(),
  DependsOn: z.union([z.string(), z.array(z.string())]).optional(),
  Condition: z.string().optional(),
});

const TemplateSchema = z.looseObject({
  Resources: z.record(z.string(), ResourceSchema),
  Outputs: z.record(z.string(), z.looseObject({ Value: z.unknown() })).optional(),
  Parameters: z
    .record(z.string(), z.looseObject({ Type: z.string(), Default: z.unknown().optional() }))
    .optional(),
});

export type CfnResource = z.infer<typeof ResourceSchema>;
export type CfnTemplate = z.infer<typeof TemplateSchema>;
/** What callers may hand in: a parsed template, or template JSON as synthesized (validated on use). */
export type TemplateInput = CfnTemplate | Record<string, unknown>;

export function parseTemplate(json: unknown): CfnTemplate {
  const parsed = TemplateSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new Error(`not a CloudFormation template: ${problems}`);
}

export async function loadTemplate(file: string): Promise<CfnTemplate> {
  return parseTemplate(JSON.parse(await readFile(file, 'utf8')));
}

/** Logical ids a value refers to through Ref, Fn::GetAtt or ${...} in Fn::Sub. */
export function referencedIds(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) referencedIds(item, into);
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, inner] of Object.entries(value)) {
      if (key === 'Ref' && typeof inner === 'string') into.add(inner);
      else if (key === 'Fn::GetAtt') addGetAttTarget(inner, into);
      else if (key === 'Fn::Sub') addSubTargets(inner, into);
      else referencedIds(inner, into);
    }
  }
  return into;
}

function addGetAttTarget(args: unknown, into: Set<string>): void {
  if (Array.isArray(args) && typeof args[0] === 'string') into.add(args[0]);
  else if (typeof args === 'string') into.add(args.split('.')[0] ?? args);
}

function addSubTargets(args: unknown, into: Set<string>): void {
  const [text, vars] = Array.isArray(args) ? args : [args, undefined];
  if (vars !== undefined) referencedIds(vars, into);
  if (typeof text !== 'string') return;
  const local = typeof vars === 'object' && vars !== null ? Object.keys(vars) : [];
  for (const match of text.matchAll(/\$\{([^!}][^}]*)\}/g)) {
    const name = (match[1] ?? '').split('.')[0] ?? '';
    if (!local.includes(name) && !name.startsWith('AWS::')) into.add(name);
  }
}

/** Topological order of `ids` (dependencies first), counting only edges between them. */
export function dependencyOrder(template: CfnTemplate, ids: readonly string[]): string[] {
  const wanted = new Set(ids);
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string, trail: string[]): void => {
    const seen = state.get(id);
    if (seen === 'done') return;
    if (seen === 'visiting') throw new Error(`circular dependency: ${[...trail, id].join(' -> ')}`);
    state.set(id, 'visiting');
    const resource = template.Resources[id];
    const deps = referencedIds(resource?.Properties);
    for (const dep of [resource?.DependsOn ?? []].flat()) deps.add(dep);
    for (const dep of [...deps].sort()) if (wanted.has(dep) && dep !== id) visit(dep, [...trail, id]);
    state.set(id, 'done');
    order.push(id);
  };
  for (const id of ids) visit(id, []);
  return order;
}
