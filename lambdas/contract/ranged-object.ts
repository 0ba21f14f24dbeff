import * as z from 'zod';

/**
 * A strict zod object whose optional number fields are judged against their ranges by one loop,
 * not by a zod number schema with `min`/`max` checks per field. A GPU window's metrics are 46
 * optional numbers, 2,600 values in the agent's 60 s batch: each field's `.optional()` wrapper,
 * number type and two range checks cost more than the rest of the object's parse (BENCHMARKS.md,
 * 2026-11-28 (morning)). The result is the same schema to every caller: the same inferred type,
 * the same verdicts, and the same issues in the same order with the same messages, because a
 * value outside its range is handed to the field's own schema, whose issues are the ones reported.
 *
 * How: each `z.number()…optional()` field of `shape` is parsed by one shared `z.number().optional()`
 * (type only); then one object-level check reads each present number against the field's bounds
 * (`minValue`, `maxValue`, `isInt` of its schema: safe integers) and, only when one is outside,
 * runs the field's own schema on it and places its issues where zod would have: in shape order,
 * before an unknown-key issue. `refine` (the object's cross-field rules, like a `.superRefine`) runs
 * after, only when no issue so far aborts, as zod runs a `.superRefine` that follows the fields.
 * Other fields (booleans, strings) keep their own schemas.
 *
 * @param shape - the object's fields, each a zod schema; the number fields' schemas carry the rules
 * @param refine - cross-field rules, given the parsed object and the refinement context
 * @returns a strict zod object of `shape`
 * @throws {Error} at module load, when a number field's schema has a check other than `min`, `max`
 *   or `int` (the loop would not know it)
 * @example
 * const Metrics = rangedStrictObject({ gpu_util: z.number().min(0).max(1).optional() });
 */
export function rangedStrictObject<S extends z.core.$ZodLooseShape>(
  shape: S,
  refine?: (value: z.infer<z.ZodObject<S, z.core.$strict>>, ctx: z.core.$RefinementCtx) => void,
): z.ZodObject<S, z.core.$strict> {
  const keys = Object.keys(shape);
  const order = new Map(keys.map((key, i) => [key, i]));
  const ranged: RangedField[] = [];
  const typeOnly: Record<string, z.ZodType> = {};
  for (const key of keys) {
    const field = shape[key] as z.ZodType;
    const inner = field instanceof z.ZodOptional ? field.unwrap() : undefined;
    if (!(inner instanceof z.ZodNumber)) {
      typeOnly[key] = field;
      continue;
    }
    for (const check of inner._zod.def.checks ?? []) {
      const kind = check._zod.def.check;
      if (kind !== 'greater_than' && kind !== 'less_than' && kind !== 'number_format')
        throw new Error(`rangedStrictObject: ${key} has a ${kind} check the range loop does not know`);
    }
    ranged.push({
      key,
      rule: inner,
      min: inner.minValue ?? Number.NEGATIVE_INFINITY,
      max: inner.maxValue ?? Number.POSITIVE_INFINITY,
      integer: inner.isInt,
    });
    typeOnly[key] = ANY_NUMBER;
  }
  const check = z.superRefine<Record<string, unknown>>(
    (value, ctx) => {
      if (typeof value !== 'object' || value === null) return;
      const outside = rangeIssues(value, ranged);
      if (outside !== undefined) place(ctx.issues, outside, order);
      if (refine !== undefined && !ctx.issues.some((issue) => issue.continue !== true))
        refine(value as z.infer<z.ZodObject<S, z.core.$strict>>, ctx);
    },
    // Run even after a field's type issue, as the fields' own range checks did (they ran per field).
    { when: () => true },
  );
  return z.strictObject(typeOnly).check(check) as unknown as z.ZodObject<S, z.core.$strict>;
}

/** One shared schema for the type of every ranged field (monomorphic calls). */
const ANY_NUMBER = z.number().optional();
/** What the raw-issue runs of a field's own schema are given: synchronous, forward. */
const SYNC = { async: false } as const;

/** A number field, its own schema and the bounds read from it. */
interface RangedField {
  readonly key: string;
  readonly rule: z.ZodNumber;
  readonly min: number;
  readonly max: number;
  readonly integer: boolean;
}

/** The issues of the present, finite numbers of `value` outside their field's range, path `[key]`. */
function rangeIssues(
  value: Record<string, unknown>,
  ranged: readonly RangedField[],
): z.core.$ZodRawIssue[] | undefined {
  let issues: z.core.$ZodRawIssue[] | undefined;
  for (const field of ranged) {
    const v = value[field.key];
    if (typeof v !== 'number') continue;
    if (v >= field.min && v <= field.max && (!field.integer || Number.isSafeInteger(v))) continue;
    // NaN and ±Infinity were refused by the type already.
    if (!Number.isFinite(v)) continue;
    const result = field.rule._zod.run({ value: v, issues: [] }, SYNC) as z.core.ParsePayload;
    for (const issue of result.issues) {
      // Prefixed in place, as zod's object parse prefixes its fields' issues.
      (issue as { path?: PropertyKey[] }).path = [field.key, ...(issue.path ?? [])];
      issues ??= [];
      issues.push(issue);
    }
  }
  return issues;
}

/**
 * Adds `outside` to `issues` in the order zod gives a strict object's issues: by field in shape
 * order (the sort is stable), an unknown-key issue (no path) last.
 */
function place(
  issues: z.core.$ZodRawIssue[],
  outside: z.core.$ZodRawIssue[],
  order: ReadonlyMap<string, number>,
): void {
  if (issues.length === 0) {
    issues.push(...outside);
    return;
  }
  const rank = (issue: z.core.$ZodRawIssue): number => {
    const key = issue.path?.[0];
    return (typeof key === 'string' ? order.get(key) : undefined) ?? Number.POSITIVE_INFINITY;
  };
  const merged = [...issues, ...outside].sort((a, b) => rank(a) - rank(b));
  issues.length = 0;
  issues.push(...merged);
}
