// The local AWS's request guard: what a web page in a browser on this machine can send is refused,
// what the AWS SDKs and CLIs send is allowed.
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import { type GuardOptions, judgeRequest } from '../../local/request-guard.ts';

const PORT = 4566;
const SIG = 'a'.repeat(64);
const AUTH = `AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/sqs/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=${SIG}`;
const PRESIGNED = `/bucket/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=test%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=${SIG}`;
const FORM = 'application/x-www-form-urlencoded; charset=utf-8';

function judge(
  method: string,
  headers: IncomingHttpHeaders,
  url = '/',
  options: GuardOptions = { port: PORT },
): string | true {
  const verdict = judgeRequest({ method, url, headers: { host: `127.0.0.1:${PORT}`, ...headers } }, options);
  return verdict.allowed ? true : verdict.reason;
}

describe('judgeRequest: allowed', () => {
  it('SigV4-signed requests of the SDKs and CLIs, in every protocol', () => {
    // SQS query protocol (older CLIs): a form POST, but with Authorization no page can set cross-site.
    assert.equal(judge('POST', { 'content-type': FORM, authorization: AUTH }), true);
    // SQS / DynamoDB JSON.
    const json = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage' };
    assert.equal(judge('POST', { ...json, authorization: AUTH }), true);
    // S3 REST, SDK v3 style (no space after the commas).
    assert.equal(judge('GET', { authorization: AUTH.replaceAll(', ', ',') }, '/bucket?list-type=2'), true);
    assert.equal(judge('PUT', { authorization: AUTH }, '/bucket/key'), true);
  });

  it('every loopback name for the bound port, any case', () => {
    for (const host of ['127.0.0.1:4566', 'localhost:4566', 'LOCALHOST:4566', '[::1]:4566']) {
      assert.equal(judge('GET', { host, authorization: AUTH }), true, host);
    }
  });

  it('an Origin that is this endpoint itself', () => {
    for (const origin of ['http://127.0.0.1:4566', 'http://localhost:4566', 'http://[::1]:4566']) {
      assert.equal(judge('POST', { origin, authorization: AUTH, 'content-type': FORM }), true, origin);
    }
  });

  it('S3 presigned URLs (SigV4 query) for reads and uploads', () => {
    assert.equal(judge('GET', {}, PRESIGNED), true);
    assert.equal(judge('HEAD', {}, PRESIGNED), true);
    assert.equal(judge('PUT', { 'content-type': 'application/octet-stream' }, PRESIGNED), true);
    // CompleteMultipartUpload: a POST, but with a body type that needs a preflight.
    assert.equal(judge('POST', { 'content-type': 'application/xml' }, PRESIGNED), true);
  });

  it('any port in Host behind our own proxies (`port: any`), still only loopback names', () => {
    assert.equal(judge('GET', { host: '127.0.0.1:9', authorization: AUTH }, '/', { port: 'any' }), true);
    assert.equal(judge('GET', { host: 'localhost', authorization: AUTH }, '/', { port: 'any' }), true);
    assert.match(
      String(judge('GET', { host: 'evil.example:9', authorization: AUTH }, '/', { port: 'any' })),
      /^Host "evil\.example:9" is not this endpoint \(127\.0\.0\.1, localhost or \[::1\]\)$/,
    );
  });
});

describe('judgeRequest: refused', () => {
  it('a Host that is not this loopback endpoint: DNS rebinding, virtual-hosted S3, another port', () => {
    const cases: Array<string | undefined> = [
      'pages.rebind.attacker.example:4566',
      'attacker.example',
      '127.0.0.1.nip.io:4566',
      'bucket.localhost:4566', // nothing here uses virtual-hosted S3: the SDK and CLI use path style
      'bucket.127.0.0.1:4566',
      '192.168.1.10:4566',
      '0.0.0.0:4566',
      '127.0.0.1:4567',
      '127.0.0.1', // port 80
      'localhost.:4566',
      '',
      undefined,
    ];
    for (const host of cases) {
      const reason = judge('GET', { host, authorization: AUTH });
      assert.equal(
        reason,
        `Host ${JSON.stringify(host ?? '')} is not this endpoint (127.0.0.1, localhost or [::1] on port 4566)`,
        String(host),
      );
    }
  });

  it('a foreign Origin, even on a signed request', () => {
    for (const origin of [
      'http://evil.example',
      'null',
      'http://127.0.0.1:8080',
      'https://127.0.0.1:4566',
      'http://localhost.evil.example:4566',
    ]) {
      assert.equal(
        judge('POST', { origin, 'content-type': FORM, authorization: AUTH }),
        `Origin ${JSON.stringify(origin)} is not this endpoint: web pages may not call it`,
        origin,
      );
    }
  });

  it('a request a browser marks as sent by another site', () => {
    for (const site of ['cross-site', 'same-site']) {
      assert.match(String(judge('GET', { 'sec-fetch-site': site }, PRESIGNED)), /another site/);
    }
    assert.equal(judge('GET', { 'sec-fetch-site': 'none' }, PRESIGNED), true, 'a link opened by the user');
  });

  it('every CORS preflight', () => {
    assert.equal(
      judge('OPTIONS', {
        origin: 'http://evil.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization',
      }),
      'CORS preflight refused: web pages may not call this endpoint',
    );
    assert.equal(
      judge('OPTIONS', { authorization: AUTH }),
      'CORS preflight refused: web pages may not call this endpoint',
    );
  });

  it('simple requests: no signature, as a form, an image or a no-cors fetch sends them', () => {
    const unsigned = 'request not signed: an AWS SigV4 Authorization header or presigned URL is required';
    assert.equal(judge('POST', { 'content-type': FORM }, '/?Action=SendMessage'), unsigned);
    assert.equal(judge('POST', { 'content-type': 'text/plain' }), unsigned);
    assert.equal(judge('POST', { 'content-type': 'multipart/form-data; boundary=x' }), unsigned);
    assert.equal(judge('GET', {}, '/pages?list-type=2'), unsigned);
    assert.equal(judge('HEAD', {}, '/pages/key'), unsigned);
  });

  it('a presigned POST with a form body (or none): any page could submit it', () => {
    for (const type of [undefined, FORM, 'text/plain']) {
      assert.equal(
        judge('POST', type === undefined ? {} : { 'content-type': type }, PRESIGNED),
        'presigned POST with a form body refused: any web page could send it',
      );
    }
  });

  it('an Authorization that is not SigV4-shaped, or half a presigned query', () => {
    const notSigV4 =
      'Authorization is not AWS SigV4 (AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...)';
    for (const authorization of [
      'Basic dXNlcjpwYXNz', // what a browser's own HTTP auth would send
      'AWS test:c2lnbmF0dXJl', // SigV2
      `AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=xyz`,
      `AWS4-HMAC-SHA256 Credential=test/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=${SIG}`,
      `AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/sqs/aws4_request, Signature=${SIG}`,
    ]) {
      assert.equal(judge('GET', { authorization }), notSigV4, authorization);
    }
    const unsigned = /^request not signed/;
    assert.match(String(judge('GET', {}, PRESIGNED.replace(/&X-Amz-Signature=[^&]*/, ''))), unsigned);
    assert.match(
      String(judge('GET', {}, PRESIGNED.replace('AWS4-HMAC-SHA256', 'AWS4-HMAC-SHA512'))),
      unsigned,
    );
    assert.match(String(judge('GET', {}, PRESIGNED.replace('aws4_request', 'x'))), unsigned);
    // SigV2 query presigning (`aws s3 presign` of CLI v1 by default in us-east-1).
    assert.match(
      String(judge('GET', {}, '/bucket/key?AWSAccessKeyId=test&Signature=abc%3D&Expires=1')),
      unsigned,
    );
  });
});
