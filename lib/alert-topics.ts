import { Aws } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import type { ALERT_TOPIC_VARIABLES, StackVariables } from '../lambdas/domain/lambda-environment';
import { EMAIL_PATTERN } from './constants';
import { PropsValidationError } from './props-validation-error';
import { stackKey } from './stack-key';
import { validatePattern } from './validate-props';

/** The four topics, by severity (docs/design.md §7). */
export const ALERT_SEVERITIES = ['critical', 'warning', 'info', 'reports'] as const;

/** One of {@link ALERT_SEVERITIES}. */
export type AlertSeverity = (typeof ALERT_SEVERITIES)[number];

/** E-mail addresses subscribed to each topic; SNS sends each a confirmation mail first. */
export interface AlertEmails {
  /** Addresses paged for critical alerts (broken hardware, remediation escalations). @default - none */
  readonly critical?: string[];
  /** Addresses told about warnings (waste, degraded health). @default - none */
  readonly warning?: string[];
  /** Addresses told about informational events (remediation done). @default - none */
  readonly info?: string[];
  /** Addresses receiving the finance reports. @default - none */
  readonly reports?: string[];
}

/** Props of {@link AlertTopics}. */
export interface AlertTopicsProps {
  /**
   * E-mail subscriptions per topic. Each address must look like `name@domain.tld`.
   * @default - no subscriptions (subscribe with filter policies outside this stack)
   */
  readonly alertEmails?: AlertEmails;
}

/**
 * The SNS topics `critical`, `warning`, `info` and `reports` (docs/design.md §7), encrypted with one
 * stack's customer-managed KMS key (`stackKey`, rotation on) and refusing publishers that do not use TLS
 * (`enforceSSL`, cdk-nag AwsSolutions-SNS3). The key policy keeps the account's IAM in charge
 * (default policy) and lets CloudWatch alarms of this account publish to the topics.
 *
 * @example
 * const topics = new AlertTopics(this, 'AlertTopics', { alertEmails: { critical: ['oncall@example.com'] } });
 * topics.grantPublishAlerts(myFunction);
 */
export class AlertTopics extends Construct {
  /** The key encrypting the four topics. */
  readonly key: kms.Key;
  /** Topic for critical alerts (page a human). */
  readonly critical: sns.Topic;
  /** Topic for warnings. */
  readonly warning: sns.Topic;
  /** Topic for informational messages (audit of remediation decisions). */
  readonly info: sns.Topic;
  /** Topic for finance reports. */
  readonly reports: sns.Topic;

  /** @throws {PropsValidationError} when an address in `alertEmails` is not an e-mail address */
  constructor(scope: Construct, id: string, props: AlertTopicsProps = {}) {
    super(scope, id);
    const emails = validateAlertEmails(props.alertEmails ?? {});

    this.key = stackKey(this);
    this.key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowCloudWatchAlarmsToPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
      }),
    );

    const topic = (severity: AlertSeverity, topicId: string): sns.Topic => {
      const t = new sns.Topic(this, topicId, {
        displayName: `gpu-sentinel ${severity}`,
        masterKey: this.key,
        enforceSSL: true,
      });
      for (const email of emails[severity] ?? [])
        t.addSubscription(new subscriptions.EmailSubscription(email));
      return t;
    };
    this.critical = topic('critical', 'CriticalTopic');
    this.warning = topic('warning', 'WarningTopic');
    this.info = topic('info', 'InfoTopic');
    this.reports = topic('reports', 'ReportsTopic');
  }

  /**
   * What a function that alerts needs: the `critical`, `warning` and `info` topic ARNs
   * (`TOPIC_CRITICAL_ARN`, `TOPIC_WARNING_ARN`, `TOPIC_INFO_ARN`), as `ALERT_TOPIC_VARIABLES` in
   * lambdas/domain/lambda-environment.ts lists them. Give it {@link grantPublishAlerts} too.
   *
   * @returns environment variables
   */
  alertEnvironment(): StackVariables<typeof ALERT_TOPIC_VARIABLES> {
    return {
      TOPIC_CRITICAL_ARN: this.critical.topicArn,
      TOPIC_WARNING_ARN: this.warning.topicArn,
      TOPIC_INFO_ARN: this.info.topicArn,
    };
  }

  /**
   * Lets `grantee` publish alerts: `sns:Publish` on the `critical`, `warning` and `info` topics,
   * and `kms:GenerateDataKey` + `kms:Decrypt` on their key (SNS encrypts the message with a data
   * key generated on the publisher's behalf).
   *
   * @param grantee - the principal to grant to
   * @returns the grant of `sns:Publish`
   */
  grantPublishAlerts(grantee: iam.IGrantable): iam.Grant {
    return this.grantPublishTo(grantee, [this.critical, this.warning, this.info]);
  }

  /**
   * Lets `grantee` publish finance reports: `sns:Publish` on the `reports` topic, and
   * `kms:GenerateDataKey` + `kms:Decrypt` on its key.
   *
   * @param grantee - the principal to grant to
   * @returns the grant of `sns:Publish`
   */
  grantPublishReports(grantee: iam.IGrantable): iam.Grant {
    return this.grantPublishTo(grantee, [this.reports]);
  }

  private grantPublishTo(grantee: iam.IGrantable, topics: sns.Topic[]): iam.Grant {
    const grant = iam.Grant.addToPrincipal({
      grantee,
      actions: ['sns:Publish'],
      resourceArns: topics.map((t) => t.topicArn),
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
      resourceArns: [this.key.keyArn],
    });
    return grant;
  }
}

function validateAlertEmails(emails: AlertEmails): AlertEmails {
  for (const [severity, list] of Object.entries(emails)) {
    if (!(ALERT_SEVERITIES as readonly string[]).includes(severity)) {
      throw new PropsValidationError('alertEmails', `keys among ${ALERT_SEVERITIES.join(', ')}`, severity);
    }
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      throw new PropsValidationError(`alertEmails.${severity}`, 'an array of e-mail addresses', list);
    }
    list.forEach((email: unknown, i) => {
      validatePattern(`alertEmails.${severity}[${i}]`, email as string, EMAIL_PATTERN, 'an e-mail address');
    });
  }
  return emails;
}
