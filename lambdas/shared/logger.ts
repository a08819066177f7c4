/** Structured JSON logs, one line per event; never whole events or bodies. */
export type LogFields = Record<string, string | number | boolean | undefined>;

export interface Logger {
  /** Per-task detail (every task queued or dropped): off unless LOG_LEVEL=debug. */
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

/** Whether a logger at `level` writes lines of `wanted` severity. */
export function logsAt(level: string | undefined, wanted: keyof typeof LEVELS): boolean {
  return LEVELS[wanted] >= (LEVELS[(level ?? 'info') as keyof typeof LEVELS] ?? LEVELS.info);
}

export function createLogger(service: string, level = 'info'): Logger {
  const threshold = LEVELS[level as keyof typeof LEVELS] ?? LEVELS.info;
  const write = (name: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: LogFields) => {
    if (LEVELS[name] < threshold) return;
    // stderr: Lambda sends it to CloudWatch Logs as it does stdout, and `crawler crawl`, which runs
    // the handlers in its own process, keeps stdout for its summary.
    process.stderr.write(
      `${JSON.stringify({ level: name, time: new Date().toISOString(), service, message, ...fields })}\n`,
    );
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
