import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  blockedAddressReason,
  HOST_LOCAL_SUBNETS,
  hostIpLiteral,
  hostLocalAddressReason,
  literalHostRefusal,
} from '../../lambdas/core/urls/index.ts';
import { fetcherOptions } from '../../lambdas/fetch/fetch-deps.ts';

/** [address, a fragment the reason must contain] */
const BLOCKED_V4: Array<[string, string]> = [
  ['0.0.0.0', '0.0.0.0/8'],
  ['0.255.255.255', '0.0.0.0/8'],
  ['10.0.0.1', 'private (10.0.0.0/8)'],
  ['10.255.255.255', '10.0.0.0/8'],
  ['100.64.0.0', 'CGNAT (100.64.0.0/10)'],
  ['100.127.255.255', '100.64.0.0/10'],
  ['127.0.0.1', 'loopback (127.0.0.0/8)'],
  ['127.255.255.254', 'loopback (127.0.0.0/8)'],
  ['169.254.0.1', 'link-local (169.254.0.0/16)'],
  ['169.254.169.254', 'metadata'],
  ['172.16.0.1', 'private (172.16.0.0/12)'],
  ['172.31.255.255', '172.16.0.0/12'],
  ['192.0.0.8', '192.0.0.0/24'],
  ['192.0.2.1', 'documentation (192.0.2.0/24)'],
  ['192.88.99.1', '192.88.99.0/24'],
  ['192.168.1.1', 'private (192.168.0.0/16)'],
  ['198.18.0.1', 'benchmarking (198.18.0.0/15)'],
  ['198.19.255.255', '198.18.0.0/15'],
  ['198.51.100.7', 'documentation (198.51.100.0/24)'],
  ['203.0.113.9', 'documentation (203.0.113.0/24)'],
  ['224.0.0.1', 'multicast (224.0.0.0/4)'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved (240.0.0.0/4)'],
  ['255.255.255.254', 'reserved'],
  ['255.255.255.255', 'broadcast'],
];

const BLOCKED_V6: Array<[string, string]> = [
  ['::', 'unspecified (::/128)'],
  ['::1', 'loopback (::1/128)'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['0000:0000:0000:0000:0000:0000:0000:0001', 'loopback'],
  ['[::1]', 'loopback'],
  ['fe80::1', 'link-local (fe80::/10)'],
  ['fe80::1%eth0', 'link-local'],
  ['FEBF::1', 'link-local'],
  ['fc00::1', 'unique local (fc00::/7)'],
  ['fd12:3456:789a::1', 'unique local'],
  ['fd00:ec2::254', 'AWS metadata'],
  ['ff02::1', 'multicast (ff00::/8)'],
  ['ff05::1:3', 'multicast'],
  ['2001:db8::1', 'documentation (2001:db8::/32)'],
  ['3fff::1', 'documentation (3fff::/20)'],
  ['::ffff:127.0.0.1', 'IPv4-mapped'],
  ['::ffff:7f00:1', 'loopback (127.0.0.0/8)'],
  ['::FFFF:7F00:0001', 'loopback'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:10.1.2.3', 'private (10.0.0.0/8)'],
  ['::127.0.0.1', 'IPv4-compatible'],
  ['::7f00:1', 'loopback'],
  ['::8.8.8.8', 'IPv4-compatible'],
  ['64:ff9b::127.0.0.1', 'NAT64 (64:ff9b::/96) embedding 127.0.0.1'],
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['64:ff9b:1::1', 'local-use NAT64'],
  ['2002:7f00:1::', '6to4 (2002::/16) embedding 127.0.0.1'],
  ['2002:c0a8:101::1', 'private (192.168.0.0/16)'],
  ['2001::1', 'Teredo (2001::/32)'],
  ['100::1', 'discard-only (100::/64)'],
  ['fec0::1', 'site-local'],
  ['4000::1', 'not global unicast'],
];

const PUBLIC: string[] = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.216.34',
  '9.255.255.255', // just below 10/8
  '11.0.0.0', // just above 10/8
  '100.63.255.255', // just below 100.64/10
  '100.128.0.0', // just above 100.64/10
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '172.15.255.255', // just below 172.16/12
  '172.32.0.0', // just above 172.16/12
  '192.0.3.1',
  '192.167.255.255',
  '192.169.0.0',
  '198.17.255.255', // just below 198.18/15
  '198.20.0.0', // just above 198.18/15
  '223.255.255.255', // just below multicast
  '2606:4700::1111',
  '2606:4700:4700::1111',
  '2a00:1450:4001:80b::200e',
  '2001:4860:4860::8888',
  '2600:1f18::1',
  '::ffff:8.8.8.8', // IPv4-mapped, public inside
  '64:ff9b::808:808', // NAT64 of 8.8.8.8
  '2002:808:808::1', // 6to4 of 8.8.8.8
];

describe('blockedAddressReason', () => {
  for (const [ip, fragment] of [...BLOCKED_V4, ...BLOCKED_V6]) {
    it(`blocks ${ip}`, () => {
      const reason = blockedAddressReason(ip);
      assert.ok(reason !== undefined, `${ip} must be blocked`);
      assert.ok(
        reason.includes(fragment),
        `reason for ${ip} is "${reason}", expected it to mention "${fragment}"`,
      );
    });
  }

  for (const ip of PUBLIC) {
    it(`allows public ${ip}`, () => {
      assert.equal(blockedAddressReason(ip), undefined);
    });
  }

  it('blocks (fails closed on) anything that is not an IP address', () => {
    for (const text of [
      '',
      'example.com',
      '127.1',
      '0177.0.0.1',
      '1.2.3',
      '1.2.3.4.5',
      '256.0.0.1',
      '1::2::3',
      'gg::1',
    ]) {
      assert.match(blockedAddressReason(text) ?? '', /not an IP address/, JSON.stringify(text));
    }
  });
});

describe('hostIpLiteral', () => {
  it('returns undefined for names, which go through the (guarded) lookup', () => {
    for (const host of ['example.com', 'localhost', 'rebind.test', 'cafe', 'xn--bcher-kva.example']) {
      assert.equal(hostIpLiteral(host), undefined, host);
    }
  });

  it('returns dotted IPv4 and unbracketed IPv6', () => {
    assert.equal(hostIpLiteral('93.184.216.34'), '93.184.216.34');
    assert.equal(hostIpLiteral('[2606:4700::1111]'), '2606:4700::1111');
    assert.equal(hostIpLiteral('::1'), '::1');
  });

  it('normalizes numeric IPv4 forms that are not dotted decimal', () => {
    assert.equal(hostIpLiteral('2130706433'), '127.0.0.1');
    assert.equal(hostIpLiteral('0x7f.1'), '127.0.0.1');
    assert.equal(hostIpLiteral('0177.0.0.1'), '127.0.0.1');
  });

  // What the fetcher sees: `new URL(...).hostname`, then hostIpLiteral, then the guard.
  const urlForms: Array<[string, string]> = [
    ['http://127.0.0.1/', 'loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://0x7f000001/', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://0x7f.0.0.1/', 'loopback'],
    ['http://0177.0.0.1/', 'loopback'],
    ['http://017700000001/', 'loopback'],
    ['http://127.1/', 'loopback'],
    ['http://0/', '0.0.0.0/8'],
    ['http://0xa9fea9fe/', 'metadata'],
    ['http://2852039166/', 'metadata'],
    ['http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['http://0251.0376.0251.0376/', 'metadata'],
    ['http://10.0.0.1:8080/', 'private'],
    ['http://[::1]:8080/', 'loopback'],
    ['http://[0:0:0:0:0:0:0:1]/', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://[::ffff:7f00:1]/', 'loopback'],
    ['http://[::ffff:a9fe:a9fe]/', 'metadata'],
    ['http://[fe80::1]/', 'link-local'],
    ['http://[fd00:ec2::254]/', 'AWS metadata'],
    ['https://[64:ff9b::7f00:1]/', 'loopback'],
  ];
  for (const [href, fragment] of urlForms) {
    it(`${href} is an IP literal that is blocked`, () => {
      const ip = hostIpLiteral(new URL(href).hostname);
      assert.ok(ip !== undefined, `${href} must be recognized as an IP literal`);
      assert.match(
        blockedAddressReason(ip) ?? '',
        new RegExp(fragment.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')),
      );
    });
  }

  it('lets public IP-literal URLs through', () => {
    for (const href of [
      'http://8.8.8.8/',
      'http://134744072/',
      'http://[2606:4700::1111]/',
      'http://[::ffff:8.8.8.8]/',
    ]) {
      const ip = hostIpLiteral(new URL(href).hostname);
      assert.ok(ip !== undefined, href);
      assert.equal(blockedAddressReason(ip), undefined, href);
    }
  });
});

describe('hostLocalAddressReason: what --allow-private never opens inside Lambda', () => {
  it("refuses the machine's own addresses in every spelling: loopback, link-local, unspecified", () => {
    for (const [ip, fragment] of [
      ['127.0.0.1', 'loopback'],
      ['127.3.2.1', 'loopback'],
      ['0.0.0.0', 'unspecified'],
      ['169.254.0.1', 'link-local'],
      ['169.254.169.254', 'metadata'],
      ['::1', 'loopback'],
      ['[::1]', 'loopback'],
      ['::', 'unspecified'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:169.254.169.254', 'metadata'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local'],
      ['fd00:ec2::254', 'metadata'],
      ['localhost', 'not an IP address'],
    ] as const) {
      const reason = hostLocalAddressReason(ip);
      assert.ok(reason?.includes(fragment), `${ip}: ${reason}`);
    }
  });

  it('lets private and public ranges through (the operator allowed private ones)', () => {
    for (const ip of [
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '100.64.0.1',
      'fd12::1',
      '8.8.8.8',
      '2606:4700::1111',
    ]) {
      assert.equal(hostLocalAddressReason(ip), undefined, ip);
    }
  });

  it('has socket-level prefixes for the same addresses', () => {
    const networks = HOST_LOCAL_SUBNETS.map((subnet) => `${subnet.network}/${subnet.prefix}`);
    assert.deepEqual(
      networks.sort(),
      [
        '0.0.0.0/8',
        '127.0.0.0/8',
        '169.254.0.0/16',
        '::/128',
        '::1/128',
        'fd00:ec2::254/128',
        'fe80::/10',
      ].sort(),
    );
  });

  it("is switched on by Lambda's own AWS_LAMBDA_RUNTIME_API, and only by it", () => {
    assert.equal(fetcherOptions({ AWS_LAMBDA_RUNTIME_API: '127.0.0.1:9001' }).refuseHostLocal, true);
    assert.equal(fetcherOptions({}).refuseHostLocal, false);
  });
});

describe('literalHostRefusal: what is refused without a lookup (no --allow-private)', () => {
  it('refuses non-public IP literals in every spelling and metadata service names', () => {
    for (const host of [
      '127.0.0.1',
      '127.1',
      '2130706433',
      '0x7f.1',
      '0',
      '[::1]',
      '[::]',
      '[::ffff:169.254.169.254]',
      '169.254.169.254',
      'metadata.google.internal',
      'Metadata.Google.Internal.',
      'metadata.goog',
      'metadata',
      'instance-data',
      'instance-data.ec2.internal',
    ]) {
      const hostname = new URL(`http://${host}/`).hostname;
      assert.match(
        literalHostRefusal(hostname) ?? '',
        /^address not allowed: .+; crawl with --allow-private to permit$/,
        host,
      );
    }
  });

  it('leaves names to the guarded lookup, and lets public literals through', () => {
    for (const host of [
      'example.com',
      'localhost',
      'metadata.example.com',
      'not-metadata',
      '93.184.216.34',
      '[2606:4700::1111]',
    ])
      assert.equal(literalHostRefusal(new URL(`http://${host}/`).hostname), undefined, host);
  });
});
