/**
 * The benchmark's child processes and small statistics, shared by bench/run.ts and
 * bench/realistic.ts: children pinned to one CPU (taskset, when the machine has two), run to the end
 * with a timeout, or kept alive with an IPC channel (the site servers, the memory benchmark's AWS).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
export const NODE = process.execPath;
/** Preload that writes the child's peak RSS and CPU time to $BENCH_RSS_FILE on exit (bench/rss-report.ts). */
export const RSS_PRELOAD = pathToFileURL(join(ROOT, 'bench', 'rss-report.ts')).href;

export const canPin = availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/** argv pinned to one CPU (when the machine has two and taskset exists). */
export function pinned(cpu: number, argv: string[]): [string, string[]] {
  return canPin ? ['taskset', ['-c', String(cpu), ...argv]] : [argv[0] as string, argv.slice(1)];
}

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
  wallSeconds: number;
}

/** Runs argv pinned to `cpu` to its end (SIGKILL after `timeoutMs`), collecting its output. */
export function run(
  argv: string[],
  options: { cpu: number; env?: Record<string, string>; timeoutMs: number },
): Promise<Finished> {
  const [command, args] = pinned(options.cpu, argv);
  const started = performance.now();
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
  return new Promise<Finished>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, wallSeconds: (performance.now() - started) / 1000 });
    });
  });
}

export interface IpcChild<T> {
  child: ChildProcess;
  /** The next message the child sends. */
  next(): Promise<T>;
  /** Sends `message` and resolves with the next message the child sends. */
  request(message: object): Promise<T>;
  /** Asks the child to exit (`{cmd: 'exit'}`), killing it 5 s later if it has not. */
  stop(): void;
}

/** A child with an IPC channel, pinned to `cpu`. */
export function ipcChild<T>(argv: string[], cpu: number): IpcChild<T> {
  const [command, args] = pinned(cpu, argv);
  const child: ChildProcess = spawn(command, args, {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = () =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (message: unknown) => {
        child.off('exit', onExit);
        resolve(message as T);
      };
      const onExit = (code: number | null) => {
        child.off('message', onMessage);
        reject(new Error(`${argv.join(' ')} exited with ${code}`));
      };
      child.once('message', onMessage);
      child.once('exit', onExit);
    });
  return {
    child,
    next,
    request(message: object): Promise<T> {
      const answer = next();
      child.send(message);
      return answer;
    },
    stop() {
      if (child.connected) child.send({ cmd: 'exit' });
      setTimeout(() => child.kill(), 5_000).unref();
    },
  };
}

// --- statistics -------------------------------------------------------------------------------

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export const mb = (bytes: number) => bytes / 2 ** 20;
export const fixed = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
