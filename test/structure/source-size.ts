/**
 * The size rules (issue 28): no source module over 500 lines, and no function over 80, so that
 * every module can be read whole and every function seen on one screen. "Source" is what
 * SOURCE_DIRS names (the Lambda code, the stack, the local runtime, the CLI, the bench); the tests
 * are outside the rule (a contract suite is one long `describe`). A function's length runs from its
 * first line to its last, the functions nested in it included, as ESLint's `max-lines-per-function`
 * counts it.
 *
 * Exceptions are data tables and generated code only, each with its reason (SIZE_EXCEPTIONS).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { SOURCE_DIRS } from './import-graph.ts';

export const MAX_MODULE_LINES = 500;
export const MAX_FUNCTION_LINES = 80;

/** `path` (a module) or `path#name` (one function in it), with why it may be longer. */
export const SIZE_EXCEPTIONS: ReadonlyMap<string, string> = new Map<string, string>([]);

export interface SizeFinding {
  where: string;
  lines: number;
  limit: number;
}

/** Every module and function over its limit, exceptions left out, longest first. */
export function sizeViolations(root: string, options: { withExceptions?: boolean } = {}): SizeFinding[] {
  const findings: SizeFinding[] = [];
  for (const dir of SOURCE_DIRS) {
    for (const entry of readdirSync(join(root, dir), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const file = join(entry.parentPath, entry.name);
      findings.push(...sizesOf(relative(root, file), readFileSync(file, 'utf8')));
    }
  }
  return findings
    .filter((finding) => options.withExceptions || !SIZE_EXCEPTIONS.has(finding.where))
    .sort((a, b) => b.lines - a.lines);
}

/** The findings of one module's text (exported so the test can show the rule bites). */
export function sizesOf(path: string, text: string): SizeFinding[] {
  const findings: SizeFinding[] = [];
  const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
  if (lines > MAX_MODULE_LINES) findings.push({ where: path, lines, limit: MAX_MODULE_LINES });
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line;
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const length = lineOf(node.getEnd()) - lineOf(node.getStart(source)) + 1;
      if (length > MAX_FUNCTION_LINES)
        findings.push({
          where: `${path}#${functionName(node, source)}`,
          lines: length,
          limit: MAX_FUNCTION_LINES,
        });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return findings;
}

function functionName(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (
    (ts.isVariableDeclaration(parent) ||
      ts.isPropertyAssignment(parent) ||
      ts.isPropertyDeclaration(parent)) &&
    parent.name
  )
    return parent.name.getText(source);
  return `<function at line ${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}>`;
}
