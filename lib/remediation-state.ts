import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import type { STATE_TABLE_VARIABLES, StackVariables } from '../lambdas/domain/lambda-environment';
import { STATE_PARTITION_KEY, STATE_SORT_KEY, STATE_TTL_ATTRIBUTE } from './constants';

/** Props of {@link RemediationState}. */
export interface RemediationStateProps {
  /**
   * What happens to the table when the stack is deleted.
   * @default RemovalPolicy.RETAIN (the audit of remediation decisions outlives the stack)
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The DynamoDB state table of the pipeline (docs/design.md §6, §8): remediation records (one per
 * instance, so an instance is replaced at most once), per-group rate limits, broken-GPU marks and
 * alert cooldowns, written with conditional writes so two Lambdas never act twice.
 *
 * Keys `pk` (S) and `sk` (S); items expire through the TTL attribute `expires_at` (epoch seconds);
 * on-demand capacity, point-in-time recovery on, deletion protection on (the budgets and the
 * once-per-instance records must not vanish with a mistaken delete), encrypted at rest with the
 * AWS managed key.
 *
 * @example
 * const state = new RemediationState(this, 'RemediationState');
 * state.grantReadWrite(myFunction);
 */
export class RemediationState extends Construct {
  /** The table. */
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: RemediationStateProps = {}) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: STATE_PARTITION_KEY, type: dynamodb.AttributeType.STRING },
      sortKey: { name: STATE_SORT_KEY, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: STATE_TTL_ATTRIBUTE,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      deletionProtection: true,
    });
  }

  /**
   * What a function needs to reach the table: `STATE_TABLE` (its name), as `STATE_TABLE_VARIABLES`
   * in lambdas/domain/lambda-environment.ts lists it.
   *
   * @returns environment variables
   */
  environment(): StackVariables<typeof STATE_TABLE_VARIABLES> {
    return { STATE_TABLE: this.table.tableName };
  }

  /**
   * Lets `grantee` read and write state items: `dynamodb:GetItem`, `dynamodb:PutItem`,
   * `dynamodb:UpdateItem`, `dynamodb:DeleteItem` and `dynamodb:Query` on the table (no Scan).
   * `TransactWriteItems` (the atomic remediation reservation) is authorized per item as these
   * actions. DeleteItem, each with a condition, releases a reservation whose Auto Scaling call
   * failed, frees an alert lease, resolves a firing alert and clears an idle mark; other records
   * expire through TTL.
   *
   * @param grantee - the principal to grant to
   * @returns the grant
   */
  grantReadWrite(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: [
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'dynamodb:DeleteItem',
        'dynamodb:Query',
      ],
      resourceArns: [this.table.tableArn],
    });
  }
}
