import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { AwsStub } from 'aws-sdk-client-mock';

/**
 * Validation of AWS SDK v3 command inputs against AWS's own API models: the botocore service
 * models (`botocore/data/<service>/<api-version>/service-2.json`, Debian package
 * `python3-botocore`, installed by `.ci/run`). A stubbed SDK accepts any input; AWS does not. With
 * this, a test that asserts "we sent X" also proves AWS would take X.
 *
 * Checked, per botocore shape type: structure (required members, unknown members), list and map
 * (min/max entries, members), string (enum, min/max length in characters, pattern), integer /
 * long / float / double (type, min/max), boolean, timestamp (a `Date`), blob (bytes or string).
 */

/** One shape of a botocore model (the fields this validator reads). */
interface Shape {
  readonly type: string;
  readonly members?: Readonly<Record<string, { readonly shape: string }>>;
  readonly required?: readonly string[];
  readonly member?: { readonly shape: string };
  readonly key?: { readonly shape: string };
  readonly value?: { readonly shape: string };
  readonly enum?: readonly string[];
  readonly min?: number;
  readonly max?: number;
  readonly pattern?: string;
}

/** A loaded botocore service model. */
export interface ServiceModel {
  /** botocore's service directory name, e.g. `sns`, `timestream-write`. */
  readonly service: string;
  /** The API version whose model was loaded, e.g. `2010-03-31`. */
  readonly apiVersion: string;
  readonly operations: Readonly<Record<string, { readonly input?: { readonly shape: string } }>>;
  readonly shapes: Readonly<Record<string, Shape>>;
}

let dataDir: string | undefined;

/**
 * The botocore data folder of this machine's Python (`python3 -c 'import botocore'`).
 * @throws {Error} saying how to install it when botocore is missing
 */
export function botocoreDataDir(): string {
  if (dataDir !== undefined) return dataDir;
  let root: string;
  try {
    root = execFileSync('python3', ['-c', 'import botocore, os; print(os.path.dirname(botocore.__file__))'], {
      encoding: 'utf8',
    }).trim();
  } catch (err) {
    throw new Error(
      'Expected the botocore service models (Debian: apt-get install -y python3-botocore; .ci/run installs it), found none',
      { cause: err },
    );
  }
  dataDir = join(root, 'data');
  return dataDir;
}

const models = new Map<string, ServiceModel>();

/**
 * Loads the newest API version of a botocore service model (plain or `.json.gz`).
 *
 * @param service - botocore's directory name: `sns`, `autoscaling`, `ec2`, `dynamodb`,
 *   `timestream-write`, `timestream-query`, `firehose`, `athena`, `glue`, `s3`, `cloudwatch`, …
 * @returns the model
 * @throws {Error} naming the service when botocore has no model for it
 */
export function loadServiceModel(service: string): ServiceModel {
  const cached = models.get(service);
  if (cached) return cached;
  const dir = join(botocoreDataDir(), service);
  if (!existsSync(dir))
    throw new Error(`Expected a botocore model for service "${service}" in ${dir}, found none`);
  const apiVersion = readdirSync(dir).sort().at(-1)!;
  const plain = join(dir, apiVersion, 'service-2.json');
  const text = existsSync(plain)
    ? readFileSync(plain, 'utf8')
    : gunzipSync(readFileSync(`${plain}.gz`)).toString('utf8');
  const parsed = JSON.parse(text) as Omit<ServiceModel, 'service' | 'apiVersion'>;
  const model: ServiceModel = { service, apiVersion, operations: parsed.operations, shapes: parsed.shapes };
  models.set(service, model);
  return model;
}

/**
 * Validates one operation input against the model.
 *
 * @param model - the service model
 * @param operation - operation name as AWS spells it, e.g. `Publish`, `WriteRecords`
 * @param input - the SDK command's `input`
 * @returns every problem found, each `path: what was expected, what came`; empty when valid
 * @throws {Error} when the model has no such operation
 */
export function validateInput(model: ServiceModel, operation: string, input: unknown): string[] {
  const op = model.operations[operation];
  if (op === undefined)
    throw new Error(`Expected operation ${operation} in the ${model.service} model, found none`);
  const problems: string[] = [];
  if (op.input === undefined) {
    if (input !== undefined && Object.keys(input as object).length > 0)
      problems.push(`(root): expected no input`);
    return problems;
  }
  check(model, op.input.shape, input, operation, problems);
  return problems;
}

function check(
  model: ServiceModel,
  shapeName: string,
  value: unknown,
  path: string,
  problems: string[],
): void {
  const shape = model.shapes[shapeName];
  if (shape === undefined) throw new Error(`Expected shape ${shapeName} in the ${model.service} model`);
  const problem = (message: string) => problems.push(`${path}: ${message}, got ${describe(value)}`);
  switch (shape.type) {
    case 'structure': {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        return void problem('expected a structure');
      const members = shape.members ?? {};
      for (const name of shape.required ?? []) {
        if ((value as Record<string, unknown>)[name] === undefined)
          problems.push(`${path}.${name}: required, missing`);
      }
      for (const [name, member] of Object.entries(value)) {
        if (member === undefined) continue;
        const spec = members[name];
        if (spec === undefined) problems.push(`${path}.${name}: unknown member of ${shapeName}`);
        else check(model, spec.shape, member, `${path}.${name}`, problems);
      }
      return;
    }
    case 'list': {
      if (!Array.isArray(value)) return void problem('expected a list');
      range(shape, value.length, 'entries', problem);
      for (const [i, item] of value.entries())
        check(model, shape.member!.shape, item, `${path}[${i}]`, problems);
      return;
    }
    case 'map': {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        return void problem('expected a map');
      const entries = Object.entries(value);
      range(shape, entries.length, 'entries', problem);
      for (const [k, v] of entries) {
        check(model, shape.key!.shape, k, `${path}{key ${k}}`, problems);
        check(model, shape.value!.shape, v, `${path}.${k}`, problems);
      }
      return;
    }
    case 'string': {
      if (typeof value !== 'string') return void problem('expected a string');
      if (shape.enum !== undefined && !shape.enum.includes(value)) {
        return void problem(`expected one of ${shape.enum.join('|')}`);
      }
      range(shape, [...value].length, 'characters', problem);
      const pattern = shape.pattern === undefined ? undefined : compile(shape.pattern);
      if (pattern !== undefined && !pattern.test(value)) problem(`expected to match /${shape.pattern}/`);
      return;
    }
    case 'integer':
    case 'long': {
      const n = typeof value === 'bigint' ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isInteger(n)) return void problem(`expected an ${shape.type}`);
      if (shape.type === 'integer' && (n < -(2 ** 31) || n > 2 ** 31 - 1))
        return void problem('expected a 32-bit integer');
      range(shape, n, 'value', problem);
      return;
    }
    case 'float':
    case 'double': {
      if (typeof value !== 'number' || !Number.isFinite(value))
        return void problem(`expected a finite ${shape.type}`);
      range(shape, value, 'value', problem);
      return;
    }
    case 'boolean':
      if (typeof value !== 'boolean') problem('expected a boolean');
      return;
    case 'timestamp':
      if (!(value instanceof Date) || Number.isNaN(value.getTime())) problem('expected a valid Date');
      return;
    case 'blob':
      if (!(value instanceof Uint8Array) && typeof value !== 'string') problem('expected bytes');
      return;
    default:
      problem(`unsupported shape type ${shape.type}`);
  }
}

function range(shape: Shape, n: number, unit: string, problem: (m: string) => void): void {
  if (shape.min !== undefined && n < shape.min) problem(`expected at least ${shape.min} ${unit}`);
  if (shape.max !== undefined && n > shape.max) problem(`expected at most ${shape.max} ${unit}`);
}

const patterns = new Map<string, RegExp | undefined>();

/**
 * botocore patterns are Java regexes that AWS matches against the whole value ("Member must
 * satisfy regular expression pattern"), so they are anchored here; nearly all compile in
 * JavaScript with the `u` flag.
 */
function compile(source: string): RegExp | undefined {
  if (!patterns.has(source)) {
    let re: RegExp | undefined;
    for (const flags of ['u', '']) {
      try {
        re = new RegExp(`^(?:${source})$`, flags);
        break;
      } catch {
        // try the next flags; a pattern JavaScript cannot compile is not checked
      }
    }
    patterns.set(source, re);
  }
  return patterns.get(source);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (value instanceof Date) return `Date(${value.toISOString()})`;
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (typeof value === 'object' && value !== null) return 'an object';
  return `${String(value)} (${typeof value})`;
}

/** A command the SDK sent: its operation name and input. */
export interface SentCommand {
  readonly operation: string;
  readonly input: unknown;
}

/** Operation name of an SDK v3 command object: `PublishCommand` → `Publish`. */
export function operationOf(command: object): string {
  return command.constructor.name.replace(/Command$/, '');
}

/**
 * Validates every command an aws-sdk-client-mock stub received against the service's botocore
 * model, and throws one error listing every problem. Use it in `afterEach` of any adapter test:
 * `expectValidAwsInputs(snsMock, 'sns')`.
 *
 * @param mock - the `mockClient(...)` of one SDK client class
 * @param service - botocore's service directory name
 * @returns the commands validated (operation + input)
 * @throws {Error} listing each invalid input with its problems
 */
// biome-ignore lint/suspicious/noExplicitAny: the stub's generic parameters differ per client
export function expectValidAwsInputs(mock: AwsStub<any, any, any>, service: string): SentCommand[] {
  const model = loadServiceModel(service);
  const sent: SentCommand[] = mock.calls().map((call) => {
    const command = call.args[0] as { input: unknown };
    return { operation: operationOf(command), input: command.input };
  });
  const failures = sent.flatMap((c) =>
    validateInput(model, c.operation, c.input).map((p) => `${service} ${p}`),
  );
  if (failures.length > 0) {
    throw new Error(
      `AWS would refuse these ${service} inputs (${model.apiVersion} model):\n${failures.join('\n')}`,
    );
  }
  return sent;
}
