/** `crawler results --format csv`: fixed columns, RFC 4180 quoting. */
import type { IndexLine } from '../lambdas/core/archive/index.ts';

/** The fixed columns of `crawler results --format csv`, in order. */
export const CSV_COLUMNS = [
  'url',
  'status',
  'outcome',
  'code',
  'reason',
  'mime',
  'bytes',
  'digest',
  'timestamp',
  'fetchedAt',
  'ms',
  'depth',
  'outlinks',
  'attempt',
  'truncated',
  'finalUrl',
  'location',
  'filename',
  'offset',
  'length',
  'urlkey',
  'key',
] as const satisfies ReadonlyArray<keyof IndexLine>;

/** One RFC 4180 field: quoted when it holds a comma, a double quote, CR or LF (quotes doubled). */
export function csvField(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A record with its CRLF (RFC 4180). */
export function csvRecord(fields: readonly unknown[]): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

export function csvHeader(): string {
  return csvRecord(CSV_COLUMNS);
}

export function csvRow(line: IndexLine): string {
  return csvRecord(CSV_COLUMNS.map((column) => line[column]));
}
