import type * as z from 'zod';

/** A test that a value is one the schema it was built from accepts (see {@link zodAccepts}). */
export type Accepts<T> = (value: unknown) => value is T;

/**
 * A fast test that zod would accept a value unchanged: built once from a schema's definition, it
 * walks the value with one small function per schema node instead of zod's parse (a payload, an
 * issue list and a result object per node: 2,600 metric values, 56 windows and 112 processes in the
 * agent's 60 s batch). It never decides a refusal: where it answers `false` the caller parses with
 * zod, whose issues and messages are the ones reported. Where it answers `true` zod would have
 * returned an equal value (`test/lambdas/contract/zod-accepts.test.ts` compares the two on
 * thousands of mutated batches).
 *
 * It reads the node kinds the wire contract uses and nothing else: strict objects, optional,
 * number, string, boolean, enum, literal, array, record with a string key, and custom schemas;
 * every check (`min`, `max`, `int`, `regex`, a format like `uuid` or `iso.datetime`, a
 * `.refine`/`.superRefine`) is zod's own check function, run on the value. Bounds of numbers and
 * lengths are read inline. A schema with any other node (a union, a transform, a default, a
 * stripping `z.object`, …) gets no test: `undefined`.
 *
 * @param schema - the zod schema
 * @returns the test, or `undefined` when the schema has a node it does not read
 * @example
 * const accepts = zodAccepts(BatchSchema);
 * const batch = accepts?.(input) ? input : BatchSchema.parse(input);
 */
export function zodAccepts<T>(schema: z.ZodType<T>): Accepts<T> | undefined {
  return nodeTest(schema as unknown as z.core.$ZodType) as Accepts<T> | undefined;
}

/** One node's test of a value. */
type Test = (value: unknown) => boolean;

/** The internals this reads of a zod node (zod's documented `_zod` for library authors). */
interface NodeDef {
  readonly type: string;
  readonly checks?: readonly z.core.$ZodCheck[];
  readonly innerType?: z.core.$ZodType;
  readonly shape?: Readonly<Record<string, z.core.$ZodType>>;
  readonly catchall?: z.core.$ZodType;
  readonly element?: z.core.$ZodType;
  readonly keyType?: z.core.$ZodType;
  readonly valueType?: z.core.$ZodType;
  readonly coerce?: boolean;
}

function nodeTest(schema: z.core.$ZodType): Test | undefined {
  const def = schema._zod.def as unknown as NodeDef;
  const checks = checksTest(schema, def);
  if (checks === undefined) return undefined;
  const type = typeTest(schema, def);
  if (type === undefined) return undefined;
  return checks === ALWAYS ? type : (value) => type(value) && checks(value);
}

/** The type part of a node (its own parse), without its checks. */
function typeTest(schema: z.core.$ZodType, def: NodeDef): Test | undefined {
  if (def.coerce === true) return undefined;
  switch (def.type) {
    case 'optional': {
      const inner = def.innerType === undefined ? undefined : nodeTest(def.innerType);
      return inner === undefined ? undefined : (value) => value === undefined || inner(value);
    }
    case 'number':
      return (value) => typeof value === 'number' && Number.isFinite(value);
    case 'string':
      return (value) => typeof value === 'string';
    case 'boolean':
      return (value) => typeof value === 'boolean';
    case 'enum':
    case 'literal': {
      const values = schema._zod.values;
      return values === undefined ? undefined : (value) => values.has(value as never);
    }
    case 'custom':
      return ALWAYS; // its test is the check it is (checksTest)
    case 'array': {
      const element = def.element === undefined ? undefined : nodeTest(def.element);
      if (element === undefined) return undefined;
      return (value) => {
        if (!Array.isArray(value)) return false;
        for (let i = 0; i < value.length; i++) if (!element(value[i])) return false;
        return true;
      };
    }
    case 'record':
      return recordTest(def);
    case 'object':
      return objectTest(def);
    default:
      return undefined;
  }
}

/**
 * A strict object: a plain object whose every key is a field, every field's value accepted. Compiled
 * into straight-line code (a named property read per field, as zod compiles its own object
 * parsers); a loop where the runtime refuses code generation. The own keys are counted against the
 * fields present: an unknown key, or a field present as `undefined`, fails the test (zod decides).
 */
function objectTest(def: NodeDef): Test | undefined {
  if (def.shape === undefined || def.catchall?._zod.def.type !== 'never') return undefined;
  const keys: string[] = [];
  const tests: Test[] = [];
  for (const [key, field] of Object.entries(def.shape)) {
    const test = nodeTest(field);
    if (test === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) || key === '__proto__') return undefined;
    keys.push(key);
    tests.push(test);
  }
  const loop: Test = (value) => {
    if (!isPlain(value)) return false;
    let present = 0;
    for (let i = 0; i < keys.length; i++) {
      const v = value[keys[i] as string];
      if (!(tests[i] as Test)(v)) return false;
      if (v !== undefined) present++;
    }
    let own = 0;
    for (const _ in value) own++;
    return own === present;
  };
  const body = keys
    .map((key, i) => `v = value.${key}; if (!t[${i}](v)) return false; if (v !== undefined) present++;`)
    .join('\n');
  try {
    return new Function(
      'isPlain',
      't',
      `return function strictObject(value) { if (!isPlain(value)) return false; let v; let present = 0;\n${body}\nlet own = 0; for (const _ in value) own++; return own === present; };`,
    )(isPlain, tests) as Test;
  } catch {
    return loop;
  }
}

/** A record with a string key schema: a plain object, every key and value accepted. */
function recordTest(def: NodeDef): Test | undefined {
  if (def.keyType === undefined || def.valueType === undefined) return undefined;
  if ((def.keyType._zod.def as unknown as NodeDef).type !== 'string') return undefined;
  const key = nodeTest(def.keyType);
  const item = nodeTest(def.valueType);
  if (key === undefined || item === undefined) return undefined;
  return (value) => {
    if (!isPlain(value) || Object.getOwnPropertySymbols(value).length > 0) return false;
    for (const k in value) {
      if (k === '__proto__' || !Object.hasOwn(value, k) || !key(k) || !item(value[k])) return false;
    }
    return true;
  };
}

/** A plain data object, as `JSON.parse` makes them. */
function isPlain(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** Passes every value: a node with nothing to test. */
const ALWAYS: Test = () => true;

/** What this reads of a check's definition. */
interface CheckDef {
  readonly check: string;
  readonly value?: unknown;
  readonly inclusive?: boolean;
  readonly maximum?: number;
  readonly minimum?: number;
  readonly format?: string;
  /** zod runs the check only where this says so (size and length checks: a value with a length). */
  readonly when?: (payload: z.core.ParsePayload) => boolean;
}

/**
 * The node's checks, the node itself first where it is one (`z.int()`, `z.uuid()`, a custom
 * schema): bounds read inline, any other check run as zod runs it, on a payload of its own.
 */
function checksTest(schema: z.core.$ZodType, def: NodeDef): Test | undefined {
  const all = [
    ...((schema._zod as { traits?: Set<string> }).traits?.has('$ZodCheck')
      ? [schema as unknown as z.core.$ZodCheck]
      : []),
    ...(def.checks ?? []),
  ];
  const tests: Test[] = [];
  for (const check of all) {
    const cd = check._zod.def as CheckDef;
    if (cd.check === 'greater_than' && typeof cd.value === 'number') {
      const min = cd.value;
      tests.push(cd.inclusive === true ? (v) => (v as number) >= min : (v) => (v as number) > min);
    } else if (cd.check === 'less_than' && typeof cd.value === 'number') {
      const max = cd.value;
      tests.push(cd.inclusive === true ? (v) => (v as number) <= max : (v) => (v as number) < max);
    } else if (cd.check === 'number_format' && cd.format === 'safeint') {
      tests.push((v) => Number.isSafeInteger(v));
    } else if (cd.check === 'max_length' && typeof cd.maximum === 'number') {
      const max = cd.maximum;
      tests.push((v) => (v as { length: number }).length <= max);
    } else if (cd.check === 'min_length' && typeof cd.minimum === 'number') {
      const min = cd.minimum;
      tests.push((v) => (v as { length: number }).length >= min);
    } else {
      const when = cd.when;
      tests.push((value) => {
        const payload: z.core.ParsePayload = { value, issues: [] };
        if (when !== undefined && !when(payload)) return true; // zod skips it too
        const result = check._zod.check(payload as z.core.ParsePayload<never>);
        return !(result instanceof Promise) && payload.issues.length === 0;
      });
    }
  }
  const [first, second] = tests;
  if (first === undefined) return ALWAYS;
  if (second === undefined) return first;
  if (tests.length === 2) return (value) => first(value) && second(value);
  return (value) => {
    for (let i = 0; i < tests.length; i++) if (!(tests[i] as Test)(value)) return false;
    return true;
  };
}
