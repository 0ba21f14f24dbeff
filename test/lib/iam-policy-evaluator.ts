/**
 * A small evaluator of the IAM policy semantics the ingest API's resource policy uses, so its
 * logic can be tested against request contexts instead of only being read. It implements, after
 * the IAM User Guide ("Policy evaluation logic", "IAM JSON policy elements: Condition operators"):
 *
 * - statements with `Effect` Allow/Deny, `Principal` (`*`, `{ AWS: <ARN or account root> }`),
 *   `Action` and `Resource` (exact or `*` wildcards);
 * - an explicit Deny beats any Allow; no matching Allow is an implicit deny;
 * - condition operators `StringEquals`, `StringNotEquals`, `ArnEquals`, `ArnLike`, `ArnNotLike`,
 *   `ArnNotEquals`, `Null`: several keys or operators in one block must all match (AND), several
 *   values of one key match if any does (OR); a key absent from the request context makes a
 *   positive operator false and a negated one (`…Not…`) true; `Null: "true"` matches an absent
 *   key, `"false"` a present one; condition keys are case-insensitive;
 * - a principal ARN of the form `arn:aws:iam::<account>:root` names the account: it matches only
 *   the account itself (delegation), not its roles or users, which need their own identity policy.
 *
 * And API Gateway's combination of identity and resource policies for IAM authorization (API
 * Gateway developer guide, "How API Gateway resource policies affect authorization workflow"):
 * a caller of the API's own account is admitted when the identity policy or the resource policy
 * allows and neither denies; a caller of another account needs both to allow.
 *
 * Anything else (another operator, `NotPrincipal`, `NotAction`) throws, so a policy that grows
 * beyond what is modelled fails its test instead of passing untested.
 */

/** A policy statement as CloudFormation holds it (after tokens are resolved). */
export interface Statement {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Principal?: '*' | { readonly AWS: string | readonly string[] };
  readonly Action: string | readonly string[];
  readonly Resource: string | readonly string[];
  readonly Condition?: Readonly<Record<string, Readonly<Record<string, string | readonly string[]>>>>;
  readonly [other: string]: unknown;
}

/** A policy document. */
export interface PolicyDocument {
  readonly Statement: readonly Statement[];
}

/** One request as IAM sees it. */
export interface RequestContext {
  /** The principal's ARN as `aws:PrincipalArn` gives it: the role ARN for a role session, the user ARN, or the root. */
  readonly principalArn: string;
  /** The principal's account. */
  readonly principalAccount: string;
  readonly action: string;
  readonly resource: string;
  /** Condition keys present in the request context (absent keys are simply not listed). */
  readonly keys: Readonly<Record<string, string>>;
}

/** What one policy says about a request. */
export type PolicyVerdict = 'allow' | 'deny' | 'no-match';

/**
 * Evaluates one policy document against a request.
 *
 * @returns `deny` when a Deny statement matches, else `allow` when an Allow matches, else `no-match`
 * @throws {Error} on an element or operator this evaluator does not model
 */
export function evaluatePolicy(policy: PolicyDocument, request: RequestContext): PolicyVerdict {
  let allowed = false;
  for (const statement of policy.Statement) {
    for (const key of Object.keys(statement)) {
      if (!['Sid', 'Effect', 'Principal', 'Action', 'Resource', 'Condition'].includes(key)) {
        throw new Error(`Element ${key} is not modelled by this evaluator`);
      }
    }
    if (!matches(statement, request)) continue;
    if (statement.Effect === 'Deny') return 'deny';
    allowed = true;
  }
  return allowed ? 'allow' : 'no-match';
}

/**
 * API Gateway's decision for an IAM-authorized request given the resource policy and whether the
 * caller's identity-based policies allow the call.
 *
 * @param resourcePolicy - the API's resource policy
 * @param apiAccount - the account that owns the API
 * @param identity - what the caller's identity policies say (`allow`, `deny`, `no-match`)
 * @param request - the request
 * @returns true when API Gateway lets the request through to the integration
 */
export function apiGatewayAdmits(
  resourcePolicy: PolicyDocument,
  apiAccount: string,
  identity: PolicyVerdict,
  request: RequestContext,
): boolean {
  const resource = evaluatePolicy(resourcePolicy, request);
  if (resource === 'deny' || identity === 'deny') return false;
  if (request.principalAccount === apiAccount) return resource === 'allow' || identity === 'allow';
  return resource === 'allow' && identity === 'allow';
}

function matches(statement: Statement, request: RequestContext): boolean {
  return (
    principalMatches(statement.Principal, request) &&
    list(statement.Action).some((a) => glob(a, request.action, true)) &&
    list(statement.Resource).some((r) => glob(r, request.resource, false)) &&
    conditionsMatch(statement.Condition ?? {}, request.keys)
  );
}

function principalMatches(principal: Statement['Principal'], request: RequestContext): boolean {
  if (principal === undefined) return true;
  if (principal === '*') return true;
  return list(principal.AWS).some((p) => {
    if (p === '*') return true;
    const root = /^arn:aws[a-z-]*:iam::(\d{12}):root$/.exec(p);
    if (root) return request.principalArn === p;
    return p === request.principalArn;
  });
}

function conditionsMatch(
  condition: NonNullable<Statement['Condition']>,
  keys: Readonly<Record<string, string>>,
): boolean {
  const lower = new Map(Object.entries(keys).map(([k, v]) => [k.toLowerCase(), v]));
  return Object.entries(condition).every(([operator, block]) =>
    Object.entries(block).every(([key, expected]) => {
      const actual = lower.get(key.toLowerCase());
      const values = list(expected);
      switch (operator) {
        case 'StringEquals':
          return actual !== undefined && values.includes(actual);
        case 'StringNotEquals':
          return actual === undefined || !values.includes(actual);
        case 'ArnEquals':
        case 'ArnLike':
          return actual !== undefined && values.some((v) => glob(v, actual, false));
        case 'ArnNotEquals':
        case 'ArnNotLike':
          return actual === undefined || !values.some((v) => glob(v, actual, false));
        case 'Null':
          return values.some((v) => (v === 'true' ? actual === undefined : actual !== undefined));
        default:
          throw new Error(`Condition operator ${operator} is not modelled by this evaluator`);
      }
    }),
  );
}

/** IAM wildcard match: `*` any run of characters, `?` one character; whole string. */
function glob(pattern: string, value: string, caseInsensitive: boolean): boolean {
  const source = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, caseInsensitive ? 'i' : '').test(value);
}

function list<T>(value: T | readonly T[]): readonly T[] {
  return Array.isArray(value) ? (value as readonly T[]) : [value as T];
}

/**
 * Replaces the CloudFormation intrinsics a synthesized policy holds (`Ref`, `Fn::GetAtt`,
 * `Fn::Join`) with concrete values, for evaluation.
 *
 * @param value - a template fragment
 * @param refs - `Ref` name → value (pseudo parameters and logical ids)
 * @param attrs - `<logicalId>.<attribute>` → value for `Fn::GetAtt`
 * @returns the fragment with every intrinsic resolved
 * @throws {Error} naming an unresolvable reference
 */
export function resolveIntrinsics(
  value: unknown,
  refs: Readonly<Record<string, string>>,
  attrs: Readonly<Record<string, string>> = {},
): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveIntrinsics(v, refs, attrs));
  if (typeof value !== 'object' || value === null) return value;
  const obj = value as Record<string, unknown>;
  if ('Ref' in obj) {
    const name = obj.Ref as string;
    if (refs[name] === undefined) throw new Error(`No value for Ref ${name}`);
    return refs[name];
  }
  if ('Fn::GetAtt' in obj) {
    const [id, attr] = obj['Fn::GetAtt'] as [string, string];
    const key = `${id}.${attr}`;
    if (attrs[key] === undefined) throw new Error(`No value for Fn::GetAtt ${key}`);
    return attrs[key];
  }
  if ('Fn::Join' in obj) {
    const [sep, parts] = obj['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolveIntrinsics(p, refs, attrs)).join(sep);
  }
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, resolveIntrinsics(v, refs, attrs)]));
}
