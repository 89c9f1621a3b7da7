/**
 * Metric names come from the code (infra/metrics.json, exported by `atelier-admin metrics`):
 * every alarm and dashboard widget on the Atelier namespace names a metric the code emits.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Match } from 'aws-cdk-lib/assertions';

import { REVERSALS_ALARM_PER_HOUR, VERIFICATION_ALARMS } from '../lib/atelier-service';
import { EMITTED_METRICS, METRIC_NAMESPACE, metricName, metricValue } from '../lib/metrics';
import { resourcesOfType, synth } from './helpers';

describe('metric names', () => {
  const s = synth('dev');

  it('every alarm on the Atelier namespace watches a metric the code emits', () => {
    const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm');
    const ours = alarms.filter(([, a]) => a.Properties?.Namespace === METRIC_NAMESPACE);
    assert.ok(ours.length >= 5, `only ${ours.length} alarms on ${METRIC_NAMESPACE}`);
    for (const [name, alarm] of ours) {
      const metric = alarm.Properties?.MetricName as string;
      assert.ok(EMITTED_METRICS.has(metric), `${name} watches ${metric}, which the code never emits`);
    }
  });

  it('every dashboard widget on the Atelier namespace shows a metric the code emits', () => {
    const [, board] = resourcesOfType(s.json, 'AWS::CloudWatch::Dashboard')[0]!;
    const body = JSON.stringify(board.Properties?.DashboardBody);
    const searched = [...body.matchAll(/MetricName=\\\\"(\w+)\\\\"/g)].map((m) => m[1]!);
    const listed = [...body.matchAll(/\[\\"Atelier\\",\\"(\w+)\\"/g)].map((m) => m[1]!);
    assert.ok(searched.length + listed.length >= 10, body.slice(0, 400));
    for (const metric of [...searched, ...listed]) {
      assert.ok(EMITTED_METRICS.has(metric), `the dashboard shows ${metric}, which the code never emits`);
    }
  });

  it('pages on a burst of purchase reversals, counted in an hour', () => {
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRIC_NAMESPACE,
      MetricName: 'PaymentEvents',
      Dimensions: Match.arrayWith([{ Name: 'Outcome', Value: 'reversed' }]),
      Period: 3600,
      Threshold: REVERSALS_ALARM_PER_HOUR,
    });
  });

  it('shows the money coming in: purchases against charges, revenue, reversals', () => {
    const body = JSON.stringify(resourcesOfType(s.json, 'AWS::CloudWatch::Dashboard')[0]![1].Properties!.DashboardBody);
    for (const metric of ['PurchasedCredits', 'ChargedCredits', 'PurchaseRevenue']) {
      assert.ok(body.includes(metric), `the dashboard does not show ${metric}`);
    }
    assert.ok(body.includes('reversed'), 'the dashboard does not show reversals');
  });

  it('pages when App Store data is refused and when a push service refuses our credentials, each on its function', () => {
    const alarms = resourcesOfType(s.json, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties!);
    const sources = ['app_store_transaction', 'app_store_notification', 'apns', 'fcm'];
    assert.deepEqual(
      VERIFICATION_ALARMS.map((v) => metricValue(v.source)),
      sources,
      'one alarm per source the code emits',
    );
    for (const v of VERIFICATION_ALARMS) {
      const a = alarms.find(
        (x) =>
          x.MetricName === metricName('verificationFailures') &&
          JSON.stringify(x.Dimensions).includes(`"Value":"${metricValue(v.source)}"`),
      );
      assert.ok(a, v.id);
      assert.equal(a.Namespace, METRIC_NAMESPACE);
      assert.deepEqual(
        a.Dimensions.map((d: { Name: string }) => d.Name),
        ['FunctionName', 'Source'],
      );
      assert.match(JSON.stringify(a.Dimensions), new RegExp(v.fn === 'api' ? 'Api' : 'Sweeper'));
      assert.equal(a.Statistic, 'Sum');
      assert.equal(a.Period, 300);
      assert.equal(a.Threshold, v.threshold);
      assert.equal(a.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    }
  });

  it('pages when Stripe signatures start failing and when the sweeper stops running', () => {
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRIC_NAMESPACE,
      MetricName: 'PaymentEvents',
      Dimensions: Match.arrayWith([{ Name: 'Outcome', Value: 'signature_invalid' }]),
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
  });
});
