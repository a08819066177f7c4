/**
 * The crawl task message. A plain URL string is accepted too (it joins the default crawl),
 * so `aws sqs send-message --message-body https://example.com/` works.
 */
import { z } from 'zod';
import { CRAWL_ID_PATTERN, isCrawlId } from '../../shared/contracts.ts';
import { DEFAULT_CRAWL_ID } from './crawl-config.ts';

export const TaskSchema = z.object({
  v: z.literal(1),
  crawlId: z.string().regex(CRAWL_ID_PATTERN),
  url: z.string().min(1),
  depth: z.number().int().min(0),
  parent: z.string().optional(),
  attempt: z.number().int().min(0).optional(),
  /** Redirect hops that led here; bounded by the crawl's maxRedirects. */
  redirects: z.number().int().min(0).optional(),
  /**
   * A re-crawl of that finished crawl (or the latest): a crawl not stored yet starts with its options
   * (lambdas/submission/task-recrawl.ts); for a stored crawl the field is spent.
   */
  since: z.union([z.literal('latest'), z.string().regex(CRAWL_ID_PATTERN)]).optional(),
});

export type Task = z.infer<typeof TaskSchema>;

/** A message of the task queue as the fetch function receives it (a visit or a task). */
export interface TaskMessage {
  id: string;
  body: string;
  /** SQS ApproximateReceiveCount: 1 on first delivery. */
  receiveCount: number;
}

/**
 * A host visit (docs/design/host-visits.md): the task queue's own message. Whoever holds it owns the
 * host for the visit. Task messages (bare URLs, JSON tasks) are still accepted: they are admitted
 * to the frontier and wake their host.
 */
export const VisitMessageSchema = z.object({
  v: z.literal(1),
  kind: z.literal('visit'),
  crawlId: z.string().regex(CRAWL_ID_PATTERN),
  host: z.string().min(1).max(300),
  /** Given by whoever sent it (a wake, a hand-back): the host accepts only the message it expects. */
  ticket: z.string().max(64).optional(),
});

export type VisitMessage = z.infer<typeof VisitMessageSchema>;

/** A visit message, or undefined when the body is something else (a task, or not valid at all). */
export function parseVisitMessage(body: string): VisitMessage | undefined {
  return parseMessageOfKind(body, 'visit', VisitMessageSchema);
}

/**
 * A task-queue message of its own `kind` (a visit, a schedule's firing), or undefined when the body
 * is anything else: most bodies are ruled out by a substring test, without parsing them.
 */
export function parseMessageOfKind<T>(body: string, kind: string, schema: z.ZodType<T>): T | undefined {
  if (!body.includes(`"${kind}"`)) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export type TaskParse =
  | { ok: true; task: Task }
  | { ok: false; code: 'invalid-task'; reason: string; crawlId: string; url: string | undefined };

const MAX_REASON_INPUT = 200;

function clip(text: string): string {
  return text.length > MAX_REASON_INPUT ? `${text.slice(0, MAX_REASON_INPUT)}… (${text.length} chars)` : text;
}

export function parseTaskMessage(body: string): TaskParse {
  const trimmed = body.trim();
  if (!trimmed.startsWith('{')) {
    if (/^[a-z][a-z0-9+.-]*:\S*$/i.test(trimmed)) {
      return { ok: true, task: { v: 1, crawlId: DEFAULT_CRAWL_ID, url: trimmed, depth: 0 } };
    }
    if (looksLikeHtml(trimmed)) return invalid(HTML_BODY_REASON);
    return invalid(`message body is neither a task JSON object nor a URL: ${JSON.stringify(clip(trimmed))}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(trimmed);
  } catch (error) {
    return invalid(`message body is not valid JSON (${(error as Error).message})`);
  }
  const parsed = TaskSchema.safeParse(json);
  if (parsed.success) return { ok: true, task: parsed.data };
  const record = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
  const crawlId =
    typeof record.crawlId === 'string' && isCrawlId(record.crawlId) ? record.crawlId : DEFAULT_CRAWL_ID;
  const url = typeof record.url === 'string' ? clip(record.url) : undefined;
  const problems = parsed.error.issues
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
  return invalid(
    `task fields are invalid (${problems}); expected {v:1, crawlId, url, depth, parent?, attempt?, since?}`,
    crawlId,
    url,
  );
}

/**
 * AWS CLI v1 downloads any parameter value that looks like a URL, so `aws sqs send-message
 * --message-body https://example.com/` sends the page's HTML instead of its URL.
 */
export const HTML_BODY_REASON =
  'message body is an HTML document, not a URL: AWS CLI v1 fetches a --message-body that looks like ' +
  'a URL and sends the page instead; send a JSON task ({"v":1,"crawlId":"default","url":"https://...",' +
  '"depth":0}) or set cli_follow_urlparam = false in ~/.aws/config (docs/deploy.md)';

function looksLikeHtml(text: string): boolean {
  return /^(?:\ufeff)?\s*<(?:!doctype\s+html|html[\s>]|head[\s>]|!--)/i.test(text.slice(0, 512));
}

function invalid(reason: string, crawlId = DEFAULT_CRAWL_ID, url?: string): TaskParse {
  return { ok: false, code: 'invalid-task', reason, crawlId, url };
}
