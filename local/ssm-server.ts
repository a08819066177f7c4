// The local SSM Parameter Store: PutParameter, GetParameter and DeleteParameter over the AWS JSON 1.1
// protocol (X-Amz-Target AmazonSSM.*), for a crawl's credentials (lambdas/adapters/credential-store.ts).
// As strict as SSM where it matters here: names as SSM allows them, values of at most 4 KB (the
// standard tier), a SecureString returned in clear only WithDecryption. Kept in a file of the state
// directory (mode 0600, written whole), so a resumed crawl reads its credentials again; nothing here
// is encrypted, as in LocalStack.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { z } from 'zod';
import type { RunningServer } from './fauxqs-server.ts';
import { readJsonBody } from './json-body.ts';
import { KeptFile, readKeptItems } from './kept-file.ts';
import { listenOnLoopback } from './loopback-listen.ts';
import { guardServer } from './request-guard.ts';

/** SSM's rules for a parameter name (a path of [a-zA-Z0-9_.-] segments, at most 1,011 characters). */
const NAME = /^\/?[a-zA-Z0-9_.\-/]{1,1011}$/;
/** A standard-tier parameter's value. */
const MAX_VALUE_BYTES = 4096;
const MAX_BODY_BYTES = 64 * 1024;
const OPERATIONS = new Set(['AmazonSSM.PutParameter', 'AmazonSSM.GetParameter', 'AmazonSSM.DeleteParameter']);

const StoredSchema = z.object({
  Name: z.string(),
  Type: z.enum(['String', 'SecureString']),
  Value: z.string(),
  Version: z.number().int(),
  LastModifiedDate: z.number(),
});
type Stored = z.infer<typeof StoredSchema>;

interface Answer {
  status: number;
  body: unknown;
}

export interface ParameterStoreSettings {
  region: string;
  accountId: string;
  /** Where the parameters are kept; absent: in memory only. */
  file?: string;
}

export class LocalParameterStore {
  #settings: ParameterStoreSettings = { region: 'us-east-1', accountId: '000000000000' };
  readonly #parameters = new Map<string, Stored>();
  readonly #file = new KeptFile();

  /** Loads the kept parameters (a missing file is none; a damaged one is refused, naming it). */
  async configure(settings: ParameterStoreSettings): Promise<void> {
    this.#settings = settings;
    this.#parameters.clear();
    if (settings.file === undefined) return;
    const kept = await readKeptItems(settings.file, z.array(StoredSchema), 'local parameter store');
    for (const parameter of kept) this.#parameters.set(parameter.Name, parameter);
  }

  async handle(target: string, body: Record<string, unknown>): Promise<Answer> {
    if (!OPERATIONS.has(target)) {
      return failure(
        'UnknownOperationException',
        `the local SSM serves PutParameter, GetParameter and DeleteParameter only, not ${target || 'a request without X-Amz-Target'}`,
      );
    }
    const name = body.Name;
    if (typeof name !== 'string' || !NAME.test(name)) {
      return failure(
        'ValidationException',
        `Name ${JSON.stringify(name)}: expected a parameter name of [a-zA-Z0-9_.-/]`,
      );
    }
    if (target === 'AmazonSSM.PutParameter') return this.#put(name, body);
    const stored = this.#parameters.get(name);
    if (target === 'AmazonSSM.GetParameter') {
      if (stored === undefined) return failure('ParameterNotFound', `Parameter ${name} not found.`);
      const clear = stored.Type === 'String' || body.WithDecryption === true;
      const value = clear ? stored.Value : Buffer.from(stored.Value).toString('base64');
      return ok({ Parameter: { ...this.#describe(stored), Value: value } });
    }
    // DeleteParameter, the one left.
    if (stored === undefined) return failure('ParameterNotFound', `Parameter ${name} not found.`);
    this.#parameters.delete(name);
    await this.#save();
    return ok({});
  }

  async #put(name: string, body: Record<string, unknown>): Promise<Answer> {
    const { Value: value, Type: type = 'String', Overwrite: overwrite } = body;
    if (typeof value !== 'string' || value === '')
      return failure('ValidationException', 'Value: expected a string');
    if (Buffer.byteLength(value) > MAX_VALUE_BYTES) {
      return failure('ValidationException', `Value: at most ${MAX_VALUE_BYTES} bytes in the standard tier`);
    }
    if (type !== 'String' && type !== 'SecureString') {
      return failure(
        'ValidationException',
        `Type ${String(type)}: the local SSM keeps String and SecureString`,
      );
    }
    const earlier = this.#parameters.get(name);
    if (earlier !== undefined && overwrite !== true) {
      return failure('ParameterAlreadyExists', `The parameter ${name} already exists.`);
    }
    const Version = (earlier?.Version ?? 0) + 1;
    this.#parameters.set(name, {
      Name: name,
      Type: type,
      Value: value,
      Version,
      LastModifiedDate: Date.now() / 1000,
    });
    await this.#save();
    return ok({ Version, Tier: 'Standard' });
  }

  #describe(stored: Stored) {
    const path = stored.Name.startsWith('/') ? stored.Name.slice(1) : stored.Name;
    return {
      Name: stored.Name,
      Type: stored.Type,
      Version: stored.Version,
      LastModifiedDate: stored.LastModifiedDate,
      ARN: `arn:aws:ssm:${this.#settings.region}:${this.#settings.accountId}:parameter/${path}`,
      DataType: 'text',
    };
  }

  async #save(): Promise<void> {
    const file = this.#settings.file;
    // The values are secrets: readable by their owner only.
    if (file !== undefined) await this.#file.write(file, [...this.#parameters.values()], 0o600);
  }
}

function ok(body: unknown): Answer {
  return { status: 200, body };
}

function failure(type: string, message: string): Answer {
  return { status: 400, body: { __type: type, message } };
}

export async function startSsmServer(store: LocalParameterStore): Promise<RunningServer> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const reply = ({ status, body }: Answer) => {
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(body));
    };
    void readJsonBody(req, MAX_BODY_BYTES).then(
      (body) => {
        if (body.kind === 'too-large')
          return reply(failure('ValidationException', `request body over ${body.limit} bytes`));
        const input =
          body.kind === 'json' && typeof body.value === 'object' && body.value !== null
            ? body.value
            : undefined;
        if (input === undefined || Array.isArray(input))
          return reply(failure('ValidationException', 'expected a JSON object'));
        store
          .handle(String(req.headers['x-amz-target'] ?? ''), input as Record<string, unknown>)
          .then(reply, (error: unknown) =>
            reply({ status: 500, body: { __type: 'InternalServerError', message: String(error) } }),
          );
      },
      (error: unknown) => reply(failure('ValidationException', String(error))),
    );
  });
  guardServer(server, { port: 'any' });
  return listenOnLoopback(server);
}
