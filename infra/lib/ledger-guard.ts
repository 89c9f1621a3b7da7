/**
 * The guards that watch the books from outside the money path, both run by the sweeper
 * (no fourth function: it already holds the ledger and accounts read rights):
 *
 * - the ledger tamper alarm: a KEYS_ONLY stream on the ledger table, mapped to the sweeper
 *   with a filter on `eventName` MODIFY/REMOVE (normal appends never invoke it); the sweeper
 *   logs `ledger_row_changed` with the row's key and emits `LedgerRowsChanged`, alarmed at 1;
 * - the daily audit: an EventBridge rule whose input is `{"task":"audit"}`; the sweeper runs
 *   the audit of `atelier-admin audit` in passes bounded by its timeout (continuing in a new
 *   asynchronous invocation of itself), logs `audit_offender`, emits `AuditOffenders`,
 *   alarmed at 1.
 *
 * Plus the alarm on the submit → delivered p95. Refusals (402/429) and idempotency conflicts
 * are deliberately not alarmed: see infra/README.md ("Alarms").
 */
import { METRIC_NAMESPACE, metricName } from './metrics';
import { Duration, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';

/** Metric names the guards emit (shared/src/adapters/metrics/). */
export const GUARD_METRICS = {
  namespace: METRIC_NAMESPACE,
  ledgerRowsChanged: metricName('ledgerRowsChanged'),
  auditOffenders: metricName('auditOffenders'),
  auditedAccounts: metricName('auditedAccounts'),
  deliveryTime: metricName('deliveryTime'),
} as const;

/** The daily audit's schedule (UTC) and the event the sweeper recognises. */
export const AUDIT_SCHEDULE = { hour: '3', minute: '17' } as const;
export const AUDIT_INPUT = { task: 'audit' } as const;

/** Stream records per sweeper invocation (a tamper is rare; a mass delete arrives in batches). */
export const LEDGER_STREAM_BATCH = 100;

/** Submit → delivered p95 above which users wait too long (the consumer's timeout is 5 min). */
export const DELIVERY_P95_MS = 300_000;

export interface LedgerGuardProps {
  readonly ledger: dynamodb.Table;
  /** The accounts, which the daily audit scans (a page at a time, every balance). */
  readonly accounts: dynamodb.ITable;
  readonly sweeper: lambda.Function;
  /** The consumer (it emits DeliveryTime). */
  readonly consumer: lambda.IFunction;
  /** Where alarms notify (the stack's alarm topic). */
  readonly alarmAction: cloudwatch.IAlarmAction;
}

export interface LedgerGuard {
  readonly mapping: lambda.CfnEventSourceMapping;
  readonly auditRule: events.Rule;
  readonly alarms: cloudwatch.Alarm[];
}

/** Adds the stream, its mapping, the daily audit rule, their IAM and their alarms. */
export function addLedgerGuard(scope: Construct, props: LedgerGuardProps): LedgerGuard {
  const { ledger, accounts, sweeper, consumer, alarmAction } = props;
  const cfnTable = ledger.node.defaultChild as dynamodb.CfnTable;
  // KEYS_ONLY: the alarm needs the row's key, never the amounts (nothing private leaves the table).
  cfnTable.streamSpecification = { streamViewType: dynamodb.StreamViewType.KEYS_ONLY };
  const streamArn = cfnTable.attrStreamArn;

  // A separate policy, not the role's default one: the function depends on its default
  // policy, and this one names the function (self-invocation), so it must not be in it.
  const policy = new iam.Policy(scope, 'SweeperGuardPolicy', {
    roles: [sweeper.role!],
    statements: [
      new iam.PolicyStatement({
        actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
        resources: [streamArn],
      }),
      new iam.PolicyStatement({ actions: ['dynamodb:ListStreams'], resources: ['*'] }),
      new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [sweeper.functionArn] }),
      // The daily audit reads every account: the one Scan any role may make.
      new iam.PolicyStatement({ actions: ['dynamodb:Scan'], resources: [accounts.tableArn] }),
    ],
  });

  const mapping = new lambda.CfnEventSourceMapping(scope, 'LedgerStreamToSweeper', {
    functionName: sweeper.functionName,
    eventSourceArn: streamArn,
    startingPosition: 'LATEST',
    batchSize: LEDGER_STREAM_BATCH,
    maximumBatchingWindowInSeconds: 0,
    bisectBatchOnFunctionError: true,
    maximumRetryAttempts: 10,
    filterCriteria: { filters: [{ pattern: JSON.stringify({ eventName: ['MODIFY', 'REMOVE'] }) }] },
  });
  mapping.node.addDependency(policy);
  Validations.of(policy).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'dynamodb:ListStreams has no resource-level permission (it lists stream ARNs only); the event source mapping needs it. ' +
      'The stream reads themselves are on the ledger stream ARN.',
  });

  const auditRule = new events.Rule(scope, 'AuditDaily', {
    description: 'Run the audit (every balance against its ledger) once a day',
    schedule: events.Schedule.cron({ ...AUDIT_SCHEDULE }),
    targets: [
      new targets.LambdaFunction(sweeper, {
        event: events.RuleTargetInput.fromObject(AUDIT_INPUT),
        retryAttempts: 2,
      }),
    ],
  });

  const sweeperMetric = (metricName: string, extra: Record<string, string> = {}) =>
    new cloudwatch.Metric({
      namespace: GUARD_METRICS.namespace,
      metricName,
      dimensionsMap: { FunctionName: sweeper.functionName, ...extra },
      period: Duration.minutes(1),
      statistic: 'Sum',
    });
  const atLeastOne = {
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  };
  const alarms = [
    // One alarm per event name, each on one metric: metric math would sum them in one alarm,
    // but the local cloud's CloudFormation refuses math alarms and both must deploy there.
    ...(['MODIFY', 'REMOVE'] as const).map(
      (eventName) =>
        new cloudwatch.Alarm(scope, eventName === 'MODIFY' ? 'LedgerRowModified' : 'LedgerRowRemoved', {
          alarmDescription:
            `A ledger row was ${eventName === 'MODIFY' ? 'modified' : 'removed'}: the ledger is append-only, so this is tampering or a bug outside the money path. ` +
            'Look at the sweeper logs for ledger_row_changed (user_id, ref, event_name) and at CloudTrail for who wrote to the ledger table; ' +
            'restore the row from point-in-time recovery, then run atelier-admin audit.',
          metric: sweeperMetric(GUARD_METRICS.ledgerRowsChanged, { EventName: eventName }),
          ...atLeastOne,
        }),
    ),
    new cloudwatch.Alarm(scope, 'AuditOffenders', {
      alarmDescription:
        "The daily audit found accounts whose balance is not the sum of their ledger (or is negative). Look at the sweeper logs for audit_offender " +
        '(user_id, balance, ledger_sum, problem) and run atelier-admin audit and atelier-admin user show USER; correct with atelier-admin grant, never by editing rows.',
      metric: sweeperMetric(GUARD_METRICS.auditOffenders).with({ period: Duration.hours(1) }),
      ...atLeastOne,
    }),
    new cloudwatch.Alarm(scope, 'DeliveryTimeP95', {
      alarmDescription:
        `The submit → delivered p95 was over ${DELIVERY_P95_MS / 60_000} minutes for 15 minutes: users wait. Look at QueueWait (consumer not keeping up: ` +
        'OldestQueuedJob, ConsumerThrottles) and ModelCallLatency by CallKind (a slow provider).',
      metric: new cloudwatch.Metric({
        namespace: GUARD_METRICS.namespace,
        metricName: GUARD_METRICS.deliveryTime,
        dimensionsMap: { FunctionName: consumer.functionName },
        period: Duration.minutes(5),
        statistic: 'p95',
      }),
      threshold: DELIVERY_P95_MS,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
  ];
  for (const a of alarms) a.addAlarmAction(alarmAction);
  return { mapping, auditRule, alarms };
}
