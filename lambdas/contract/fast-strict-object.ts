import * as z from 'zod';

/** What {@link fastStrictObject} makes of a shape: the strict object's output and input types. */
export type FastStrictObject<S extends z.core.$ZodLooseShape> = z.ZodType<
  z.output<z.ZodObject<S, z.core.$strict>>,
  z.input<z.ZodObject<S, z.core.$strict>>
>;

/**
 * A zod strict object of optional number and boolean fields that accepts a valid value by one loop
 * and leaves every refusal to zod. A GPU window's metrics are 46 such fields, 2,600 values in the
 * agent's 60 s batch; zod's own object parse (a payload, an `.optional()` wrapper, a number type
 * and its range checks per field) took more than half of the batch's validation (BENCHMARKS.md,
 * 2026-11-28, "ingest at fleet scale").
 *
 * The rules stay zod's: `z.strictObject(shape).superRefine(refine)` is the schema of record. The
 * loop accepts a value only where that schema would: a plain object whose every key is a field of
 * `shape`, every number finite and inside its field's `min`/`max` (a safe integer where the field is
 * `z.int()`), every boolean a boolean, and `refine` adding no issue. Anything else (a wrong type, a
 * value out of range, an unknown key, not an object) is parsed by the schema of record, whose
 * issues, messages and order are the ones reported: the same as a plain `z.strictObject` gives.
 * An accepted value is returned as given (zod would return a copy with the same entries).
 *
 * @param shape - the fields: each `z.number()…optional()` (checks `min`, `max`, `int` only) or
 *   `z.boolean().optional()`
 * @param refine - cross-field rules, as for `.superRefine`: add an issue for each broken one
 * @returns a zod schema of the strict object's types
 * @throws {Error} at module load, for a field of another kind or a number check the loop does not
 *   know (`multipleOf`, …)
 * @example
 * const Metrics = fastStrictObject({ gpu_util: z.number().min(0).max(1).optional() });
 */
export function fastStrictObject<S extends z.core.$ZodLooseShape>(
  shape: S,
  refine: (value: z.output<z.ZodObject<S, z.core.$strict>>, ctx: z.core.$RefinementCtx) => void = () => {},
): FastStrictObject<S> {
  type Out = z.output<z.ZodObject<S, z.core.$strict>>;
  const full = z.strictObject(shape).superRefine(refine);
  const fieldsValid = fieldsAcceptor(Object.entries(shape).map(([key, schema]) => fieldRule(key, schema)));
  // One context for the rules' dry run: it only records that an issue was added.
  const probe = {
    broken: false,
    addIssue: () => {
      probe.broken = true;
    },
  };
  const accepts = (value: unknown): boolean => {
    if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype)
      return false;
    if (!fieldsValid(value as Record<string, unknown>)) return false;
    probe.broken = false;
    refine(value as Out, probe as unknown as z.core.$RefinementCtx);
    return !probe.broken;
  };
  return z.custom<Out>().check(
    z.superRefine((value, ctx) => {
      if (accepts(value)) return;
      const result = full._zod.run({ value, issues: [] }, SYNC) as z.core.ParsePayload;
      ctx.value = result.value as Out;
      ctx.issues.push(...result.issues);
    }),
  ) as unknown as FastStrictObject<S>;
}

/** What the schema of record is run with: synchronous, forward. */
const SYNC = { async: false } as const;

/** What the loop checks of one field's present value. */
type FieldRule =
  | { readonly key: string; readonly kind: 'boolean' }
  | {
      readonly key: string;
      readonly kind: 'number';
      readonly min: number;
      readonly max: number;
      readonly integer: boolean;
    };

/** The rule of one field, read off its schema. */
function fieldRule(key: string, schema: z.core.$ZodType): FieldRule {
  if (!/^[a-z][a-z0-9_]*$/.test(key)) throw new Error(`fastStrictObject: ${key} is not a snake_case name`);
  const inner = schema instanceof z.ZodOptional ? schema.unwrap() : undefined;
  if (inner instanceof z.ZodBoolean && (inner._zod.def.checks ?? []).length === 0)
    return { key, kind: 'boolean' };
  if (!(inner instanceof z.ZodNumber))
    throw new Error(`fastStrictObject: ${key} is not an optional number or boolean`);
  // A number format (`z.int()`) is the schema itself, its range checks are listed after it.
  const own = inner._zod.def as { check?: string; format?: string };
  for (const check of [...(own.check === undefined ? [] : [inner]), ...(inner._zod.def.checks ?? [])]) {
    const def = check._zod.def as { check: string; inclusive?: boolean; format?: string };
    const known =
      ((def.check === 'greater_than' || def.check === 'less_than') && def.inclusive === true) ||
      (def.check === 'number_format' && def.format === 'safeint');
    if (!known) throw new Error(`fastStrictObject: ${key} has a ${def.check} check the loop does not know`);
  }
  return {
    key,
    kind: 'number',
    min: inner.minValue ?? Number.NEGATIVE_INFINITY,
    max: inner.maxValue ?? Number.POSITIVE_INFINITY,
    integer: inner.isInt,
  };
}

/** True when `v` is present and fits `rule` (`undefined`: absent, which every field allows). */
function fits(rule: FieldRule, v: unknown): boolean {
  if (rule.kind === 'boolean') return typeof v === 'boolean';
  if (rule.integer && !Number.isSafeInteger(v)) return false;
  return Number.isFinite(v) && (v as number) >= rule.min && (v as number) <= rule.max;
}

/**
 * True when every own key of an object is a field and every present value fits its rule: compiled
 * at module load into straight-line code (one property read per field, the bounds literals), as zod
 * compiles its own object parsers and `firehose-records.ts` its row writers; a loop over the rules
 * where the runtime refuses code generation (`--disallow-code-generation-from-strings`). An own
 * key that is not a field makes the key count differ from the fields present.
 */
function fieldsAcceptor(rules: readonly FieldRule[]): (value: Record<string, unknown>) => boolean {
  const byKey = new Map(rules.map((rule) => [rule.key, rule]));
  const loop = (value: Record<string, unknown>): boolean => {
    for (const key of Object.keys(value)) {
      const rule = byKey.get(key);
      if (rule === undefined || (value[key] !== undefined && !fits(rule, value[key]))) return false;
    }
    return true;
  };
  const test = (rule: FieldRule): string =>
    rule.kind === 'boolean'
      ? "typeof v === 'boolean'"
      : `${rule.integer ? 'Number.isSafeInteger(v)' : 'Number.isFinite(v)'} && v >= ${rule.min} && v <= ${rule.max}`;
  const body = rules
    .map(
      (rule) =>
        `v = value.${rule.key}; if (v !== undefined) { if (!(${test(rule)})) return false; present++; }`,
    )
    .join('\n');
  try {
    return new Function(
      `return function fieldsValid(value) { let v; let present = 0;\n${body}\nlet keys = 0; for (const _ in value) keys++; return keys === present; };`,
    )() as (value: Record<string, unknown>) => boolean;
  } catch {
    return loop;
  }
}
