/**
 * One CloudWatch dashboard, one screen (24 columns × 4 rows of widgets): the money, the
 * pipeline, the budget and the money coming in. Widgets that split a metric by a dimension (refunds by source,
 * jobs by outcome and failure code, refusals by status and code, verification failures by
 * source) use SEARCH expressions, so a new failure code or refund source appears without
 * editing the dashboard. The same layout
 * is in infra/terraform/dashboard.tf and drawn in infra/README.md ("Dashboard").
 */
import { METRIC_NAMESPACE, metricName, metricValue } from './metrics';
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

export interface DashboardProps {
  readonly stage: string;
  readonly api: lambda.IFunction;
  readonly consumer: lambda.IFunction;
  readonly sweeper: lambda.IFunction;
  readonly queue: sqs.IQueue;
  /** The budget alerts' thresholds, drawn as lines on the budget widget. */
  readonly budgetAlertPercents: readonly number[];
}

const NS = METRIC_NAMESPACE;
const FIVE_MIN = Duration.minutes(5);

/** A SEARCH over the namespace: every dimension combination of `metric` under `keys`. */
const search = (metric: string, keys: string[], stat: string, label: string) =>
  new cloudwatch.MathExpression({
    expression: `SEARCH('{${NS},FunctionName,${keys.join(',')}} MetricName="${metric}"', '${stat}', 300)`,
    label,
    period: FIVE_MIN,
  });

const custom = (metric: string, fn: lambda.IFunction, statistic: string, label: string) =>
  new cloudwatch.Metric({
    namespace: NS,
    metricName: metric,
    dimensionsMap: { FunctionName: fn.functionName },
    statistic,
    period: FIVE_MIN,
    label,
  });

/** Adds the dashboard `atelier-<stage>`. */
export function addDashboard(scope: Construct, props: DashboardProps): cloudwatch.Dashboard {
  const { api, consumer, sweeper, queue } = props;
  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: `atelier-${props.stage}`,
    defaultInterval: Duration.hours(24),
  });
  const w = (title: string, left: cloudwatch.IMetric[], width = 6, extra: Partial<cloudwatch.GraphWidgetProps> = {}) =>
    new cloudwatch.GraphWidget({ title, left, width, height: 6, ...extra });

  // Row 1: money.
  dashboard.addWidgets(
    w('Credits refunded, by source', [search(metricName('refundedCredits'), ['RefundSource'], 'Sum', '')]),
    w('Refunds, by source', [search(metricName('refunds'), ['RefundSource'], 'Sum', '')]),
    w('Model cost booked (µ$), by call kind', [search(metricName('modelCallCostMicros'), ['CallKind'], 'Sum', '')]),
    w('402 / 429 refusals, replays, key conflicts', [
      search(metricName('refusals'), ['Status', 'Code'], 'Sum', ''),
      custom(metricName('replays'), api, 'Sum', 'replays'),
      custom(metricName('idempotencyConflicts'), api, 'Sum', 'key conflicts (409)'),
    ]),
  );
  // Row 2: the pipeline.
  dashboard.addWidgets(
    w('Jobs finished, by outcome and code', [search(metricName('jobsFinished'), ['Outcome', 'FailureCode'], 'Sum', '')]),
    w('Queue wait and submit → delivered (ms)', [
      custom(metricName('queueWait'), consumer, 'p50', 'queue wait p50'),
      custom(metricName('queueWait'), consumer, 'p95', 'queue wait p95'),
      custom(metricName('deliveryTime'), consumer, 'p50', 'delivered p50'),
      custom(metricName('deliveryTime'), consumer, 'p95', 'delivered p95'),
    ]),
    w('Oldest queued job (s)', [queue.metricApproximateAgeOfOldestMessage({ period: FIVE_MIN, statistic: 'Maximum' })], 6, {
      leftAnnotations: [{ value: 600, label: 'OldestQueuedJob alarm' }],
    }),
    w('Function errors', [
      api.metricErrors({ period: FIVE_MIN, statistic: 'Sum', label: 'api' }),
      consumer.metricErrors({ period: FIVE_MIN, statistic: 'Sum', label: 'consumer' }),
      sweeper.metricErrors({ period: FIVE_MIN, statistic: 'Sum', label: 'sweeper' }),
    ]),
  );
  // Row 3: the budget and the guards.
  dashboard.addWidgets(
    w(
      'Budget: share of the daily cap (%)',
      [
        custom(metricName('budgetUsedPercent'), consumer, 'Maximum', 'used + reserved'),
        custom(metricName('budgetSpentPercent'), consumer, 'Maximum', 'used'),
        custom(metricName('budgetReservedPercent'), consumer, 'Maximum', 'reserved'),
      ],
      12,
      {
        leftYAxis: { min: 0, max: 100 },
        leftAnnotations: props.budgetAlertPercents.map((pct) => ({ value: pct, label: `${pct}% alert` })),
      },
    ),
    w('Sweeper: stuck jobs, failed refunds', [
      custom(metricName('jobsStuck'), sweeper, 'Maximum', 'stuck'),
      custom(metricName('refundsFailed'), sweeper, 'Maximum', 'refunds failed'),
    ]),
    w('Guards: ledger rows changed, audit offenders', [
      search(metricName('ledgerRowsChanged'), ['EventName'], 'Sum', ''),
      custom(metricName('auditOffenders'), sweeper, 'Sum', 'audit offenders'),
    ]),
  );
  // Row 4: money in: purchases against what edits charged, revenue, reversals, and the store
  // data and push credentials refused.
  const payments = (valueKey: string, label: string) =>
    new cloudwatch.Metric({
      namespace: NS,
      metricName: metricName('paymentEvents'),
      dimensionsMap: { FunctionName: api.functionName, Outcome: metricValue(valueKey) },
      statistic: 'Sum',
      period: FIVE_MIN,
      label,
    });
  dashboard.addWidgets(
    w('Credits purchased (by pack) vs charged (by operation)', [
      search(metricName('purchasedCredits'), ['Pack'], 'Sum', ''),
      search(metricName('chargedCredits'), ['Operation'], 'Sum', ''),
    ]),
    w('Revenue (minor units), by pack and currency', [search(metricName('purchaseRevenue'), ['Pack', 'Currency'], 'Sum', '')]),
    w('Purchases reversed, signature failures', [
      payments('paymentReversed', 'reversed'),
      payments('paymentSignatureInvalid', 'signature invalid'),
    ]),
    // Each source's alarm has its own threshold (VERIFICATION_ALARMS); this shows which one
    // fired, and a slow run below them (store data refused, push credentials refused).
    w('Verification failures, by source', [search(metricName('verificationFailures'), ['Source'], 'Sum', '')]),
  );
  return dashboard;
}
