/**
 * Whether a fetched HTML page needs a browser to show its content (`--render auto`), judged from the
 * HTML alone, as StormCrawler's JsRenderingDetector does: an application shell (a framework's mount
 * point left empty, `__NEXT_DATA__` with no text), a `<noscript>` that asks for JavaScript, or scripts
 * with almost no text and no links. One pass of the main-content extractor's HTML reader over the page: linear in its size.
 */
import { type HtmlHandler, HtmlReader } from './main-content-html.ts';

export interface RenderVerdict {
  render: boolean;
  /** Why, for the result record and the logs. */
  reason: string;
}

/** Text (non-space characters) under which a page with scripts is a shell. */
export const THIN_TEXT_CHARS = 200;
/** Links at most on a thin page for it to be a shell (a link hub is not). */
const THIN_LINKS = 2;
/** A `<noscript>` asking for JavaScript decides only for a page with less text than this. */
const NOSCRIPT_TEXT_CHARS = 1000;
/** An app's mount point with less text than this is empty. */
const MOUNT_TEXT_CHARS = 20;
/** A page with an empty mount point and less text than this is a shell (a footer outside it is not content). */
const MOUNT_PAGE_TEXT_CHARS = 500;

/** Elements whose text is not page text. */
const NOT_TEXT = new Set(['script', 'style', 'noscript', 'template', 'svg', 'head', 'title']);
/** Mount points of the common frameworks: React (create-react-app, Vite), Vue, Next, Gatsby, Nuxt, Angular. */
const MOUNT_IDS = new Set(['root', 'app', '__next', '___gatsby', '__nuxt']);
const MOUNT_TAGS = new Set(['app-root']);
const ASKS_FOR_JS =
  /\b(enable|turn on|activate|requires?|need|needs|must have|without)\b[^.]{0,40}\bjavascript\b|\bjavascript\b[^.]{0,40}\b(required|disabled|must be enabled|is off|needed)\b/i;

interface Scan {
  text: number;
  links: number;
  scripts: number;
  nextData: boolean;
  noscriptAsks: boolean;
  /** Text inside each mount point found. */
  mounts: number[];
}

export function renderVerdict(html: string): RenderVerdict {
  const scan = scanPage(html);
  const emptyMount = scan.mounts.some((text) => text < MOUNT_TEXT_CHARS);
  if (emptyMount && scan.text < MOUNT_PAGE_TEXT_CHARS)
    return { render: true, reason: `an empty app mount point and ${scan.text} characters of text` };
  if (scan.nextData && scan.text < THIN_TEXT_CHARS)
    return { render: true, reason: `__NEXT_DATA__ and ${scan.text} characters of text` };
  if (scan.noscriptAsks && scan.text < NOSCRIPT_TEXT_CHARS)
    return { render: true, reason: `a <noscript> asking for JavaScript and ${scan.text} characters of text` };
  if (scan.scripts > 0 && scan.text < THIN_TEXT_CHARS && scan.links <= THIN_LINKS)
    return {
      render: true,
      reason: `${scan.scripts} script(s), ${scan.text} characters of text and ${scan.links} link(s)`,
    };
  return { render: false, reason: `${scan.text} characters of text, ${scan.links} link(s)` };
}

const WANTED = new Map([
  ['id', 0],
  ['href', 1],
  ['data-reactroot', 2],
]);

/** One pass of the main-content extractor's reader (main-content-html.ts): linear, whatever the nesting. */
function scanPage(html: string): Scan {
  const scan: Scan = { text: 0, links: 0, scripts: 0, nextData: false, noscriptAsks: false, mounts: [] };
  let hidden = 0;
  let noscript = 0;
  let noscriptText = '';
  let depth = 0;
  /** The open mount points: their depth, and the page's text when they opened (their text is the difference). */
  const openMounts: Array<{ depth: number; textAtOpen: number }> = [];
  const handler: HtmlHandler = {
    reading: true,
    onopentagname: () => true,
    onopentag(name, attrs) {
      depth++;
      if (NOT_TEXT.has(name)) hidden++;
      if (name === 'noscript') noscript++;
      const id = attrs.get(0);
      if (name === 'script') {
        scan.scripts++;
        if (id === '__NEXT_DATA__') scan.nextData = true;
      }
      if (name === 'a' && attrs.get(1) !== undefined) scan.links++;
      if ((id !== undefined && MOUNT_IDS.has(id)) || MOUNT_TAGS.has(name) || attrs.get(2) !== undefined)
        openMounts.push({ depth, textAtOpen: scan.text });
      handler.reading = hidden === 0 || noscript > 0;
    },
    onclosetag(name) {
      while (openMounts.length > 0 && (openMounts.at(-1)?.depth ?? 0) >= depth)
        scan.mounts.push(scan.text - (openMounts.pop()?.textAtOpen ?? 0));
      depth--;
      if (NOT_TEXT.has(name)) hidden--;
      if (name === 'noscript' && --noscript === 0) {
        if (ASKS_FOR_JS.test(noscriptText)) scan.noscriptAsks = true;
        noscriptText = '';
      }
      handler.reading = hidden === 0 || noscript > 0;
    },
    ontext(source, start, end) {
      if (noscript > 0 && noscriptText.length < 2000)
        noscriptText += source.slice(start, Math.min(end, start + 2000));
      if (hidden === 0) scan.text += countNonSpace(source, start, end);
    },
  };
  new HtmlReader(html, handler, WANTED).run();
  for (const mount of openMounts) scan.mounts.push(scan.text - mount.textAtOpen);
  return scan;
}

function countNonSpace(text: string, start: number, end: number): number {
  let count = 0;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (!(code === 32 || (code >= 9 && code <= 13) || code === 160)) count++;
  }
  return count;
}
