import type { Template } from 'aws-cdk-lib/assertions';

/** One IAM statement as it appears in a synthesized template. */
export interface TemplateStatement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, unknown>;
}

/**
 * All statements of the inline policies attached to the role with `roleLogicalId`.
 *
 * @param template - the synthesized template
 * @param roleLogicalId - logical id of the role
 * @returns the statements, in template order
 */
export function roleStatements(template: Template, roleLogicalId: string): TemplateStatement[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<
    string,
    { Properties: { Roles: unknown[]; PolicyDocument: { Statement: TemplateStatement[] } } }
  >;
  return Object.values(policies)
    .filter((p) =>
      p.Properties.Roles.some((r) => JSON.stringify(r) === JSON.stringify({ Ref: roleLogicalId })),
    )
    .flatMap((p) => p.Properties.PolicyDocument.Statement);
}

/** The actions of a statement as an array. */
export function actionsOf(statement: TemplateStatement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

/** The resources of a statement as an array. */
export function resourcesOf(statement: TemplateStatement): unknown[] {
  return Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
}

/**
 * The statements granting `action`.
 *
 * @param statements - statements from {@link roleStatements}
 * @param action - e.g. `sns:Publish`
 * @returns the statements whose Action contains `action`
 */
export function statementsGranting(statements: TemplateStatement[], action: string): TemplateStatement[] {
  return statements.filter((s) => actionsOf(s).includes(action));
}
