/**
 * Signed webhooks (shared/src/domain/webhooks/, shared/src/services/webhooks.rs): the rights and the
 * alarm of the webhook outbox. The table itself comes from the code's schema like every
 * other (`webhooks`). Every function that ends a job or grants a purchase writes the event row
 * in that same transaction (PutItem). The table's stream (KEYS_ONLY, filtered to new event rows)
 * invokes the sweeper, which fans out one message per (event, endpoint) onto the delivery queue;
 * the sweeper consumes that queue (ReportBatchItemFailures), one POST per message, and its
 * minute's round re-drives anything due and unsent (Query on the due index,
 * GetItem/PutItem/UpdateItem for attempts, delivery rows, slots and endpoint failure counts).
 */
import { metricName } from './metrics';
import type { Construct } from 'constructs';
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { allowSend, consume } from './queues';

/** The metric the delivery worker emits when it disables an endpoint (shared/src/adapters/metrics/). */
export const WEBHOOK_ENDPOINTS_DISABLED = metricName('webhookEndpointsDisabled');
/** The age of the oldest event the sweeper's round found still undelivered. */
export const WEBHOOK_OLDEST_UNDELIVERED_AGE = metricName('webhookOldestUndeliveredAge');
/** The oldest-undelivered age (seconds) that alarms: an hour, well past the first retries. */
export const WEBHOOK_OLDEST_ALARM_SECS = 3600;
/**
 * Most delivery batches at once (the queue's event source `MaximumConcurrency`). A POST is
 * held up to 15 s and one endpoint holds at most 4 at once (`ATELIER_WEBHOOK_ENDPOINT_CONCURRENCY`),
 * so one endpoint that hangs holds at most 4 sweeper instances and leaves 4 to every other
 * endpoint; at the old cap (the sweeper's reservation of 2) a hanging endpoint held them all
 * and healthy receivers waited 15 s per batch. Within `SWEEPER_RESERVED_CONCURRENCY` (10).
 */
export const WEBHOOK_DELIVERY_CONCURRENCY = 8;

export interface WebhookProps {
  /** Where the stream's mapping is made (the service construct). */
  readonly scope: Construct;
  readonly table: dynamodb.ITable;
  readonly sweeper: lambda.Function;
  /** The delivery queue. */
  readonly queue: sqs.IQueue;
  readonly namespace: string;
  /** Makes an alarm with the stack's notification action. */
  readonly alarm: (id: string, props: cloudwatch.AlarmProps) => cloudwatch.Alarm;
}

/** Grants the outbox rights and adds the disabled-endpoint alarm. */
export function addWebhooks(p: WebhookProps): void {
  // The outbox's item rights are in terraform/data-grants.json, with every table's.
  // The stream of new event rows (KEYS_ONLY: the fan-out needs the id, never the body).
  const cfnTable = p.table.node.defaultChild as dynamodb.CfnTable;
  cfnTable.streamSpecification = { streamViewType: dynamodb.StreamViewType.KEYS_ONLY };
  const streamArn = cfnTable.attrStreamArn;
  p.sweeper.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
      resources: [streamArn],
    }),
  );
  new lambda.CfnEventSourceMapping(p.scope, 'WebhookStreamToSweeper', {
    functionName: p.sweeper.functionName,
    eventSourceArn: streamArn,
    startingPosition: 'LATEST',
    batchSize: 100,
    maximumBatchingWindowInSeconds: 0,
    bisectBatchOnFunctionError: true,
    maximumRetryAttempts: 10,
    filterCriteria: {
      filters: [{ pattern: JSON.stringify({ eventName: ['INSERT'], dynamodb: { Keys: { hook_sk: { S: ['event'] } } } }) }],
    },
  });
  allowSend(p.sweeper, p.queue);
  consume(p.sweeper, 'WebhookQueueToSweeper', p.queue, { batchSize: 10, maxConcurrency: WEBHOOK_DELIVERY_CONCURRENCY });
  p.alarm('WebhookOldestUndelivered', {
    alarmDescription:
      `An event has waited over ${WEBHOOK_OLDEST_ALARM_SECS / 60} minutes for an endpoint: receivers are failing or deliveries are stuck. ` +
      'Look at WebhookAttempts by Endpoint and Outcome, the sweeper logs (webhook_attempt, webhooks_redriven) and the WebhookQueue dead-letter queue.',
    metric: new cloudwatch.Metric({
      namespace: p.namespace,
      metricName: WEBHOOK_OLDEST_UNDELIVERED_AGE,
      dimensionsMap: { FunctionName: p.sweeper.functionName },
      period: Duration.minutes(5),
      statistic: 'Maximum',
    }),
    threshold: WEBHOOK_OLDEST_ALARM_SECS,
    evaluationPeriods: 3,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
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
