/** The one mechanism every command reads its options with: suggestions and one-line messages. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../cli/usage-error.ts';
import { describeFailure, describeUnreachable, noSuchCrawl } from '../../cli/usage-failures.ts';
import { checkOptions, describeOption, editDistance, parseOptions, suggest } from '../../cli/usage-hints.ts';
import { StateLockedError } from '../../local/state-lock.ts';

const USAGE = `usage: crawler demo URL... [options]
  --max-pages N        fetch at most N pages
  --max-depth N        follow links at most N hops
  --quiet              no progress on stderr
  --no-respect-robots  ignore robots.txt
  --out DIR            where to write`;
const OPTIONS = {
  'max-pages': { type: 'string' },
  'max-depth': { type: 'string' },
  quiet: { type: 'boolean' },
  'respect-robots': { type: 'boolean' },
  out: { type: 'string' },
} as const;

function usageMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof UsageError, `not a UsageError: ${String(error)}`);
    assert.doesNotMatch(error.message, /\n/, 'one line');
    return error.message;
  }
  assert.fail('no UsageError');
}

describe('editDistance and suggest', () => {
  it('counts edits, an adjacent swap as one', () => {
    assert.equal(editDistance('crawl', 'crawl'), 0);
    assert.equal(editDistance('crawel', 'crawl'), 1);
    assert.equal(editDistance('cralw', 'crawl'), 1);
    assert.equal(editDistance('', 'abc'), 3);
    assert.equal(editDistance('kitten', 'sitting'), 3);
  });

  it('suggests the nearest close candidate, or the only one a prefix extends, else nothing', () => {
    const commands = ['crawl', 'status', 'results', 'get', 'submit', 'cancel', 'local', 'redrive', 'robots'];
    assert.equal(suggest('crawel', commands), 'crawl');
    assert.equal(suggest('stauts', commands), 'status');
    assert.equal(suggest('max-page', Object.keys(OPTIONS)), 'max-pages');
    assert.equal(suggest('redr', commands), 'redrive');
    assert.equal(suggest('deploy', commands), undefined);
    assert.equal(suggest('max', Object.keys(OPTIONS)), undefined, 'two options start with max');
  });
});

describe('describeOption', () => {
  it('quotes the usage line of an option, its --no- form too', () => {
    assert.equal(describeOption(USAGE, 'max-pages'), '--max-pages N: fetch at most N pages');
    assert.equal(describeOption(USAGE, 'quiet'), '--quiet: no progress on stderr');
    assert.equal(describeOption(USAGE, 'respect-robots'), '--no-respect-robots: ignore robots.txt');
    assert.equal(describeOption(USAGE, 'absent'), undefined);
  });
});

describe('checkOptions / parseOptions', () => {
  it('a negative number reaches the option as its value (no "ambiguous")', () => {
    assert.deepEqual(checkOptions(['u', '--max-pages', '-5'], OPTIONS, USAGE), ['u', '--max-pages=-5']);
    const { values, positionals } = parseOptions(['u', '--max-pages', '-5', '--quiet'], OPTIONS, USAGE);
    assert.equal(values['max-pages'], '-5');
    assert.equal(values.quiet, true);
    assert.deepEqual(positionals, ['u']);
  });

  it('an unknown option is one line with the near option and what it accepts', () => {
    assert.equal(
      usageMessage(() => parseOptions(['--max-page', '3'], OPTIONS, USAGE)),
      'unknown option --max-page; did you mean --max-pages? (--max-pages N: fetch at most N pages)',
    );
    assert.equal(
      usageMessage(() => parseOptions(['--colour'], OPTIONS, USAGE)),
      'unknown option --colour; `crawler demo --help` lists the options',
    );
    assert.match(
      usageMessage(() => parseOptions(['-q'], OPTIONS, USAGE)),
      /^unknown option -q;/,
    );
    assert.match(
      usageMessage(() => checkOptions(['--jsn'], OPTIONS, USAGE, { otherOptions: ['json'] })),
      /did you mean --json\?/,
    );
  });

  it('a missing value and a value given to a flag say what the option accepts', () => {
    assert.equal(
      usageMessage(() => parseOptions(['--out'], OPTIONS, USAGE)),
      '--out expects a value (--out DIR: where to write)',
    );
    assert.equal(
      usageMessage(() => parseOptions(['--out', '--quiet'], OPTIONS, USAGE)),
      '--out expects a value (--out DIR: where to write), got the option --quiet (write --out=--quiet if that is the value)',
    );
    assert.equal(
      usageMessage(() => parseOptions(['--quiet=yes'], OPTIONS, USAGE)),
      '--quiet takes no value (--quiet: no progress on stderr)',
    );
    assert.equal(
      usageMessage(() => parseOptions(['--no-respect-robots=1'], OPTIONS, USAGE, { allowNegative: true })),
      '--no-respect-robots takes no value (--no-respect-robots: ignore robots.txt)',
    );
  });

  it('leaves positionals, "-" and everything after -- alone', () => {
    assert.deepEqual(checkOptions(['-', '--', '--max-page', '-x'], OPTIONS, USAGE), [
      '-',
      '--',
      '--max-page',
      '-x',
    ]);
    assert.deepEqual(checkOptions(['--out=-x'], OPTIONS, USAGE), ['--out=-x']);
  });
});

describe('failures', () => {
  it('an unreachable endpoint, even as the cause of another error, says what to do', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4566'), {
      code: 'ECONNREFUSED',
      address: '127.0.0.1',
      port: 4566,
    });
    const line = describeUnreachable(new Error('request failed', { cause: refused }));
    assert.match(
      String(line),
      /^cannot reach 127\.0\.0\.1:4566 \(ECONNREFUSED\); start .*crawler local.* or fix --endpoint$/,
    );
    assert.equal(describeUnreachable(new Error('other')), undefined);
  });

  it('is typed by what the caller does next: 2 for the command line, 1 for a failure, one line each', () => {
    assert.deepEqual(describeFailure(new UsageError('--x expects N'), 'crawl'), {
      exitCode: 2,
      line: 'crawler crawl: --x expects N',
    });
    const locked = describeFailure(
      new StateLockedError('/s', { pid: 42, host: 'elsewhere', startedAt: 'then', token: '' }),
      'crawl',
    );
    assert.equal(locked.exitCode, 1);
    assert.match(
      locked.line,
      /^crawler crawl: local crawl state in \/s is in use by process 42 on elsewhere .*--state-dir/,
    );
    const other = describeFailure(new TypeError('boom\nsecond line'), 'status');
    assert.deepEqual(other, {
      exitCode: 1,
      line: 'crawler status failed: TypeError: boom (run it again with --debug for the stack trace)',
    });
  });

  it('an unknown crawl says where to look', () => {
    assert.match(
      noSuchCrawl('c-1', 'local state in /x'),
      /^no crawl c-1 in local state in \/x; check the id/,
    );
  });
});
