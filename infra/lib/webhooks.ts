/**
 * Signed webhooks (shared/src/domain/webhooks/, shared/src/services/webhooks.rs): the rights and the
 * alarm of the webhook outbox. The table itself comes from the code's schema like every
 * other (`webhooks`). Every function that ends a job or grants a purchase writes the event row
 * in that same transaction (PutItem); the sweeper delivers due events once a minute (Query on
 * the due index, GetItem/PutItem/UpdateItem for rounds, attempts and endpoint failure counts).
 */
import { metricName } from './metrics';
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';

/** The metric the delivery worker emits when it disables an endpoint (shared/src/adapters/metrics.rs). */
export const WEBHOOK_ENDPOINTS_DISABLED = metricName('webhookEndpointsDisabled');

export interface WebhookProps {
  readonly table: dynamodb.ITable;
  /** The due index's name (from the schema). */
  readonly dueIndex: string;
  readonly writers: lambda.IFunction[];
  readonly sweeper: lambda.IFunction;
  readonly namespace: string;
  /** Makes an alarm with the stack's notification action. */
  readonly alarm: (id: string, props: cloudwatch.AlarmProps) => cloudwatch.Alarm;
}

/** Grants the outbox rights and adds the disabled-endpoint alarm. */
export function addWebhooks(p: WebhookProps): void {
  for (const fn of p.writers) {
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['dynamodb:PutItem'], resources: [p.table.tableArn] }));
  }
  p.sweeper.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['dynamodb:Query', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
      resources: [p.table.tableArn, `${p.table.tableArn}/index/${p.dueIndex}`],
    }),
  );
  p.alarm('WebhookEndpointDisabled', {
    alarmDescription:
      'A webhook endpoint failed every delivery round for about three days and was disabled: its receiver gets no events. ' +
      'Look at `atelier-admin webhook list` and `webhook deliveries EVENT_ID` (status codes, errors); once the receiver is fixed, ' +
      '`webhook rotate ID` re-enables it and `webhook replay EVENT_ID` resends what it missed.',
    metric: new cloudwatch.Metric({
      namespace: p.namespace,
      metricName: WEBHOOK_ENDPOINTS_DISABLED,
      dimensionsMap: { FunctionName: p.sweeper.functionName },
      period: Duration.minutes(5),
      statistic: 'Sum',
    }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
}
