/**
 * The README's CLI table and outcome list are what a user reads first: every command the CLI
 * dispatches has a row that says what it does, and every outcome a result can carry is named.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { COMMANDS } from '../../cli/main.ts';
import { OUTCOMES } from '../../lambdas/core/base/index.ts';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** `| \`crawler NAME …\` | description |` rows: the command's name → its description cell. */
function commandRows(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of readme.split('\n')) {
    const match = /^\| `crawler ([a-z-]+)[^`]*`\s+\| (.*)\|\s*$/.exec(line);
    if (match) rows.set(match[1]!, match[2]!.trim());
  }
  return rows;
}

test('every CLI command has a README row that describes it in a sentence', () => {
  const rows = commandRows();
  for (const name of Object.keys(COMMANDS)) {
    const description = rows.get(name);
    assert.ok(description !== undefined, `no README row for crawler ${name}`);
    const words = description.split(/\s+/).filter((word) => /[a-z]{2}/i.test(word));
    assert.ok(
      words.length >= 8,
      `the README row of crawler ${name} says only ${JSON.stringify(description)}`,
    );
    assert.doesNotMatch(description, /\\$/, `the README row of crawler ${name} ends in a stray backslash`);
  }
});

test('the README names every outcome a result record can carry', () => {
  const sentence = /`outcome` is one of([^.]*)/.exec(readme)?.[1];
  assert.ok(sentence, 'the README has no "`outcome` is one of" list');
  const named = new Set([...sentence.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]));
  for (const outcome of OUTCOMES) assert.ok(named.has(outcome), `the README's outcome list omits ${outcome}`);
});
