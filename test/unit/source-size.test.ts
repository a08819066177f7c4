/**
 * The size rules (issue 28, test/structure/source-size.ts): no source module over 500 lines and no
 * function over 80, except the data tables listed with their reasons. The rule is shown to bite on
 * a module and a function made too long, so a passing run means the sizes were measured.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../cdk/paths.ts';
import {
  MAX_FUNCTION_LINES,
  MAX_MODULE_LINES,
  SIZE_EXCEPTIONS,
  sizesOf,
  sizeViolations,
} from '../structure/source-size.ts';

describe('the size rules', () => {
  it('no source module is over 500 lines and no function over 80, but the listed exceptions', () => {
    const found = sizeViolations(REPO_ROOT).map((f) => `${f.where}: ${f.lines} lines (limit ${f.limit})`);
    assert.deepEqual(found, []);
  });

  it('every exception names a module or function that exists and is over its limit, with a reason', () => {
    const all = new Set(sizeViolationsIncludingExceptions().map((finding) => finding.where));
    for (const [where, why] of SIZE_EXCEPTIONS) {
      assert.ok(all.has(where), `${where} is listed as an exception but is within its limit`);
      assert.ok(why.length > 20, `${where} needs a reason`);
    }
  });

  it('finds a module one line too long and a function one line too long, nested or not', () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const longFunction = `export function tooLong() {\n${body(MAX_FUNCTION_LINES + 1)}\n}\n`;
    assert.deepEqual(
      sizesOf('x.ts', longFunction).map((f) => [f.where, f.lines]),
      [['x.ts#tooLong', MAX_FUNCTION_LINES + 1]],
    );
    const fits = `export function fits() {\n${body(MAX_FUNCTION_LINES)}\n}\n`;
    assert.deepEqual(sizesOf('x.ts', fits), []);
    const nested = `export const outer = () => {\n  const inner = function () {\n${body(MAX_FUNCTION_LINES)}\n  };\n  return inner;\n};\n`;
    assert.deepEqual(
      sizesOf('x.ts', nested).map((f) => f.where),
      ['x.ts#outer'],
    );
    const method = `class C {\n  run() {\n${body(MAX_FUNCTION_LINES + 5)}\n  }\n}\n`;
    assert.deepEqual(
      sizesOf('x.ts', method).map((f) => f.where),
      ['x.ts#run'],
    );
    const longModule = Array.from(
      { length: MAX_MODULE_LINES + 1 },
      (_, i) => `export const c${i} = ${i};`,
    ).join('\n');
    assert.deepEqual(
      sizesOf('m.ts', `${longModule}\n`).map((f) => [f.where, f.lines]),
      [['m.ts', MAX_MODULE_LINES + 1]],
    );
    assert.deepEqual(sizesOf('m.ts', `${longModule.split('\n').slice(1).join('\n')}\n`), []);
  });
});

function sizeViolationsIncludingExceptions() {
  return sizeViolations(REPO_ROOT, { withExceptions: true });
}
