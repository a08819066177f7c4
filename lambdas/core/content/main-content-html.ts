/**
 * The element events of htmlparser2's `Parser` (HTML mode, entities decoded, names lower-cased),
 * driven straight from its `Tokenizer`, for the main-content extractor.
 *
 * Why not `Parser`: it slices every text (script and style bodies included), builds an attribute
 * object per element and keeps its open-element stack with `unshift`/`shift`. Here the handler says
 * per element whether it wants the attributes and whether text is read at all, only the attributes
 * named up front are kept, and the stack is a plain array used from its end.
 *
 * Reproduced from `Parser` 12 (the events must be the same, the output depends on them): tag names
 * lower-cased, `image` read as `img` outside svg/math; void elements (open then close, never on the
 * stack); end tags implied by a start tag (p by blocks, li by li, td/th/tr by cells and rows, option,
 * dd/dt, headings by headings, …); an end tag closes every element opened after its match and is
 * ignored without one, except `</p>` (an empty p) and `</br>` (a br); a <form> inside a form is
 * ignored; inside svg/math `<x/>` closes and script/style are not raw text; CDATA is text only there;
 * elements still open at the end are closed, innermost first.
 */
import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';

/**
 * The wanted attributes of the element being opened (valid only during `onopentag`), by their index
 * in the reader's list of wanted names.
 */
export class Attributes {
  private readonly values: (string | undefined)[];
  /** Ids set since the last clear (a count, not `length = 0`: that frees the array's storage). */
  private readonly present: number[] = [];
  private count = 0;

  constructor(size: number) {
    this.values = new Array<string | undefined>(size).fill(undefined);
  }

  /** The value of the first attribute of that name; '' for one without a value. */
  get(id: number): string | undefined {
    return this.values[id];
  }

  /** @internal */
  clear(): void {
    for (let i = 0; i < this.count; i++) this.values[this.present[i]!] = undefined;
    this.count = 0;
  }

  /** @internal Keeps the first of repeated attributes, as browsers and Parser do. */
  add(id: number, value: string): void {
    if (this.values[id] !== undefined) return;
    this.values[id] = value;
    this.present[this.count++] = id;
  }
}

export interface HtmlHandler {
  /** False while neither text nor attributes are read (inside skipped content): nothing is sliced. */
  reading: boolean;
  /**
   * A start tag's name is read (implied end tags were already closed); returns whether its
   * attributes are wanted by `onopentag`.
   */
  onopentagname(name: string): boolean;
  /** The element opens; `attrs` holds its wanted attributes (none when they were not wanted). */
  onopentag(name: string, attrs: Attributes): void;
  onclosetag(name: string): void;
  /**
   * Text `source.slice(start, end)`, entities decoded; one text may come in several pieces. Given as
   * a range so that the handler slices only what it keeps (whitespace between tags is most text).
   */
  ontext(source: string, start: number, end: number): void;
}

const CTX_HTML = 0;
const CTX_SVG = 1;
const CTX_MATH = 2;

const VOID_ELEMENTS = new Set([
  'area',
  'base',
  'basefont',
  'br',
  'col',
  'command',
  'embed',
  'frame',
  'hr',
  'img',
  'input',
  'isindex',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);

/** HTML integration points of svg/math: their content is HTML again. */
const INTEGRATION_ELEMENTS = new Set(['mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'desc', 'title']);

const FORM_TAGS = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const P_TAG = new Set(['p']);
const HEADING_TAGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p']);
const TABLE_SECTION_TAGS = new Set(['thead', 'tbody']);
const DDT_TAGS = new Set(['dd', 'dt']);
const RTP_TAGS = new Set(['rt', 'rp']);
/** Parser's openImpliesClose: a start tag closes these elements while they are the current one. */
const OPEN_IMPLIES_CLOSE = new Map<string, ReadonlySet<string>>([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['a', new Set(['a'])],
  ['li', new Set(['li'])],
  ['p', P_TAG],
  ['h1', HEADING_TAGS],
  ['h2', HEADING_TAGS],
  ['h3', HEADING_TAGS],
  ['h4', HEADING_TAGS],
  ['h5', HEADING_TAGS],
  ['h6', HEADING_TAGS],
  ['select', FORM_TAGS],
  ['input', FORM_TAGS],
  ['output', FORM_TAGS],
  ['button', FORM_TAGS],
  ['datalist', FORM_TAGS],
  ['textarea', FORM_TAGS],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', DDT_TAGS],
  ['dt', DDT_TAGS],
  ['address', P_TAG],
  ['article', P_TAG],
  ['aside', P_TAG],
  ['blockquote', P_TAG],
  ['details', P_TAG],
  ['div', P_TAG],
  ['dl', P_TAG],
  ['fieldset', P_TAG],
  ['figcaption', P_TAG],
  ['figure', P_TAG],
  ['footer', P_TAG],
  ['form', P_TAG],
  ['header', P_TAG],
  ['hr', P_TAG],
  ['main', P_TAG],
  ['nav', P_TAG],
  ['ol', P_TAG],
  ['pre', P_TAG],
  ['section', P_TAG],
  ['table', P_TAG],
  ['ul', P_TAG],
  ['rt', RTP_TAGS],
  ['rp', RTP_TAGS],
  ['tbody', TABLE_SECTION_TAGS],
  ['tfoot', TABLE_SECTION_TAGS],
]);

const NS_SVG = -1;
const NS_MATH = -2;
const NS_INTEGRATION = -3;
const NS_FOREIGN_OBJECT = -4;
const NS_NONE = -5;

/** One tag name in one document: its rules, looked up once, and how many are open. */
class Tag {
  readonly name: string;
  readonly isVoid: boolean;
  /** The elements a start tag of this name closes while they are the current one. */
  readonly implies: ReadonlySet<string> | undefined;
  /** What the element does to the namespace context (NS_*). */
  readonly ns: number;
  /** Open elements of this name: an end tag with none open is dismissed without scanning the stack. */
  open = 0;

  constructor(name: string) {
    this.name = name;
    this.isVoid = VOID_ELEMENTS.has(name);
    this.implies = OPEN_IMPLIES_CLOSE.get(name);
    this.ns =
      name === 'svg'
        ? NS_SVG
        : name === 'math'
          ? NS_MATH
          : INTEGRATION_ELEMENTS.has(name)
            ? NS_INTEGRATION
            : name === 'foreignobject'
              ? NS_FOREIGN_OBJECT
              : NS_NONE;
  }
}

export class HtmlReader implements TokenizerCallbacks {
  private readonly html: string;
  private readonly handler: HtmlHandler;
  private readonly wanted: ReadonlyMap<string, number>;
  private readonly tokenizer: Tokenizer;
  private readonly attrs: Attributes;
  private readonly tagsByName = new Map<string, Tag>();
  /** Open elements, innermost last, with the namespace context inside each. */
  private readonly stack: Tag[] = [];
  private readonly contexts: number[] = [];
  private depth = 0;
  /** The start tag being read (null when there is none, or it is ignored). */
  private current: Tag | null = null;
  private collecting = false;
  private attrId = 0;
  private attrValue = '';
  private attrOn = false;

  /** `wanted`: the (lower-case) attribute names the handler reads, each with its index for `get`. */
  constructor(html: string, handler: HtmlHandler, wanted: ReadonlyMap<string, number>) {
    this.html = html;
    this.handler = handler;
    this.wanted = wanted;
    this.attrs = new Attributes(wanted.size);
    this.tokenizer = new Tokenizer({ decodeEntities: true }, this);
  }

  /** Reads the whole input (stops early after `pause`). */
  run(): void {
    this.tokenizer.write(this.html);
    if (this.tokenizer.running) this.tokenizer.end();
  }

  /** Stops reading: no further events. */
  pause(): void {
    this.tokenizer.pause();
  }

  isInForeignContext(): boolean {
    return this.depth > 0 && this.contexts[this.depth - 1] !== CTX_HTML;
  }

  private tag(name: string): Tag {
    let tag = this.tagsByName.get(name);
    if (tag === undefined) {
      tag = new Tag(name);
      this.tagsByName.set(name, tag);
    }
    return tag;
  }

  private readTag(start: number, end: number): Tag {
    const name = this.html.slice(start, end).toLowerCase();
    return this.tag(name === 'image' && !this.isInForeignContext() ? 'img' : name);
  }

  private pop(): void {
    const tag = this.stack[--this.depth]!;
    tag.open--;
    this.handler.onclosetag(tag.name);
  }

  private openTag(tag: Tag): void {
    if (tag.name === 'form' && tag.open > 0) {
      // Parser ignores a form inside a form, attributes and all.
      this.current = null;
      this.collecting = false;
      return;
    }
    this.current = tag;
    const implied = tag.implies;
    if (implied !== undefined) {
      while (this.depth > 0 && implied.has(this.stack[this.depth - 1]!.name)) this.pop();
    }
    if (!tag.isVoid) {
      const outer = this.depth > 0 ? this.contexts[this.depth - 1]! : CTX_HTML;
      const ns = tag.ns;
      const context =
        ns === NS_SVG
          ? CTX_SVG
          : ns === NS_MATH
            ? CTX_MATH
            : ns === NS_INTEGRATION || (ns === NS_FOREIGN_OBJECT && outer === CTX_SVG)
              ? CTX_HTML
              : outer;
      this.stack[this.depth] = tag;
      this.contexts[this.depth] = context;
      this.depth++;
      tag.open++;
    }
    this.attrs.clear();
    this.attrOn = false;
    this.collecting = this.handler.onopentagname(tag.name);
  }

  private endOpenTag(): void {
    const tag = this.current;
    if (tag === null) return;
    this.handler.onopentag(tag.name, this.attrs);
    if (tag.isVoid) this.handler.onclosetag(tag.name);
    this.current = null;
    this.collecting = false;
  }

  // --- Tokenizer callbacks -----------------------------------------------------------------------

  ontext(start: number, end: number): void {
    if (this.handler.reading) this.handler.ontext(this.html, start, end);
  }

  ontextentity(codepoint: number): void {
    if (!this.handler.reading) return;
    const text = String.fromCodePoint(codepoint);
    this.handler.ontext(text, 0, text.length);
  }

  onopentagname(start: number, end: number): void {
    this.openTag(this.readTag(start, end));
  }

  onopentagend(): void {
    this.endOpenTag();
  }

  onselfclosingtag(): void {
    if (!this.isInForeignContext()) {
      this.endOpenTag();
      return;
    }
    // in svg/math `<x/>` is an empty element
    const tag = this.current;
    this.endOpenTag();
    if (tag !== null && this.depth > 0 && this.stack[this.depth - 1] === tag) this.pop();
  }

  onclosetag(start: number, end: number): void {
    const tag = this.readTag(start, end);
    if (!tag.isVoid) {
      if (tag.open > 0) {
        let pos = this.depth - 1;
        while (this.stack[pos] !== tag) pos--;
        while (this.depth > pos) this.pop();
      } else if (tag.name === 'p') {
        // `</p>` without a <p>: an empty paragraph
        this.openTag(tag);
        this.endOpenTag();
        if (this.depth > 0 && this.stack[this.depth - 1] === tag) this.pop();
      }
    } else if (tag.name === 'br') {
      // `</br>` is a <br>
      this.attrs.clear();
      this.handler.onopentagname('br');
      this.handler.onopentag('br', this.attrs);
      this.handler.onclosetag('br');
    }
  }

  onattribname(start: number, end: number): void {
    if (!this.collecting) return;
    const id = this.wanted.get(this.html.slice(start, end).toLowerCase());
    this.attrOn = id !== undefined;
    if (id !== undefined) {
      this.attrId = id;
      this.attrValue = '';
    }
  }

  onattribdata(start: number, end: number): void {
    if (this.attrOn) this.attrValue += this.html.slice(start, end);
  }

  onattribentity(codepoint: number): void {
    if (this.attrOn) this.attrValue += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    if (!this.attrOn) return;
    this.attrs.add(this.attrId, this.attrValue);
    this.attrOn = false;
    this.attrValue = '';
  }

  oncdata(start: number, end: number, offset: number): void {
    // HTML mode: CDATA is text only in svg/math, else a comment
    if (this.isInForeignContext() && this.handler.reading)
      this.handler.ontext(this.html, start, end - offset);
  }

  oncomment(): void {}

  ondeclaration(): void {}

  onprocessinginstruction(): void {}

  onend(): void {
    const handler = this.handler;
    for (let i = this.depth - 1; i >= 0; i--) handler.onclosetag(this.stack[i]!.name);
    this.depth = 0;
  }
}
