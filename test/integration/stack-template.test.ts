// The local runtime's template cache (local/stack-template.ts): what it returns is what synthesis
// gives, and a damaged cache file costs a synthesis, never a wrong template or a failed crawl.
import assert from 'node:assert/strict';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { synthesizeTemplate } from '../../cdk/synth.ts';
import { stackTemplate, templateCacheFile } from '../../local/stack-template.ts';

describe('the cached stack template', () => {
  it('is the synthesized template, kept under the hash of its sources, and rebuilt when damaged', async () => {
    const file = await templateCacheFile();
    await rm(file, { force: true });
    const synthesized = synthesizeTemplate();
    assert.deepEqual(await stackTemplate(), synthesized, 'a miss synthesizes');
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), synthesized, 'and caches what it synthesized');
    assert.deepEqual(await stackTemplate(), synthesized, 'a hit reads it back');

    await writeFile(file, '{"Resources": {"Trunc');
    assert.deepEqual(await stackTemplate(), synthesized, 'a damaged file is synthesized again');
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), synthesized, 'and replaced');
  });
});
