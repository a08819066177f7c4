/**
 * The HTML Standard's encoding sniffing (encoding-sniff.ts): BOM, Content-Type charset, the `<meta>`
 * prescan of the first 1024 bytes (byte-level, comments and other tags skipped), the XML declaration,
 * UTF-8 detection and the windows-1252 default.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bomEncoding,
  contentTypeCharset,
  DEFAULT_ENCODING,
  decodeAs,
  encodingFromMetaContent,
  getEncoding,
  looksLikeUtf8,
  PRESCAN_BYTES,
  prescanEncoding,
  sniffHtmlEncoding,
  xmlDeclarationEncoding,
} from '../../lambdas/core/base/index.ts';
import { encodeLegacy } from '../fixtures/hostile-server.ts';

const bytes = (text: string): Uint8Array => Buffer.from(text, 'latin1');
const prescan = (text: string): string | undefined => prescanEncoding(bytes(text))?.encoding;

describe('getEncoding (the Encoding Standard labels)', () => {
  it('maps labels to canonical names, trimmed and case-insensitive', () => {
    const cases: Array<[string, string]> = [
      ['utf-8', 'utf-8'],
      ['UTF8', 'utf-8'],
      ['unicode-1-1-utf-8', 'utf-8'],
      [' gbk ', 'gbk'],
      ['GB2312', 'gbk'],
      ['x-gbk', 'gbk'],
      ['gb18030', 'gb18030'],
      ['Shift_JIS', 'shift_jis'],
      ['sjis', 'shift_jis'],
      ['ms_kanji', 'shift_jis'],
      ['windows-1251', 'windows-1251'],
      ['cp1251', 'windows-1251'],
      ['iso-8859-1', 'windows-1252'],
      ['latin1', 'windows-1252'],
      ['us-ascii', 'windows-1252'],
      ['utf-16', 'utf-16le'],
      ['koi8-r', 'koi8-r'],
      ['euc-kr', 'euc-kr'],
      ['x-user-defined', 'x-user-defined'],
    ];
    for (const [label, name] of cases) assert.equal(getEncoding(label), name, label);
  });

  it('maps the ISO-2022-KR family to the replacement encoding', () => {
    for (const label of [
      'iso-2022-kr',
      'csiso2022kr',
      'hz-gb-2312',
      'iso-2022-cn',
      'ISO-2022-CN-EXT',
      'replacement',
    ]) {
      assert.equal(getEncoding(label), 'replacement', label);
    }
  });

  it('knows no encoding for unknown labels', () => {
    for (const label of ['', '   ', 'bogus', 'utf-7', 'utf-32', '"gbk"', 'gbk;']) {
      assert.equal(getEncoding(label), undefined, JSON.stringify(label));
    }
  });
});

describe('bomEncoding', () => {
  it('reads the UTF-8 and UTF-16 byte order marks only', () => {
    assert.deepEqual(bomEncoding(Uint8Array.of(0xef, 0xbb, 0xbf, 0x3c)), { encoding: 'utf-8', length: 3 });
    assert.deepEqual(bomEncoding(Uint8Array.of(0xfe, 0xff, 0, 0x3c)), { encoding: 'utf-16be', length: 2 });
    assert.deepEqual(bomEncoding(Uint8Array.of(0xff, 0xfe, 0x3c, 0)), { encoding: 'utf-16le', length: 2 });
    assert.equal(bomEncoding(Uint8Array.of(0xef, 0xbb)), undefined);
    assert.equal(bomEncoding(bytes('<html>')), undefined);
    assert.equal(bomEncoding(new Uint8Array()), undefined);
  });
});

describe('contentTypeCharset', () => {
  it('finds the charset parameter, quoted or not, wherever it is', () => {
    assert.equal(contentTypeCharset('text/html; charset=GBK'), 'GBK');
    assert.equal(contentTypeCharset('text/html;charset=gbk'), 'gbk');
    assert.equal(contentTypeCharset('text/html; CHARSET=Shift_JIS'), 'Shift_JIS');
    assert.equal(contentTypeCharset('text/html; charset="windows-1251"'), 'windows-1251');
    assert.equal(contentTypeCharset('text/html; charset="a\\"b"'), 'a"b');
    assert.equal(contentTypeCharset('text/html; q="x;charset=koi8-r"; charset=gbk'), 'gbk');
    assert.equal(contentTypeCharset('text/html; foo=bar; charset=utf-8 ; x=y'), 'utf-8');
    assert.equal(contentTypeCharset('text/html; charset=gbk; charset=koi8-r'), 'gbk');
  });

  it('is undefined without one', () => {
    for (const value of [
      undefined,
      '',
      'text/html',
      'text/html;',
      'text/html; charset',
      'text/html; charset=',
    ]) {
      assert.equal(contentTypeCharset(value), undefined, JSON.stringify(value));
    }
  });
});

describe('encodingFromMetaContent', () => {
  it('follows the extraction algorithm of the HTML Standard', () => {
    assert.equal(encodingFromMetaContent('text/html; charset=gbk'), 'gbk');
    assert.equal(encodingFromMetaContent('text/html;charset = "shift_jis" '), 'shift_jis');
    assert.equal(encodingFromMetaContent("charset='windows-1251'"), 'windows-1251');
    assert.equal(encodingFromMetaContent('text/html; charset=koi8-r;x=1'), 'koi8-r');
    assert.equal(encodingFromMetaContent('charsetcharset=gbk'), 'gbk');
    assert.equal(encodingFromMetaContent('text/html; charset'), undefined);
    assert.equal(encodingFromMetaContent('text/html; charset="gbk'), undefined);
    assert.equal(encodingFromMetaContent('text/html; charset=bogus'), undefined);
    assert.equal(encodingFromMetaContent('text/html'), undefined);
  });
});

describe('prescanEncoding', () => {
  it('reads <meta charset> in its spellings', () => {
    assert.equal(prescan('<!doctype html><html><head><meta charset="gbk"><title>t</title>'), 'gbk');
    assert.equal(prescan("<meta charset='Shift_JIS'>"), 'shift_jis');
    assert.equal(prescan('<meta charset=windows-1251>'), 'windows-1251');
    assert.equal(prescan('<META CHARSET=GBK>'), 'gbk');
    assert.equal(prescan('<meta/charset=gbk>'), 'gbk');
    assert.equal(prescan('<meta\n\tcharset = "gbk" >'), 'gbk');
    assert.equal(prescan('<meta name="viewport" content="width=device-width" charset="koi8-r">'), 'koi8-r');
  });

  it('reads http-equiv content-type only with the pragma, in any attribute order', () => {
    assert.equal(prescan('<meta http-equiv="Content-Type" content="text/html; charset=gbk">'), 'gbk');
    assert.equal(
      prescan('<meta content="text/html; charset=shift_jis" http-equiv=content-type>'),
      'shift_jis',
    );
    assert.equal(prescan('<meta content="text/html; charset=gbk">'), undefined);
    assert.equal(prescan('<meta http-equiv="refresh" content="0; charset=gbk">'), undefined);
  });

  it('lets charset win over content, and the first of a repeated attribute count', () => {
    assert.equal(
      prescan('<meta content="text/html; charset=gbk" charset="koi8-r" http-equiv="content-type">'),
      'koi8-r',
    );
    assert.equal(prescan('<meta charset="gbk" charset="koi8-r">'), 'gbk');
    assert.equal(prescan('<meta http-equiv="x" http-equiv="content-type" content="charset=gbk">'), undefined);
  });

  it('skips a meta whose charset is no encoding and takes a later one', () => {
    assert.equal(prescan('<meta charset="bogus"><meta charset="gbk">'), 'gbk');
  });

  it('maps UTF-16 to UTF-8 and x-user-defined to windows-1252 (a meta cannot be UTF-16)', () => {
    assert.equal(prescan('<meta charset="utf-16">'), 'utf-8');
    assert.equal(prescan('<meta charset="UTF-16BE">'), 'utf-8');
    assert.equal(prescan('<meta charset="x-user-defined">'), 'windows-1252');
  });

  it('ignores metas in comments, in other tags and in attribute values', () => {
    assert.equal(prescan('<!-- <meta charset="gbk"> --><p>'), undefined);
    assert.equal(prescan('<!-- x --><meta charset="gbk">'), 'gbk');
    assert.equal(prescan('<!--><meta charset="gbk">'), 'gbk', '<!--> is a whole comment');
    assert.equal(prescan('<!---><meta charset="gbk">'), 'gbk', '<!---> too');
    assert.equal(prescan('<!-- -><meta charset="gbk">'), undefined, 'an unclosed comment runs to the end');
    assert.equal(prescan('<a title="<meta charset=gbk>"><meta charset="koi8-r">'), 'koi8-r');
    assert.equal(prescan('<div data-x=\'>\'><meta charset="gbk">'), 'gbk');
    assert.equal(prescan('<!DOCTYPE html <meta charset="gbk">><meta charset=koi8-r>'), 'koi8-r');
    assert.equal(prescan('<?php <meta charset="gbk"> ?><meta charset=koi8-r>'), 'koi8-r');
    assert.equal(prescan('</meta charset="gbk"><meta charset=koi8-r>'), 'koi8-r');
    assert.equal(prescan('<metacharset="gbk">'), undefined);
  });

  it('looks at the first 1024 bytes only', () => {
    const filler = `<!-- ${'x'.repeat(PRESCAN_BYTES)} -->`;
    assert.equal(prescan(`${filler}<meta charset="gbk">`), undefined);
    const justInside = `<p>${' '.repeat(PRESCAN_BYTES - 3 - '<meta charset=gbk>'.length)}<meta charset=gbk>`;
    assert.equal(justInside.length, PRESCAN_BYTES);
    assert.equal(prescan(justInside), 'gbk');
    assert.equal(prescan(`${justInside.slice(0, -1)}`), undefined, 'a meta cut at the limit does not count');
    assert.equal(prescanEncoding(bytes(`${filler}<meta charset="gbk">`), 4096)?.encoding, 'gbk');
  });

  it('falls back to an XML declaration, and reads the UTF-16 XML patterns', () => {
    assert.deepEqual(prescanEncoding(bytes('<?xml version="1.0" encoding="windows-1251"?><html>')), {
      encoding: 'windows-1251',
      source: 'xml-declaration',
    });
    assert.equal(prescan('<?xml version="1.0" encoding="gbk"?><meta charset="koi8-r">'), 'koi8-r');
    assert.deepEqual(prescanEncoding(Buffer.from('<?xml version="1.0"?>', 'utf16le')), {
      encoding: 'utf-16le',
      source: 'xml-declaration',
    });
    assert.equal(
      prescanEncoding(Buffer.from('<?xml version="1.0"?>', 'utf16le').swap16())?.encoding,
      'utf-16be',
    );
  });

  it('is undefined for pages that declare nothing, and never throws on garbage', () => {
    assert.equal(prescan('<html><head><title>x</title></head><body>hi</body></html>'), undefined);
    assert.equal(prescan(''), undefined);
    for (const text of [
      '<',
      '<meta',
      '<meta ',
      '<meta charset',
      '<meta charset="gbk',
      '<a href="x',
      '<!--',
      '<!x',
    ]) {
      assert.equal(prescan(text), undefined, text);
    }
    const random = Buffer.alloc(4096);
    for (let i = 0; i < random.length; i++) random[i] = (i * 7919 + 13) % 256;
    assert.doesNotThrow(() => prescanEncoding(random));
  });
});

describe('xmlDeclarationEncoding', () => {
  it('reads the encoding pseudo-attribute of a leading declaration', () => {
    assert.equal(xmlDeclarationEncoding(bytes("<?xml version='1.0' encoding='Shift_JIS'?>")), 'shift_jis');
    assert.equal(xmlDeclarationEncoding(bytes('<?xml encoding = "utf-16"?>')), 'utf-8');
    assert.equal(xmlDeclarationEncoding(bytes('<?xml encoding=" gbk"?>')), undefined);
    assert.equal(xmlDeclarationEncoding(bytes('<?xml?> encoding="gbk"')), undefined);
    assert.equal(xmlDeclarationEncoding(bytes(' <?xml encoding="gbk"?>')), undefined);
    assert.equal(xmlDeclarationEncoding(bytes('<?xml encoding=gbk?>')), undefined);
  });
});

describe('sniffHtmlEncoding', () => {
  const gbkPage = Buffer.concat([bytes('<meta charset="gbk"><p>'), encodeLegacy('中文', 'gbk')]);

  it('takes the BOM first, over the header and the meta', () => {
    const page = Buffer.concat([Uint8Array.of(0xef, 0xbb, 0xbf), gbkPage]);
    assert.deepEqual(sniffHtmlEncoding(page, 'text/html; charset=koi8-r'), {
      encoding: 'utf-8',
      source: 'bom',
    });
    const utf16 = Buffer.concat([Uint8Array.of(0xff, 0xfe), Buffer.from('<p>hi', 'utf16le')]);
    assert.deepEqual(sniffHtmlEncoding(utf16, 'text/html; charset=utf-8'), {
      encoding: 'utf-16le',
      source: 'bom',
    });
  });

  it('takes the Content-Type charset over the meta, and ignores an unknown one', () => {
    assert.deepEqual(sniffHtmlEncoding(gbkPage, 'text/html; charset=Shift_JIS'), {
      encoding: 'shift_jis',
      source: 'content-type',
    });
    assert.deepEqual(sniffHtmlEncoding(gbkPage, 'text/html; charset=bogus'), {
      encoding: 'gbk',
      source: 'meta',
    });
    assert.deepEqual(sniffHtmlEncoding(gbkPage, 'text/html'), { encoding: 'gbk', source: 'meta' });
    assert.deepEqual(sniffHtmlEncoding(gbkPage, undefined), { encoding: 'gbk', source: 'meta' });
  });

  it('detects undeclared UTF-8, else falls back to windows-1252', () => {
    assert.deepEqual(sniffHtmlEncoding(Buffer.from('<p>café 中文'), 'text/html'), {
      encoding: 'utf-8',
      source: 'detected',
    });
    assert.deepEqual(sniffHtmlEncoding(bytes('<p>caf\xe9'), 'text/html'), {
      encoding: DEFAULT_ENCODING,
      source: 'default',
    });
    assert.deepEqual(sniffHtmlEncoding(bytes('<p>plain ascii'), undefined), {
      encoding: 'windows-1252',
      source: 'default',
    });
    assert.deepEqual(sniffHtmlEncoding(Buffer.from('<p>café'), 'text/html', { detectUtf8: false }), {
      encoding: 'windows-1252',
      source: 'default',
    });
  });
});

describe('looksLikeUtf8', () => {
  it('wants valid UTF-8 with a complete non-ASCII character; a cut last character is allowed', () => {
    assert.equal(looksLikeUtf8(Buffer.from('中文')), true);
    assert.equal(looksLikeUtf8(Buffer.from('中文').subarray(0, 5)), true);
    assert.equal(looksLikeUtf8(Buffer.from('中').subarray(0, 2)), false);
    assert.equal(looksLikeUtf8(bytes('ascii only')), false);
    assert.equal(looksLikeUtf8(encodeLegacy('中文', 'gbk')), false);
    assert.equal(looksLikeUtf8(encodeLegacy('Привет', 'windows-1251')), false);
    assert.equal(looksLikeUtf8(encodeLegacy('日本語', 'shift_jis')), false);
  });
});

describe('decodeAs', () => {
  it('decodes legacy encodings and drops a matching BOM', () => {
    assert.equal(decodeAs(Uint8Array.of(0xd6, 0xd0, 0xce, 0xc4), 'gbk'), '中文');
    assert.equal(decodeAs(Uint8Array.of(0x93, 0xfa, 0x96, 0x7b), 'shift_jis'), '日本');
    assert.equal(decodeAs(Uint8Array.of(0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2), 'windows-1251'), 'Привет');
    assert.equal(decodeAs(Buffer.from('\uFEFFhi'), 'utf-8'), 'hi');
    assert.equal(decodeAs(Uint8Array.of(0x80), 'windows-1252'), '€');
  });

  it('turns the replacement encoding into one U+FFFD (no markup gets through)', () => {
    assert.equal(decodeAs(bytes('<a href="/x">'), 'replacement'), '\uFFFD');
    assert.equal(decodeAs(new Uint8Array(), 'replacement'), '');
  });
});
