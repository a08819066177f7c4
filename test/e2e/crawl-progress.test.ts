/**
 * Progress of `crawler crawl` as a user sees it: under a pseudo-terminal (util-linux `script`) one
 * line updated in place, in a pipe a few plain lines, with `--progress json` one event per line.
 * The site is small and paced (`--delay`) so the crawl runs long enough to update several times.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CRAWLER_BIN, NODE_BIN, REPO_ROOT, runCli } from '../fixtures/run-cli.ts';

/** Pages `/` and `/p/1`..`/p/11` in a binary tree: 12 URLs, all found. */
const PAGES = 12;
const DELAY_MS = 400;

let server: Server;
let origin: string;
let workDir: string;

before(async () => {
  server = createServer((request, response) => {
    const match = request.url === '/' ? ['', '0'] : /^\/p\/(\d+)$/.exec(request.url ?? '');
    if (!match) {
      response.writeHead(404).end();
      return;
    }
    const i = Number(match[1]);
    const links = [2 * i + 1, 2 * i + 2].filter((j) => j < PAGES).map((j) => `<a href="/p/${j}">${j}</a>`);
    response
      .writeHead(200, { 'content-type': 'text/html' })
      .end(`<html><body>${links.join(' ')}</body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  workDir = await mkdtemp(join(tmpdir(), 'crawl-progress-'));
});
after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(workDir, { recursive: true, force: true });
});

const crawlArgs = (name: string) => [
  'crawl',
  `${origin}/`,
  '--allow-private',
  '--delay',
  String(DELAY_MS),
  '--out',
  join(workDir, name),
];

const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;

/** Runs the CLI on a pseudo-terminal 100 columns wide; returns everything the terminal received. */
async function runOnTerminal(args: string[]): Promise<{ code: number | null; output: string }> {
  const stateDir = await mkdtemp(join(tmpdir(), 'crawl-progress-state-'));
  try {
    const command = `stty cols 100; exec ${[NODE_BIN, CRAWLER_BIN, ...args].map(quote).join(' ')}`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: REPO_ROOT,
      env: { ...process.env, CRAWLER_STATE_DIR: stateDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { code, output: Buffer.concat(chunks).toString('utf8') };
  } finally {
    await rm(stateDir, { recursive: true, force: true });
  }
}

test('on a terminal: one line updated in place with fetched/known URLs and pages/s', async (t) => {
  const { code, output } = await runOnTerminal(crawlArgs('tty'));
  assert.equal(code, 0, output);
  const frames = output.split('\r\x1b[2K').slice(1);
  t.diagnostic(`${frames.length} frames, ${output.split('\n').length} lines`);
  // Updated several times, on one line: the progress itself adds one newline, when it ends.
  assert.ok(frames.length >= 3, output);
  const lines = output.split('\n');
  assert.ok(lines.length < 20, `${lines.length} lines:\n${output}`);
  const shown = frames.map((frame) => frame.split(/\r?\n/)[0]!);
  assert.ok(
    shown.every((line) => /^\d+\/\d+ URLs · [\d.]+ pages\/s/.test(line)),
    shown.join('\n'),
  );
  assert.ok(shown.every((line) => line.length <= 99));
  assert.match(shown.at(-1)!, new RegExp(`^${PAGES}/${PAGES} URLs`));
  assert.match(output, new RegExp(`finished in [\\d.]+ s\\r?\\n\\s+urls:\\s+${PAGES} `));
});

test('in a pipe: a few plain lines, never rewritten', async () => {
  const run = await runCli(crawlArgs('plain'), { timeoutMs: 180_000 });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(!run.stderr.includes('\r'));
  const progress = run.stderr.split('\n').filter((line) => line.startsWith('progress: '));
  // At most one line per 5 s (and one at the end) over the whole run.
  assert.ok(progress.length >= 1 && progress.length <= Math.ceil(run.ms / 5000) + 1, run.stderr);
  assert.match(progress.at(-1)!, new RegExp(`^progress: ${PAGES}/${PAGES} URLs · [\\d.]+ pages/s`));
});

test('--progress json: every stderr line is one JSON event; a long crawl is announced first', async () => {
  const run = await runCli([...crawlArgs('json'), '--progress', 'json', '--max-pages', '200'], {
    timeoutMs: 180_000,
  });
  assert.equal(run.code, 0, run.stderr);
  const events = run.stderr
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; text?: string; fetched?: number; known?: number });
  const messages = events.filter((e) => e.type === 'message');
  // 200 pages on one host, 400 ms apart: at least ~80 s, said before anything starts.
  assert.match(messages[0]?.text ?? '', /^note: 200 pages on 1 host .* at least ~80 s/);
  const progress = events.filter((e) => e.type === 'progress');
  assert.ok(progress.length >= 2, run.stderr);
  assert.deepEqual([progress.at(-1)?.fetched, progress.at(-1)?.known], [PAGES, PAGES]);
  // fetched never goes back.
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.fetched! >= progress[i - 1]!.fetched!);
});

test('--progress rejects an unknown mode, naming what it accepts', async () => {
  const run = await runCli(['crawl', `${origin}/`, '--progress', 'fancy'], { timeoutMs: 60_000 });
  assert.equal(run.code, 2);
  assert.match(run.stderr, /--progress expects one of auto, line, json, none, got "fancy"/);
});
